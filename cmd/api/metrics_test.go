package main

import (
	"context"
	"net/http"
	"runtime"
	"testing"
	"time"

	"github.com/storytold/craft-releases/pkg/config"
	"github.com/storytold/craft-releases/pkg/redis"
	"github.com/storytold/craft-releases/pkg/redis/store"
	"github.com/storytold/craft-releases/pkg/release"
	"github.com/storytold/craft-releases/test/fakegithub"
	"github.com/storytold/craft-releases/test/redistest"
	"github.com/storytold/craft-releases/test/testkit"
)

// TestMetrics scrapes the standalone API after its first round: a series of
// each collector the binary wires (pkg/metrics's tests pin the rest of
// each), fed by the poller, the snapshot and the requests the test made, and
// none of split mode's.
func TestMetrics(t *testing.T) {
	t.Parallel()
	gh := fakegithub.New(t)
	gh.Publish("storytold/photocraft", fakegithub.NewRelease("storytold/photocraft", "v0.5.0"))
	gh.SetQuota(fakegithub.Quota{Limit: 5000, Remaining: 4321, Reset: time.Now().Add(time.Hour)})
	env := standaloneEnv(gh)
	// One round in the test's lifetime: an app fetched is not due for 45 s.
	env["CRAFT_APPS_RELEASE_POLL_INTERVAL_SECS"] = "60"
	p := start(t, env)
	metricsURL := p.private + "/metrics"
	testkit.Eventually(t, "the first round ended", func() bool {
		return testkit.Scrape(t, metricsURL)[`craft_poller_mode{mode="standalone"}`] == 1
	})
	_, body := testkit.Get(t, p.base+infoPath)
	photo := testkit.Decode(t, body).ReleaseInfo.Apps["photocraft"]
	if photo.AppLastFetched == nil {
		t.Fatalf("after the first round the body got %s, want photocraft fetched", body)
	}
	testkit.Get(t, p.base+"/v1/craft_apps/updates/photocraft/tauri/windows/x86_64/nsis") // no bundle: a 404
	testkit.Get(t, p.base+"/wp-login.php")

	got := testkit.Scrape(t, metricsURL)
	fetched := float64(photo.AppLastFetched.UnixNano()) / 1e9
	testkit.WantSamples(t, got, map[string]float64{
		`craft_build_info{binary="api",goversion="` + runtime.Version() + `",version="dev"}`: 1,
		`craft_poll_interval_seconds`:                                                                               60,
		`craft_poller_github_requests_total{app="photocraft",outcome="fetched"}`:                                    1,
		`craft_poller_github_quota_remaining`:                                                                       4321,
		`craft_poller_app_fetched_timestamp_seconds{app="photocraft"}`:                                              fetched,
		`craft_api_app_fetched_timestamp_seconds{app="photocraft"}`:                                                 fetched,
		`craft_api_renders_total`:                                                                                   3, // the empty one, then one per app fetched
		`craft_api_requests_total{code="200",route="/v1/craft_apps/release_info"}`:                                  1,
		`craft_api_requests_total{code="404",route="/v1/craft_apps/updates/:app/tauri/:target/:arch/:bundle_type"}`: 1,
		`craft_api_updates_total{app="photocraft",code="404",decision="none",feed="tauri"}`:                         1,
		`craft_api_requests_total{code="404",route="unmatched"}`:                                                    1,
	}, "craft_api_redis_connected", "craft_api_hydrations_total", "craft_api_invalidations_total") // split mode's only
}

// TestMetricsSplit scrapes an API pod that hydrates from Redis, ready once
// it loaded: the hydrator's series and the snapshot's, and no poller's.
func TestMetricsSplit(t *testing.T) {
	t.Parallel()
	rs := redistest.Start(t)
	client, err := redis.OpenURL(rs.URL())
	must(t, err)
	t.Cleanup(client.Close)
	at := time.Now().Add(-time.Minute).Truncate(time.Millisecond)
	rel := &release.Release{Tag: "v1.0.0", Version: "1.0.0", Name: "v1.0.0",
		HTMLURL: "https://github.com/storytold/photocraft/releases/tag/v1.0.0", Assets: []release.Asset{}}
	entry := release.Entry{FetchedAt: at, ETag: `"e1"`, Release: rel}
	if ok, err := store.New(client, "test", config.DefaultApps()).PutFetch(context.Background(), "photocraft", entry); err != nil || !ok {
		t.Fatalf("put fetch: written %v, err %v", ok, err)
	}

	p := start(t, map[string]string{"REDIS_URL": rs.URL(), "CRAFT_APPS_RELEASE_APPS": testApps})
	testkit.Eventually(t, "the first load from Redis", func() bool { return testkit.Status(p.base+"/readyz") == http.StatusOK })
	got := testkit.Scrape(t, p.private+"/metrics")
	testkit.WantSamples(t, got, map[string]float64{
		`craft_build_info{binary="api",goversion="` + runtime.Version() + `",version="dev"}`: 1,
		`craft_api_redis_connected`:                                 1,
		`craft_api_hydrations_total`:                                1,
		`craft_api_app_fetched_timestamp_seconds{app="photocraft"}`: float64(at.UnixNano()) / 1e9,
		`craft_api_apps_unfetched`:                                  1,
		`craft_api_renders_total`:                                   2,
	}, "craft_poller_") // it runs no poller
}
