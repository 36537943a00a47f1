package main

import (
	"context"
	"net/http"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/storytold/craft-releases/pkg/config"
	"github.com/storytold/craft-releases/pkg/redis"
	"github.com/storytold/craft-releases/pkg/redis/store"
	"github.com/storytold/craft-releases/pkg/release"
	"github.com/storytold/craft-releases/pkg/routes"
	"github.com/storytold/craft-releases/test/fakegithub"
	"github.com/storytold/craft-releases/test/redistest"
	"github.com/storytold/craft-releases/test/testkit"
)

// unixSeconds is t as the metrics give a time.
func unixSeconds(t *release.Time) float64 {
	if t == nil {
		return 0
	}
	return float64(t.UnixNano()) / 1e9
}

// TestMetrics scrapes the standalone API after its first round and checks
// the poller's series, the snapshot's and the requests the test made.
func TestMetrics(t *testing.T) {
	t.Parallel()
	gh := fakegithub.New(t)
	gh.Publish("storytold/photocraft", fakegithub.NewRelease("storytold/photocraft", "v0.5.0"))
	reset := time.Now().Add(42 * time.Minute).Truncate(time.Second)
	gh.SetQuota(fakegithub.Quota{Limit: 5000, Remaining: 4321, Reset: reset})
	env := standaloneEnv(gh)
	// One round in the test's lifetime: an app fetched is not due for 45 s.
	env["CRAFT_APPS_RELEASE_POLL_INTERVAL_SECS"] = "60"
	p := start(t, env)
	metricsURL := p.private + "/metrics"
	testkit.Eventually(t, "the first round ended", func() bool {
		return testkit.Scrape(t, metricsURL)[`craft_poller_mode{mode="standalone"}`] == 1
	})

	// Requests the test makes, and their counts by route and code.
	const ri = infoPath
	_, body := testkit.Get(t, p.base+ri)
	info := testkit.Decode(t, body)
	res, _ := testkit.Get(t, p.base+ri, "Accept-Encoding", "gzip")
	testkit.Get(t, p.base+ri, "If-None-Match", res.Header.Get("ETag"), "Accept-Encoding", "gzip")
	req, err := http.NewRequest(http.MethodHead, p.base+ri, nil)
	if err != nil {
		t.Fatal(err)
	}
	if res, err := http.DefaultClient.Do(req); err != nil {
		t.Fatal(err)
	} else {
		res.Body.Close()
	}
	if res, err := http.Post(p.base+ri, "text/plain", nil); err != nil {
		t.Fatal(err)
	} else {
		res.Body.Close()
	}
	testkit.Get(t, p.base+ri+"/photocraft")
	testkit.Get(t, p.base+"/")
	testkit.Get(t, p.base+"/v1/craft_apps/updates/photocraft/tauri/windows/x86_64/nsis") // no bundle: a 404
	if res, _ := testkit.Get(t, p.base+ri+"/x"); res.StatusCode != http.StatusNotFound {
		t.Fatalf("GET %s/x: %d, want 404", ri, res.StatusCode)
	}
	randomPaths := []string{"/wp-login.php", "/v1/craft_apps/x", "/.env", "/nope/" + strconv.FormatInt(time.Now().UnixNano(), 36)}
	for _, path := range randomPaths {
		if res, _ := testkit.Get(t, p.base+path); res.StatusCode != http.StatusNotFound {
			t.Fatalf("GET %s: %d, want 404", path, res.StatusCode)
		}
	}

	got := testkit.Scrape(t, metricsURL)
	photo, vector := info.ReleaseInfo.Apps["photocraft"], info.ReleaseInfo.Apps["vectorcraft"]
	if photo.AppLastFetched == nil || vector.AppLastFetched == nil || info.ReleaseInfo.LastFetched == nil {
		t.Fatalf("after the first round the body got %s, want every app fetched", body)
	}
	tests := []struct {
		series string
		want   float64
	}{
		{`craft_build_info{binary="api",goversion="` + runtime.Version() + `",version="dev"}`, 1},
		{`craft_poll_interval_seconds`, 60},

		{`craft_poller_github_requests_total{app="photocraft",outcome="fetched"}`, 1},
		{`craft_poller_github_requests_total{app="vectorcraft",outcome="fetched"}`, 1}, // a 404: no release
		{`craft_poller_github_requests_total{app="photocraft",outcome="not_modified"}`, 0},
		{`craft_poller_github_requests_total{app="photocraft",outcome="failed"}`, 0},
		{`craft_poller_github_requests_total{app="vectorcraft",outcome="rate_limited"}`, 0},
		{`craft_poller_github_quota_remaining`, 4321},
		{`craft_poller_github_quota_reset_timestamp_seconds`, float64(reset.Unix())},
		{`craft_poller_mode{mode="standalone"}`, 1},
		{`craft_poller_mode{mode="coordinated"}`, 0},
		{`craft_poller_mode{mode="uncoordinated"}`, 0},
		{`craft_poller_backoff_until_timestamp_seconds`, 0},
		{`craft_poller_app_fetched_timestamp_seconds{app="photocraft"}`, unixSeconds(photo.AppLastFetched)},
		{`craft_poller_app_fetched_timestamp_seconds{app="vectorcraft"}`, unixSeconds(vector.AppLastFetched)},

		{`craft_api_app_fetched_timestamp_seconds{app="photocraft"}`, unixSeconds(photo.AppLastFetched)},
		{`craft_api_app_fetched_timestamp_seconds{app="vectorcraft"}`, unixSeconds(vector.AppLastFetched)},
		{`craft_api_last_fetched_timestamp_seconds`, unixSeconds(info.ReleaseInfo.LastFetched)},
		{`craft_api_renders_total`, 3}, // the empty one, then one per app fetched

		{`craft_api_requests_total{code="200",route="/v1/craft_apps/release_info"}`, 3}, // plain, gzip, HEAD
		{`craft_api_requests_total{code="304",route="/v1/craft_apps/release_info"}`, 1},
		{`craft_api_requests_total{code="405",route="/v1/craft_apps/release_info"}`, 1},
		{`craft_api_request_duration_seconds_count{route="/v1/craft_apps/release_info"}`, 5},
		{`craft_api_requests_total{code="200",route="/v1/craft_apps/release_info/:app"}`, 1},
		{`craft_api_requests_total{code="404",route="/v1/craft_apps/release_info/:app"}`, 1}, // an unknown app
		{`craft_api_requests_total{code="200",route="/"}`, 1},
		{`craft_api_request_duration_seconds_count{route="/v1/craft_apps/download/:app"}`, 0},
		{`craft_api_requests_total{code="404",route="/v1/craft_apps/updates/:app/tauri/:target/:arch/:bundle_type"}`, 1},
		{`craft_api_updates_total{app="photocraft",code="404",feed="tauri"}`, 1},
		{`craft_api_requests_total{code="404",route="unmatched"}`, float64(len(randomPaths))},
		{`craft_api_request_duration_seconds_count{route="unmatched"}`, float64(len(randomPaths))},
	}
	for _, tt := range tests {
		if v, ok := got[tt.series]; !ok || v != tt.want {
			t.Errorf("%s: got %v (present %v), want %v", tt.series, v, ok, tt.want)
		}
	}
	if got[`craft_poller_round_duration_seconds_count`] < 1 {
		t.Errorf("craft_poller_round_duration_seconds_count: got %v, want at least 1", got[`craft_poller_round_duration_seconds_count`])
	}

	// Label values come from the app list and the registered routes only:
	// the random paths made no series of their own.
	registered := map[string]bool{ri: true, ri + "/:app": true, "/v1/craft_apps/download/:app": true, "/": true, "/openapi.json": true,
		"/healthz": true, "/readyz": true, "/metrics": true, "unmatched": true,
		routes.TauriPath: true, routes.TauriAnyPath: true, routes.TauriManifestPath: true, routes.AppImagePath: true,
		routes.SquirrelMacPath: true, routes.SquirrelWindowsPath: true, routes.SquirrelWindowsArchPath: true, routes.VelopackPath: true, routes.ElectronPath: true}
	apps := map[string]bool{"photocraft": true, "vectorcraft": true}
	for series := range got {
		if v, ok := label(series, "route"); ok && !registered[v] {
			t.Errorf("series %s: route %q is not a registered route", series, v)
		}
		if v, ok := label(series, "app"); ok && !apps[v] {
			t.Errorf("series %s: app %q is not a configured app", series, v)
		}
	}
	for _, absent := range []string{"craft_api_redis_connected", "craft_api_hydrations_total", "craft_api_invalidations_total"} {
		if _, ok := got[absent]; ok {
			t.Errorf("%s is served by a standalone pod, want it only in split mode", absent)
		}
	}
}

