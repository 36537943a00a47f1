package store_test

import (
	"context"
	"testing"
	"time"

	"github.com/storytold/craft-releases/pkg/redis"
	"github.com/storytold/craft-releases/pkg/redis/store"
	"github.com/storytold/craft-releases/pkg/release"
	"github.com/storytold/craft-releases/pkg/schedule"
	"github.com/storytold/craft-releases/test/redistest"
	"github.com/storytold/craft-releases/test/testkit"
)

// TestOnACluster: every operation of a Store works on a Redis Cluster, by
// the script and by WATCH/MULTI/EXEC: each script and transaction touches one
// key, and the pipelines that read several keys (Load, Status) span slots,
// which rueidis splits.
func TestOnACluster(t *testing.T) {
	testkit.Integration(t)
	t.Parallel()
	c := redistest.StartCluster(t, 3, 0)
	for _, n := range c.Nodes {
		n.MustDo("ACL", "SETUSER", "noscript", "on", ">pw", "~*", "&*", "+@all", "-@scripting")
	}
	for _, tc := range []struct {
		name string
		url  string
		mode store.WriteMode
	}{
		{"script", c.URL(), store.ModeScript},
		{"watch", "redis://noscript:pw@" + c.URL()[len("redis://"):], store.ModeWatch},
	} {
		t.Run(tc.name, func(t *testing.T) {
			client, err := redis.OpenURL(tc.url)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(client.Close)
			s := store.New(client, "poller-a", []release.App{{Key: "photocraft", Repo: "storytold/photocraft"}})
			ctx := context.Background()
			now := time.Now().Truncate(time.Millisecond)
			apps := []string{tc.name + "-photocraft", tc.name + "-vectorcraft", tc.name + "-filmcraft", tc.name + "-pdfcraft", tc.name + "-wordcraft"}
			rel := &release.Release{Tag: "v1.0.0", Version: "1.0.0", Name: "v1.0.0",
				HTMLURL: "https://github.com/storytold/photocraft/releases/tag/v1.0.0", Assets: []release.Asset{}}
			for _, app := range apps {
				if ok, err := s.Claim(ctx, app, now, time.Minute); err != nil || !ok {
					t.Fatalf("claim %s: %v, %v", app, ok, err)
				}
				if ok, err := s.PutFetch(ctx, app, release.Entry{FetchedAt: now, ETag: `"e1"`, Release: rel}); err != nil || !ok {
					t.Fatalf("put fetch %s: %v, %v", app, ok, err)
				}
			}
			if ok, err := s.PutNotModified(ctx, apps[0], release.Entry{FetchedAt: now.Add(time.Second), ETag: `"e1"`}); err != nil || !ok {
				t.Errorf("put not modified: %v, %v", ok, err)
			}
			if _, err := s.PutFailure(ctx, apps[1], release.Entry{FailedAt: now.Add(time.Second)}); err != nil {
				t.Errorf("put failure: %v", err)
			}
			if ok, err := s.PutMeta(ctx, release.Bulletin{}, now); err != nil || !ok {
				t.Errorf("put meta: %v, %v", ok, err)
			}
			b := schedule.Backoff{Until: now.Add(time.Hour), Trouble: 1}
			if err := s.PutBackoff(ctx, b); err != nil {
				t.Errorf("put backoff: %v", err)
			}
			entries, got, err := s.Load(ctx, apps)
			if err != nil || len(entries) != len(apps) || !got.Until.Equal(b.Until) {
				t.Errorf("load: %d entries, backoff %v, %v; want %d and %v", len(entries), got, err, len(apps), b)
			}
			if _, _, err := s.Status(ctx, apps); err != nil {
				t.Errorf("status: %v", err)
			}
			if ok, err := s.ClearBackoff(ctx, got); err != nil || !ok {
				t.Errorf("clear backoff: %v, %v", ok, err)
			}
			if m := s.Mode(); m != tc.mode {
				t.Errorf("mode %v, want %v", m, tc.mode)
			}
			if err := s.PutBackoff(ctx, schedule.Backoff{}); err != nil {
				t.Errorf("put no backoff: %v", err)
			}
		})
	}
}
