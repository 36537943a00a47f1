package main

import (
	"math"
	"runtime"
	"strconv"
	"testing"
	"time"

	"github.com/storytold/craft-releases/pkg/redis/store"
	"github.com/storytold/craft-releases/test/fakegithub"
	"github.com/storytold/craft-releases/test/redistest"
	"github.com/storytold/craft-releases/test/testkit"
)

// TestMetrics scrapes a coordinated poller after its first round: a series
// of each collector the binary wires (pkg/metrics's tests pin the rest of
// each), and no API series.
func TestMetrics(t *testing.T) {
	t.Parallel()
	gh := fakegithub.New(t)
	gh.Publish("storytold/photocraft", fakegithub.NewRelease("storytold/photocraft", "v0.5.0"))
	gh.SetQuota(fakegithub.Quota{Limit: 5000, Remaining: 4321, Reset: time.Now().Add(time.Hour)})
	rs := redistest.Start(t)
	// The interval of 60 s makes one round in the test's lifetime.
	base, _ := startPoller(t, env(gh, rs.URL()))
	testkit.Eventually(t, "the first round ended", func() bool {
		return testkit.Scrape(t, base+"/metrics")[`craft_poller_mode{mode="coordinated"}`] == 1
	})

	got := testkit.Scrape(t, base+"/metrics")
	testkit.WantSamples(t, got, map[string]float64{
		`craft_build_info{binary="poller",goversion="` + runtime.Version() + `",version="dev"}`: 1,
		`craft_poll_interval_seconds`:                                            60,
		`craft_poller_github_requests_total{app="photocraft",outcome="fetched"}`: 1,
		`craft_poller_github_quota_remaining`:                                    4321,
		`craft_poller_claims_total{result="won"}`:                                2,
		`craft_poller_redis_errors_total{op="put_fetch"}`:                        0,
	}, "craft_api_") // and no API series
	// Redis keeps whole milliseconds; the poller knows the nanosecond.
	for _, app := range []string{"photocraft", "vectorcraft"} {
		series := `craft_poller_app_fetched_timestamp_seconds{app="` + app + `"}`
		// An integer reply, which Do returns whole.
		reply := rs.MustDo("EVAL", "return tonumber(redis.call('HGET', KEYS[1], 'fetched_ms'))", "1", store.AppKey(app))
		ms, err := strconv.ParseFloat(reply, 64)
		if err != nil {
			t.Fatalf("fetched_ms of %s: %q: %v", app, reply, err)
		}
		if v, ok := got[series]; !ok || math.Abs(v*1000-ms-0.5) > 0.501 {
			t.Errorf("%s: got %v (present %v), want fetched_ms %v in seconds", series, v, ok, ms)
		}
	}
}
