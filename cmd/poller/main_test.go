package main

import (
	"context"
	"io"
	"math"
	"net/http"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/storytold/craft-releases/pkg/config"
	"github.com/storytold/craft-releases/pkg/redis/store"
	"github.com/storytold/craft-releases/test/fakegithub"
	"github.com/storytold/craft-releases/test/fakeredis"
	"github.com/storytold/craft-releases/test/redistest"
	"github.com/storytold/craft-releases/test/testkit"
)

func env(gh *fakegithub.Server, redisURL string) map[string]string {
	return map[string]string{
		"REDIS_URL":                              redisURL,
		"CRAFT_APPS_RELEASE_APPS":                "photocraft=PhotoCraft=storytold/photocraft,vectorcraft=VectorCraft=storytold/vectorcraft",
		"CRAFT_APPS_RELEASE_GITHUB_API_URL":      gh.URL(),
		"CRAFT_APPS_RELEASE_POLL_INTERVAL_SECS":  "60",
		"CRAFT_APPS_RELEASE_TICK_SECS":           "1",
		"CRAFT_APPS_RELEASE_STARTUP_JITTER_SECS": "0",
		"CRAFT_APPS_RELEASE_REQUEST_SPACING_MS":  "0",
	}
}

// startPoller runs the poller binary in-process until the test ends, and
// returns it with the base URL of its port.
func startPoller(t *testing.T, vars map[string]string) (string, *testkit.Process) {
	t.Helper()
	vars["HTTP_ADDR"] = testkit.FreeAddr(t)
	base := "http://" + vars["HTTP_ADDR"]
	return base, testkit.StartProcess(t, run, vars, base+"/healthz")
}

func ready(base string) func() bool {
	return func() bool { return testkit.Status(base+"/readyz") == http.StatusOK }
}

// TestPollerPublishesToRedisAndStatusShowsIt: a coordinated poller, ready
// after its start-up load, writes both apps' fetches to Redis under its
// hostname, `poller status` shows them, and /metrics serves a series of each
// collector the binary wires (pkg/metrics's tests pin the rest of each) and
// no API series.
func TestPollerPublishesToRedisAndStatusShowsIt(t *testing.T) {
	t.Parallel()
	gh := fakegithub.New(t)
	gh.Publish("storytold/photocraft", fakegithub.NewRelease("storytold/photocraft", "v0.5.0"))
	gh.SetQuota(fakegithub.Quota{Limit: 5000, Remaining: 4321, Reset: time.Now().Add(time.Hour)})
	rs := redistest.Start(t)
	vars := env(gh, rs.URL())
	// The interval of 60 s makes one round in the test's lifetime.
	base, p := startPoller(t, vars)
	testkit.Eventually(t, "readyz turns 200 after the start-up load", ready(base))
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
	if by := rs.MustDo("HGET", store.AppKey("photocraft"), "by"); by == "" {
		t.Errorf("by is empty, want the hostname")
	}

	table := mustCommand(t, vars, "status")
	for _, want := range []string{"APP", "photocraft", "v0.5.0", gh.ETag("storytold/photocraft"), "vectorcraft", "(no release)", "fleet backoff: none"} {
		if !strings.Contains(table, want) {
			t.Errorf("status output lacks %q:\n%s", want, table)
		}
	}
	if err := p.Stop(); err != nil {
		t.Errorf("run after cancel got %v, want nil", err)
	}
	if !strings.Contains(p.Logs.String(), `"mode":"coordinated"`) {
		t.Errorf("no coordinated round in the logs:\n%s", p.Logs)
	}
}

