package mysql_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/storytold/craft-releases/pkg/mysql"
	"github.com/storytold/craft-releases/pkg/redis"
	"github.com/storytold/craft-releases/pkg/redis/store"
	"github.com/storytold/craft-releases/test/fakeclock"
	"github.com/storytold/craft-releases/test/redistest"
)

// seed stores a realistic load: two renames of each kind, three
// announcements and two alerts live, and as many ended rows.
func seed(b *testing.B, db *mysql.DB) {
	b.Helper()
	created := noon.Add(-time.Hour)
	for i := range 2 {
		addRename(b, db, mysql.Rename{Kind: mysql.KindAppRename, OldName: fmt.Sprintf("Old%d", i), NewName: fmt.Sprintf("New%d", i),
			Description: "A new name for the same app.", RenamedAt: created}, created)
		addRename(b, db, mysql.Rename{Kind: mysql.KindRepoRename, OldName: fmt.Sprintf("storytold/old%d", i),
			NewName: fmt.Sprintf("storytold/new%d", i), EndsAt: noon.Add(-time.Minute)}, created)
		addRename(b, db, mysql.Rename{Kind: mysql.KindRepoRename, OldName: fmt.Sprintf("storytold/a%d", i),
			NewName: fmt.Sprintf("storytold/b%d", i)}, created)
	}
	for i := range 3 {
		addNotice(b, db, mysql.Notice{Kind: mysql.KindAnnouncement, Title: fmt.Sprintf("News %d", i),
			Body: "Something launchers show inline, a sentence or two long."}, created)
		addNotice(b, db, mysql.Notice{Kind: mysql.KindAnnouncement, Title: "old", EndsAt: noon.Add(-time.Minute)}, created)
	}
	for i := range 2 {
		addNotice(b, db, mysql.Notice{Kind: mysql.KindAlert, Title: fmt.Sprintf("Alert %d", i), Body: "Please update.",
			Link: "https://status.example.com/incidents/1"}, created)
	}
}

// BenchmarkLive is the MySQL side of one refresh: one query over the four
// tables.
func BenchmarkLive(b *testing.B) {
	db := migrated(b, nil)
	seed(b, db)
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if _, _, err := db.Live(ctx, noon); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkRefresh is one whole meta refresh of a poller: read MySQL, then
// the guarded write to Redis (the Lua script).
func BenchmarkRefresh(b *testing.B) {
	db := migrated(b, nil)
	seed(b, db)
	srv := redistest.Start(b)
	client, err := redis.OpenURL(srv.URL())
	must(b, err)
	b.Cleanup(client.Close)
	clock := fakeclock.New(noon)
	f, err := mysql.NewRefresher(db, store.New(client, "bench", nil), time.Minute, nil, clock)
	must(b, err)
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		// Each refresh a millisecond later, so that every write goes through.
		clock.Advance(time.Millisecond)
		if err := f.Refresh(ctx); err != nil {
			b.Fatal(err)
		}
	}
}
