package main

import (
	"context"
	"crypto/tls"
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

// TestHydratesOverTLSWithAPrivateCA: a pod reads a rediss:// Redis whose
// certificate a private CA signed when REDIS_TLS_CA_FILE names that CA, with
// client-side caching (an invalidation reaches it), and refuses the
// certificate without it, saying so in its log.
func TestHydratesOverTLSWithAPrivateCA(t *testing.T) {
	t.Parallel()
	ca := redistest.NewCA(t)
	rs := redistest.StartTLS(t, ca)
	o, err := redis.Parse(rs.URL())
	if err != nil {
		t.Fatal(err)
	}
	client := redis.Open(o.WithTLS(&tls.Config{RootCAs: ca.Pool}))
	t.Cleanup(client.Close)
	shared := store.New(client, "test", config.DefaultApps())
	put := func(app, tag string) { t.Helper(); putRelease(t, shared, app, tag) }
	put("photocraft", "v1.0.0")
	served := func(p *process, app, tag string) func() bool {
		return func() bool {
			_, body := testkit.Get(t, p.base+infoPath)
			info := testkit.Decode(t, body).ReleaseInfo.Apps[app]
			return info.LatestRelease != nil && info.LatestRelease.Tag == tag
		}
	}

	t.Run("with the CA", func(t *testing.T) {
		p := start(t, map[string]string{
			"REDIS_URL":               rs.URL(),
			"REDIS_TLS_CA_FILE":       ca.File,
			"CRAFT_APPS_RELEASE_APPS": testApps,
		})
		testkit.Eventually(t, "the first load over TLS", func() bool { r, _ := testkit.Get(t, p.base+"/readyz"); return r.StatusCode == http.StatusOK })
		testkit.Eventually(t, "photocraft served", served(p, "photocraft", "v1.0.0"))
		put("vectorcraft", "v2.0.0")
		testkit.Eventually(t, "vectorcraft served after its invalidation", served(p, "vectorcraft", "v2.0.0"))
		if got := testkit.Scrape(t, p.private+"/metrics")["craft_api_invalidations_total"]; got < 1 {
			t.Errorf("craft_api_invalidations_total = %v, want at least 1: client-side caching over TLS", got)
		}
	})
	t.Run("without the CA", func(t *testing.T) {
		p := start(t, map[string]string{
			"REDIS_URL":                       rs.URL(),
			"CRAFT_APPS_RELEASE_APPS":         testApps,
			"CRAFT_APPS_HYDRATE_TIMEOUT_SECS": "1",
		})
		testkit.Eventually(t, "the refused certificate in the log", func() bool {
			return strings.Contains(p.logs.String(), "certificate signed by unknown authority")
		})
		if served(p, "photocraft", "v1.0.0")() {
			t.Errorf("a pod that refused Redis's certificate serves what Redis holds")
		}
	})
}

// putRelease writes a fetch of app with a release tagged tag, now, as a
// poller does.
func putRelease(t testing.TB, s *store.Store, app, tag string) {
	t.Helper()
	rel := &release.Release{Tag: tag, Version: strings.TrimPrefix(tag, "v"), Name: tag,
		HTMLURL: "https://github.com/storytold/" + app + "/releases/tag/" + tag, Assets: []release.Asset{}}
	entry := release.Entry{FetchedAt: time.Now().Truncate(time.Millisecond), ETag: `"e1"`, Release: rel}
	if ok, err := s.PutFetch(context.Background(), app, entry); err != nil || !ok {
		t.Fatalf("put fetch %s: written %v, err %v", app, ok, err)
	}
}