// TestPollerStartsWithRedisDownAndCarriesOnStandalone: with nothing
// listening at REDIS_URL the poller is ready after its failed start-up load
// (an outage, not a refusal), asks GitHub anyway in standalone rounds, and
// counts each failed load.
func TestPollerStartsWithRedisDownAndCarriesOnStandalone(t *testing.T) {
	t.Parallel()
	gh := fakegithub.New(t)
	gh.Publish("storytold/photocraft", fakegithub.NewRelease("storytold/photocraft", "v1.0.0"))
	base, p := startPoller(t, env(gh, "redis://"+testkit.FreeAddr(t)))
	testkit.Eventually(t, "readyz after the failed start-up load", ready(base))
	testkit.Eventually(t, "a standalone round ended", func() bool {
		return testkit.Scrape(t, base+"/metrics")[`craft_poller_mode{mode="standalone"}`] == 1
	})
	got := testkit.Scrape(t, base+"/metrics")
	testkit.WantSamples(t, got, map[string]float64{
		`craft_poller_github_requests_total{app="photocraft",outcome="fetched"}`: 1,
		`craft_poller_mode{mode="coordinated"}`:                                  0,
		`craft_poller_claims_total{result="won"}`:                                0,
	})
	// The start-up load and the first tick's.
	if n := got[`craft_poller_redis_errors_total{op="load"}`]; n < 2 {
		t.Errorf(`craft_poller_redis_errors_total{op="load"}: got %v, want at least 2`, n)
	}
	if n := strings.Count(p.Logs.String(), "redis unavailable"); n != 1 || strings.Contains(p.Logs.String(), "staying unready") {
		t.Errorf("got %d redis warnings, want exactly 1 within 10 minutes, and no refusal:\n%s", n, p.Logs)
	}
}

// TestPollerWithASilentRedis: against a Redis that shakes hands and then
// never answers, the start-up load and the first tick's each give up at the
// call timeout, the clock's measure included, so that GitHub is asked two
// timeouts after the start (not four): the poller's reads take the client's
// timeout (pkg/poller's TestSilentRedisCostsATickOneTimeout pins the rest).
func TestPollerWithASilentRedis(t *testing.T) {
	t.Parallel()
	const timeout = time.Second
	gh := fakegithub.New(t)
	gh.Publish("storytold/photocraft", fakegithub.NewRelease("storytold/photocraft", "v1.0.0"))
	vars := env(gh, fakeredis.StartSilent(t).URL()+"?write_timeout="+timeout.String())
	vars["CRAFT_APPS_RELEASE_TICK_SECS"] = "30"
	began := time.Now()
	startPoller(t, vars)
	testkit.Eventually(t, "GitHub is asked", func() bool { return gh.Count("storytold/photocraft") >= 1 })
	if took := time.Since(began); took >= 3*timeout {
		t.Errorf("GitHub asked %v after the start, want about two call timeouts (%v)", took, 2*timeout)
	}
}

// TestBadSettingsStopThePoller: the poller, and `poller migrate` alike, stop
// at start-up naming every wrong variable, the DSN check's (pkg/mysql's
// TestDSN) beside config's, and never quote the password; without
// REDIS_URL while coordinating the error names it.
func TestBadSettingsStopThePoller(t *testing.T) {
	t.Parallel()
	const pw = "s3cr3tpw"
	vars := map[string]string{"REDIS_URL": "redis://127.0.0.1:1", "MYSQL_POLLER_REPLICAS": "three",
		"MYSQL_DSN": "craft:" + pw + "/x@tcp(db:3306)"}
	for _, args := range [][]string{nil, {"migrate"}} {
		err := run(context.Background(), args, func(k string) string { return vars[k] }, io.Discard, io.Discard)
		for _, want := range []string{"MYSQL_DSN: does not parse as user:password@tcp(host:port)/database", "[redacted]",
			`MYSQL_POLLER_REPLICAS: "three" is not a whole number`} {
			if err == nil || !strings.Contains(err.Error(), want) {
				t.Errorf("poller %q: error %v, want it to contain %q", args, err, want)
			}
		}
		if err != nil && strings.Contains(err.Error(), "s3cr") {
			t.Errorf("poller %q: error %q holds the password", args, err)
		}
	}
	if err := run(context.Background(), nil, func(string) string { return "" }, io.Discard, io.Discard); err == nil || !strings.Contains(err.Error(), "REDIS_URL") {
		t.Errorf("run without REDIS_URL got %v, want an error naming REDIS_URL", err)
	}
}

func TestHelpListsEveryVariableAndCommand(t *testing.T) {
	t.Parallel()
	out := mustCommand(t, nil, "--help")
	for _, want := range append(config.Names("poller"), "status", "backoff clear", "at least 1005",
		"migrate", "notices", "renames", "rollout", "withdraw", "minimum", "title 200 characters") {
		if !strings.Contains(out, want) {
			t.Errorf("--help does not mention %q", want)
		}
	}
}
