package mysql_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/storytold/craft-releases/pkg/mysql"
	"github.com/storytold/craft-releases/pkg/redis"
	"github.com/storytold/craft-releases/pkg/redis/hydrate"
	"github.com/storytold/craft-releases/pkg/redis/store"
	"github.com/storytold/craft-releases/pkg/release"
	"github.com/storytold/craft-releases/pkg/snapshot"
	"github.com/storytold/craft-releases/test/fakeclock"
	"github.com/storytold/craft-releases/test/mariadbtest"
	"github.com/storytold/craft-releases/test/redistest"
	"github.com/storytold/craft-releases/test/testkit"
)

var flowApps = []release.App{{Key: "pdfcraft", Name: "PdfCraft", Repo: "storytold/pdfcraft"}}

// startPod starts an API pod's side: a snapshot fed by a Hydrator, as
// cmd/api wires them.
func startPod(t testing.TB, redisURL string) *snapshot.Snapshot {
	t.Helper()
	snap := snapshot.New(flowApps, nil)
	o, err := redis.Parse(redisURL)
	must(t, err)
	h, err := hydrate.New(o, flowApps, snap, nil,
		hydrate.WithMeta(snap))
	must(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = h.Run(ctx)
	}()
	t.Cleanup(func() {
		cancel()
		<-done
	})
	return snap
}

// waitBody waits until the pod serves a body containing want.
func waitBody(t testing.TB, pod *snapshot.Snapshot, want string) {
	t.Helper()
	body := func() string { return string(pod.Current().Body()) }
	if !testkit.Within(20*time.Second, func() bool { return strings.Contains(body(), want) }) {
		t.Fatalf("the pod never served %s; it serves %s", want, body())
	}
}

// The lists in docs/wire.md's shape, as the pod must serve them.
const (
	wireRenames = `"app_renames":[{"old_name":"PdfCraft","old_name_lower":"pdfcraft","new_name":"DocuCraft","new_name_lower":"docucraft","description":"Same app, new name.","renamed_at":"2026-10-01T00:00:00Z"}],` +
		`"repo_renames":[{"old_name":"storytold/pdfcraft","new_name":"storytold/docucraft","renamed_at":"2026-10-01T00:00:00Z"}]`
	wireNotices = `"important_notices":{"announcements":[{"title":"Welcome, DocuCraft","body":"PdfCraft has a new name.","created_at":"2026-10-10T11:00:00Z"}],` +
		`"alerts":[{"title":"Maintenance tonight","body":"22:00 UTC, 10 minutes.","maybe_web_link":"https://status.example.com/1","created_at":"2026-10-10T11:00:00Z"}]}}`
	wireNoAlert = `"alerts":[]}}`
)

// TestRoundTrip follows the renames and notices from MySQL through a
// poller's Refresher and Redis to an API pod's JSON, then stops MySQL: the
// pod keeps serving the last meta, a pod started during the outage serves it
// too, nothing is lost, and the first refresh after MySQL is back publishes
// what changed.
func TestRoundTrip(t *testing.T) {
	mysqlSrv := mariadbtest.Start(t)
	db := migrated(t, mysqlSrv)
	created := noon.Add(-time.Hour)
	renamed := time.Date(2026, 10, 1, 0, 0, 0, 0, time.UTC)
	addRename(t, db, mysql.Rename{Kind: mysql.KindAppRename, OldName: "PdfCraft", NewName: "DocuCraft",
		Description: "Same app, new name.", RenamedAt: renamed}, created)
	addRename(t, db, mysql.Rename{Kind: mysql.KindRepoRename, OldName: "storytold/pdfcraft", NewName: "storytold/docucraft",
		RenamedAt: renamed}, created)
	addNotice(t, db, mysql.Notice{Kind: mysql.KindAnnouncement, Title: "Welcome, DocuCraft", Body: "PdfCraft has a new name."}, created)
	alert := addNotice(t, db, mysql.Notice{Kind: mysql.KindAlert, Title: "Maintenance tonight", Body: "22:00 UTC, 10 minutes.",
		Link: "https://status.example.com/1"}, created)
	addNotice(t, db, mysql.Notice{Kind: mysql.KindAlert, Title: "Not yet", StartsAt: noon.Add(time.Hour)}, created)

	redisSrv := redistest.Start(t)
	client, err := redis.OpenURL(redisSrv.URL())
	must(t, err)
	t.Cleanup(client.Close)
	st := store.New(client, "poller-a", nil)
	core, logs := observer.New(zapcore.DebugLevel)
	clock := fakeclock.New(noon)
	f, err := mysql.NewRefresher(db, st, time.Minute, zap.New(core), clock)
	must(t, err)
	ctx := context.Background()

	pod := startPod(t, redisSrv.URL())
	must(t, f.Refresh(ctx))
	waitBody(t, pod, wireRenames+","+wireNotices)

	// MySQL stops.
	mysqlSrv.Stop()
	for i := 1; i <= 3; i++ {
		clock.Set(noon.Add(time.Duration(i) * time.Minute))
		if err := f.Refresh(ctx); err == nil {
			t.Fatalf("refresh %d with MySQL stopped worked; want an error", i)
		}
	}
	if warns := logs.FilterMessage("mysql read failed, serving the last published meta").All(); len(warns) != 1 {
		t.Errorf("warnings during the outage: %d, want 1", len(warns))
	}
	c, err := client.Client(ctx)
	must(t, err)
	hash, err := c.Do(ctx, c.B().Hgetall().Key(store.MetaKey).Build()).AsStrMap()
	must(t, err)
	if _, readAt := store.DecodeMeta(hash); !readAt.Equal(noon) {
		t.Errorf("during the outage Redis holds the read of %v, want the last good one, %v", readAt, noon)
	}
	late := startPod(t, redisSrv.URL())
	waitBody(t, late, wireRenames+","+wireNotices)
	waitBody(t, pod, wireRenames+","+wireNotices)

	// MySQL is back with everything it held; the alert is ended.
	mysqlSrv.Restart(t)
	clock.Set(noon.Add(4 * time.Minute))
	if ended, err := db.EndNotice(ctx, mysql.KindAlert, alert.ID, clock.Now()); err != nil || !ended {
		t.Fatalf("end the alert after the restart: %v, %v", ended, err)
	}
	clock.Set(noon.Add(5 * time.Minute))
	must(t, f.Refresh(ctx))
	waitBody(t, pod, wireRenames+`,"important_notices":{"announcements":[{"title":"Welcome, DocuCraft"`)
	waitBody(t, pod, wireNoAlert)
	waitBody(t, late, wireNoAlert)
	if back := logs.FilterMessage("mysql is back").All(); len(back) != 1 {
		t.Errorf("recovery lines: %d, want 1", len(back))
	}
}
