package main

import (
	"math"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/storytold/craft-releases/pkg/redis/store"
	"github.com/storytold/craft-releases/test/fakegithub"
	"github.com/storytold/craft-releases/test/redistest"
	"github.com/storytold/craft-releases/test/testkit"
)

type sample struct {
	series string
	want   float64
}

func checkSamples(t *testing.T, got map[string]float64, want []sample) {
	t.Helper()
	for _, w := range want {
		if v, ok := got[w.series]; !ok || v != w.want {
			t.Errorf("%s: got %v (present %v), want %v", w.series, v, ok, w.want)
		}
	}
}

// fetchedMS is app's fetched_ms in Redis.
func fetchedMS(t testing.TB, rs *redistest.Server, app string) float64 {
	t.Helper()
	// An integer reply, which Do returns whole.
	reply := rs.MustDo("EVAL", "return tonumber(redis.call('HGET', KEYS[1], 'fetched_ms'))", "1", store.AppKey(app))
	ms, err := strconv.ParseInt(reply, 10, 64)
	if err != nil {
		t.Fatalf("fetched_ms of %s: %q: %v", app, reply, err)
	}
	return float64(ms)
}

// TestMetrics scrapes a coordinated poller after its first round.
func TestMetrics(t *testing.T) {
	t.Parallel()
	gh := fakegithub.New(t)
	gh.Publish("storytold/photocraft", fakegithub.NewRelease("storytold/photocraft", "v0.5.0"))
	reset := time.Now().Add(42 * time.Minute).Truncate(time.Second)
	gh.SetQuota(fakegithub.Quota{Limit: 5000, Remaining: 4321, Reset: reset})
	rs := redistest.Start(t)
	// The interval of 60 s makes one round in the test's lifetime.
	base, _, _ := startPoller(t, env(gh, rs.URL()))
	testkit.Eventually(t, "the first round ended", func() bool {
		return testkit.Scrape(t, base+"/metrics")[`craft_poller_mode{mode="coordinated"}`] == 1
	})

	got := testkit.Scrape(t, base+"/metrics")
	checkSamples(t, got, []sample{
		{`craft_build_info{binary="poller",goversion="` + runtime.Version() + `",version="dev"}`, 1},
		{`craft_poll_interval_seconds`, 60},
		{`craft_poller_github_requests_total{app="photocraft",outcome="fetched"}`, 1},
		{`craft_poller_github_requests_total{app="vectorcraft",outcome="fetched"}`, 1}, // a 404: no release
		{`craft_poller_github_requests_total{app="photocraft",outcome="failed"}`, 0},
		{`craft_poller_github_requests_total{app="vectorcraft",outcome="not_modified"}`, 0},
		{`craft_poller_github_requests_total{app="photocraft",outcome="rate_limited"}`, 0},
		{`craft_poller_github_quota_remaining`, 4321},
		{`craft_poller_github_quota_reset_timestamp_seconds`, float64(reset.Unix())},
		{`craft_poller_claims_total{result="won"}`, 2},
		{`craft_poller_claims_total{result="lost"}`, 0},
		{`craft_poller_writes_refused_total{kind="fetch"}`, 0},
		{`craft_poller_writes_refused_total{kind="not_modified"}`, 0},
		{`craft_poller_writes_refused_total{kind="failure"}`, 0},
		{`craft_poller_redis_errors_total{op="load"}`, 0},
		{`craft_poller_redis_errors_total{op="put_fetch"}`, 0},
		{`craft_poller_mode{mode="coordinated"}`, 1},
		{`craft_poller_mode{mode="standalone"}`, 0},
		{`craft_poller_mode{mode="uncoordinated"}`, 0},
		{`craft_poller_backoff_until_timestamp_seconds`, 0},
	})
	if got[`craft_poller_round_duration_seconds_count`] < 1 {
		t.Errorf("craft_poller_round_duration_seconds_count: got %v, want at least 1", got[`craft_poller_round_duration_seconds_count`])
	}
	// Redis keeps whole milliseconds; the poller knows the nanosecond.
	for _, app := range []string{"photocraft", "vectorcraft"} {
		series := `craft_poller_app_fetched_timestamp_seconds{app="` + app + `"}`
		ms := fetchedMS(t, rs, app)
		if v, ok := got[series]; !ok || math.Abs(v*1000-ms-0.5) > 0.501 {
			t.Errorf("%s: got %v (present %v), want fetched_ms %v in seconds", series, v, ok, ms)
		}
	}
	for series := range got {
		if strings.HasPrefix(series, "craft_api_") {
			t.Errorf("the poller serves %s, an API series", series)
		}
	}
}

// TestMetricsRedisDown scrapes a poller that cannot reach Redis: its rounds
// run standalone and every failed read is counted.
func TestMetricsRedisDown(t *testing.T) {
	t.Parallel()
	gh := fakegithub.New(t)
	gh.Publish("storytold/photocraft", fakegithub.NewRelease("storytold/photocraft", "v1.0.0"))
	base, _, _ := startPoller(t, env(gh, "redis://"+testkit.FreeAddr(t))) // nothing listens there
	testkit.Eventually(t, "a standalone round ended", func() bool {
		return testkit.Scrape(t, base+"/metrics")[`craft_poller_mode{mode="standalone"}`] == 1
	})
	got := testkit.Scrape(t, base+"/metrics")
	checkSamples(t, got, []sample{
		{`craft_poller_github_requests_total{app="photocraft",outcome="fetched"}`, 1},
		{`craft_poller_mode{mode="coordinated"}`, 0},
		{`craft_poller_claims_total{result="won"}`, 0},
		{`craft_poller_redis_errors_total{op="load_app"}`, 0},
	})
	// The start-up load and the first tick's.
	if n := got[`craft_poller_redis_errors_total{op="load"}`]; n < 2 {
		t.Errorf(`craft_poller_redis_errors_total{op="load"}: got %v, want at least 2`, n)
	}
}