// TestMetricsSplit scrapes an API pod that hydrates from Redis: the
// hydrator's series, and the snapshot's as Redis changes.
func TestMetricsSplit(t *testing.T) {
	t.Parallel()
	rs := redistest.Start(t)
	client, err := redis.OpenURL(rs.URL())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(client.Close)
	shared := store.New(client, "test", config.DefaultApps())
	put := func(app string, at time.Time) {
		t.Helper()
		rel := &release.Release{Tag: "v1.0.0", Version: "1.0.0", Name: "v1.0.0",
			HTMLURL: "https://github.com/storytold/" + app + "/releases/tag/v1.0.0", Assets: []release.Asset{}}
		if ok, err := shared.PutFetch(context.Background(), app, release.Entry{FetchedAt: at, ETag: `"e1"`, Release: rel}); err != nil || !ok {
			t.Fatalf("put fetch %s: written %v, err %v", app, ok, err)
		}
	}
	photoAt := time.Now().Add(-time.Minute).Truncate(time.Millisecond)
	put("photocraft", photoAt)

	p := start(t, map[string]string{"REDIS_URL": rs.URL(), "CRAFT_APPS_RELEASE_APPS": testApps})
	metricsURL := p.private + "/metrics"
	testkit.Eventually(t, "the first load from Redis", func() bool { r, _ := testkit.Get(t, p.base+"/readyz"); return r.StatusCode == http.StatusOK })
	got := testkit.Scrape(t, metricsURL)
	for _, tt := range []struct {
		series string
		want   float64
	}{
		{`craft_build_info{binary="api",goversion="` + runtime.Version() + `",version="dev"}`, 1},
		{`craft_api_redis_connected`, 1},
		{`craft_api_hydrations_total`, 1},
		{`craft_api_app_fetched_timestamp_seconds{app="photocraft"}`, float64(photoAt.UnixNano()) / 1e9},
		{`craft_api_apps_unfetched`, 1},
		{`craft_api_renders_total`, 2},
	} {
		if v, ok := got[tt.series]; !ok || v != tt.want {
			t.Errorf("%s: got %v (present %v), want %v", tt.series, v, ok, tt.want)
		}
	}
	// Never fetched has no time, rather than 0 (data 56 years old).
	for _, series := range []string{`craft_api_app_fetched_timestamp_seconds{app="vectorcraft"}`, `craft_api_last_fetched_timestamp_seconds`} {
		if v, ok := got[series]; ok {
			t.Errorf("%s: got %v, want no series while never fetched", series, v)
		}
	}
	for series := range got {
		if strings.HasPrefix(series, "craft_poller_") {
			t.Errorf("a split pod serves %s, but runs no poller", series)
		}
	}

	// Redis pushes an invalidation; the pod re-reads and re-renders.
	vectorAt := photoAt.Add(time.Second)
	put("vectorcraft", vectorAt)
	testkit.Eventually(t, "vectorcraft is hydrated", func() bool {
		return testkit.Scrape(t, metricsURL)[`craft_api_app_fetched_timestamp_seconds{app="vectorcraft"}`] == float64(vectorAt.UnixNano())/1e9
	})
	got = testkit.Scrape(t, metricsURL)
	if v := got[`craft_api_invalidations_total`]; v < 1 {
		t.Errorf("craft_api_invalidations_total: got %v, want at least 1", v)
	}
	if v := got[`craft_api_hydrations_total`]; v < 2 {
		t.Errorf("craft_api_hydrations_total: got %v, want at least 2", v)
	}
	if v, want := got[`craft_api_last_fetched_timestamp_seconds`], float64(photoAt.UnixNano())/1e9; v != want {
		t.Errorf("craft_api_last_fetched_timestamp_seconds: got %v, want the oldest fetch %v", v, want)
	}
}

// label returns the value of the label name in series, as scrape keys it.
func label(series, name string) (string, bool) {
	for _, sep := range []string{"{", ","} {
		if _, v, ok := strings.Cut(series, sep+name+`="`); ok {
			v, _, _ = strings.Cut(v, `"`)
			return v, true
		}
	}
	return "", false
}
