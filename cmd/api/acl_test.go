package main

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/storytold/craft-releases/pkg/config"
	"github.com/storytold/craft-releases/pkg/redis"
	"github.com/storytold/craft-releases/pkg/redis/store"
	"github.com/storytold/craft-releases/pkg/release"
	"github.com/storytold/craft-releases/test/redistest"
	"github.com/storytold/craft-releases/test/testkit"
)

// TestAPIAsItsLeastPrivilegeUser runs a pod as the user of store.APIACL
// (docs/operations.md): it loads every app and the meta hash with
// client-side caching, follows an invalidation, and Redis denies it nothing
// (its ACL LOG stays empty), so a new command the pod sends fails here. The
// user itself cannot write a release entry, by any command.
func TestAPIAsItsLeastPrivilegeUser(t *testing.T) {
	t.Parallel()
	rs := redistest.Start(t)
	rs.MustDo(store.SetUser("craft-api", "api-secret", store.APIACL)...)
	apiURL := "redis://craft-api:api-secret@" + rs.Addr
	admin, err := redis.OpenURL(rs.URL())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(admin.Close)
	shared := store.New(admin, "test", config.DefaultApps())
	ctx := context.Background()
	put := func(app, tag string) { t.Helper(); putRelease(t, shared, app, tag) }
	put("photocraft", "v1.0.0")
	notice := release.Bulletin{Notices: release.Notices{Alerts: []release.Alert{{Title: "Hello from the meta hash"}}}}
	if ok, err := shared.PutMeta(ctx, notice, time.Now()); err != nil || !ok {
		t.Fatalf("put meta: written %v, err %v", ok, err)
	}

	p := start(t, map[string]string{"REDIS_URL": apiURL, "CRAFT_APPS_RELEASE_APPS": testApps})
	testkit.Eventually(t, "the first load", func() bool { r, _ := testkit.Get(t, p.base+"/readyz"); return r.StatusCode == http.StatusOK })
	_, body := testkit.Get(t, p.base+infoPath)
	if !strings.Contains(string(body), `"v1.0.0"`) || !strings.Contains(string(body), "Hello from the meta hash") {
		t.Errorf("the pod serves, as its least-privilege user:\n%s", body)
	}
	put("vectorcraft", "v2.0.0")
	testkit.Eventually(t, "vectorcraft after its invalidation", func() bool {
		_, body := testkit.Get(t, p.base+infoPath)
		return strings.Contains(string(body), `"v2.0.0"`)
	})
	if got := testkit.Scrape(t, p.private+"/metrics")["craft_api_invalidations_total"]; got < 1 {
		t.Errorf("craft_api_invalidations_total = %v, want at least 1: client-side caching as the API's user", got)
	}
	if denied := rs.Denied(); len(denied) > 0 {
		t.Errorf("Redis denied the API's user (store.APIACL lacks a right):\n%s", strings.Join(denied, "\n"))
	}

	// The API's user writes nothing: not with a write command, not through
	// a script, not even with a right to one, since its keys are read-only.
	conn, err := redis.OpenURL(apiURL)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(conn.Close)
	c, err := conn.Client(ctx)
	if err != nil {
		t.Fatal(err)
	}
	key := store.AppKey("photocraft")
	for _, cmd := range [][]string{
		{"HSET", key, "fetched_ms", "1"},
		{"DEL", key},
		{"EVAL", "return redis.call('HSET', KEYS[1], 'v', '2')", "1", key},
		{"PEXPIRE", key, "1"},
		{"FLUSHALL"},
	} {
		err := c.Do(ctx, c.B().Arbitrary(cmd...).Build()).Error()
		if err == nil || !strings.HasPrefix(err.Error(), "NOPERM") {
			t.Errorf("%v as the API's user: %v, want NOPERM", cmd, err)
		}
	}
	rs.MustDo("ACL", "SETUSER", "craft-api", "+hset")
	if err := c.Do(ctx, c.B().Arbitrary("HSET", key, "fetched_ms", "1").Build()).Error(); err == nil || !strings.HasPrefix(err.Error(), "NOPERM") {
		t.Errorf("HSET with the command granted: %v, want NOPERM for the read-only key", err)
	}
}
