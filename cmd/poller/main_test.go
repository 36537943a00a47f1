package main

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/storytold/craft-releases/pkg/config"
	"github.com/storytold/craft-releases/pkg/redis/store"
	"github.com/storytold/craft-releases/test/fakegithub"
	"github.com/storytold/craft-releases/test/fakeredis"
	"github.com/storytold/craft-releases/test/redistest"
	"github.com/storytold/craft-releases/test/testkit"
)

func status200(url string) bool {
	res, err := http.Get(url)
	if err != nil {
		return false
	}
	res.Body.Close()
	return res.StatusCode == http.StatusOK
}

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

// startPoller runs the poller binary in-process until the test ends.
func startPoller(t *testing.T, vars map[string]string) (base string, logs *testkit.Buffer, stop func() error) {
	t.Helper()
	addr := testkit.FreeAddr(t)
	vars["HTTP_ADDR"] = addr
	logs = &testkit.Buffer{}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- run(ctx, nil, func(k string) string { return vars[k] }, io.Discard, logs) }()
	var once sync.Once
	var runErr error
	stop = func() error {
		once.Do(func() { cancel(); runErr = <-done })
		return runErr
	}
	t.Cleanup(func() { _ = stop() })
	base = "http://" + addr
	testkit.Eventually(t, "healthz answers", func() bool { return status200(base + "/healthz") })
	return base, logs, stop
}

func TestPollerPublishesToRedisAndStatusShowsIt(t *testing.T) {
	t.Parallel()
	gh := fakegithub.New(t)
	gh.Publish("storytold/photocraft", fakegithub.NewRelease("storytold/photocraft", "v0.5.0"))
	rs := redistest.Start(t)
	vars := env(gh, rs.URL())
	base, logs, stop := startPoller(t, vars)

	testkit.Eventually(t, "readyz turns 200 after the start-up load", func() bool { return status200(base + "/readyz") })
	// A claim makes the key before its fetch is written: wait for both
	// fetches.
	testkit.Eventually(t, "both apps' fetches are in Redis", func() bool {
		for _, app := range []string{"photocraft", "vectorcraft"} {
			if n, err := rs.Do("HEXISTS", store.AppKey(app), "fetched_ms"); err != nil || n != "1" {
				return false
			}
		}
		return true
	})
	if by := rs.MustDo("HGET", store.AppKey("photocraft"), "by"); by == "" {
		t.Errorf("by is empty, want the hostname")
	}

	table := mustCommand(t, vars, "status")
	for _, want := range []string{"APP", "photocraft", "v0.5.0", gh.ETag("storytold/photocraft"), "vectorcraft", "(no release)", "fleet backoff: none"} {
		if !strings.Contains(table, want) {
			t.Errorf("status output lacks %q:\n%s", want, table)
		}
	}

	if err := stop(); err != nil {
		t.Errorf("run after cancel got %v, want nil", err)
	}
	if !strings.Contains(logs.String(), `"mode":"coordinated"`) {
		t.Errorf("no coordinated round in the logs:\n%s", logs)
	}
}

func TestPollerStartsWithRedisDownAndCarriesOnStandalone(t *testing.T) {
	t.Parallel()
	gh := fakegithub.New(t)
	gh.Publish("storytold/photocraft", fakegithub.NewRelease("storytold/photocraft", "v1.0.0"))
	vars := env(gh, "redis://"+testkit.FreeAddr(t)) // nothing listens there
	base, logs, _ := startPoller(t, vars)
	testkit.Eventually(t, "readyz after the failed start-up load", func() bool { return status200(base + "/readyz") })
	testkit.Eventually(t, "GitHub is asked anyway", func() bool { return gh.Count("storytold/photocraft") >= 1 })
	testkit.Eventually(t, "a standalone round is logged", func() bool {
		return strings.Contains(logs.String(), `"mode":"standalone"`)
	})
	if n := strings.Count(logs.String(), "redis unavailable"); n != 1 {
		t.Errorf("got %d redis warnings, want exactly 1 within 10 minutes", n)
	}
}

// TestPollerWithASilentRedis: against a Redis that shakes hands and then
// never answers, the start-up load and the first tick's each give up at the
// call timeout, the clock's measure included, so that GitHub is asked two
// timeouts after the start (not four).
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
	took := time.Since(began)
	t.Logf("GitHub asked %v after the start, with a call timeout of %v", took, timeout)
	if took >= 3*timeout {
		t.Errorf("GitHub asked %v after the start, want about two call timeouts (%v)", took, 2*timeout)
	}
}

func TestPollerRefusesToStartWithoutRedisWhileCoordinating(t *testing.T) {
	t.Parallel()
	vars := map[string]string{}
	err := run(context.Background(), nil, func(k string) string { return vars[k] }, io.Discard, io.Discard)
	if err == nil || !strings.Contains(err.Error(), "REDIS_URL") {
		t.Fatalf("run got %v, want an error naming REDIS_URL", err)
	}
}

func TestHelpListsEveryVariableAndStatus(t *testing.T) {
	t.Parallel()
	var out bytes.Buffer
	if err := run(context.Background(), []string{"--help"}, func(string) string { return "" }, &out, io.Discard); err != nil {
		t.Fatal(err)
	}
	for _, name := range append(config.Names("poller"), "status", "backoff clear", "at least 1005") {
		if !strings.Contains(out.String(), name) {
			t.Errorf("--help does not list %s", name)
		}
	}
}
