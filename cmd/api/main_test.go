package main

import (
	"bytes"
	"compress/gzip"
	"context"
	"io"
	"net/http"
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/storytold/craft-releases/pkg/config"
	"github.com/storytold/craft-releases/test/fakegithub"
	"github.com/storytold/craft-releases/test/redistest"
	"github.com/storytold/craft-releases/test/testkit"
)

func TestMain(m *testing.M) {
	os.Exit(testkit.IntegrationMain(func() int { return redistest.Main(m.Run) }))
}

const infoPath = "/v1/craft_apps/release_info"

// process is one in-process run of the api binary.
type process struct {
	base    string // the public port
	private string // the metrics port
	logs    *testkit.Buffer
	cancel  func()       // cancels run, as SIGTERM does
	stop    func() error // cancels run and returns its error
}

// start runs the api with env on a free port and waits for /healthz.
func start(t testing.TB, env map[string]string) *process {
	t.Helper()
	addr := testkit.FreeAddr(t)
	env["HTTP_ADDR"] = addr
	maddr := testkit.FreeAddr(t)
	env["METRICS_ADDR"] = maddr
	logs := &testkit.Buffer{}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, nil, func(k string) string { return env[k] }, io.Discard, logs)
	}()
	var once sync.Once
	var runErr error
	p := &process{base: "http://" + addr, private: "http://" + maddr, logs: logs, cancel: cancel, stop: func() error {
		once.Do(func() { cancel(); runErr = <-done })
		return runErr
	}}
	t.Cleanup(func() { _ = p.stop() })
	testkit.Eventually(t, "healthz answers", func() bool {
		select {
		case err := <-done:
			done <- err // for stop, which the cleanup calls
			t.Fatalf("run returned early: %v\nlogs:\n%s", err, logs)
		default:
		}
		res, err := http.Get(p.base + "/healthz")
		if err != nil {
			return false
		}
		res.Body.Close()
		return res.StatusCode == http.StatusOK
	})
	return p
}

var testApps = "photocraft=PhotoCraft=storytold/photocraft, VectorCraft = VectorCraft = storytold/vectorcraft"

func standaloneEnv(gh *fakegithub.Server) map[string]string {
	return map[string]string{
		"CRAFT_APPS_RELEASE_APPS":                testApps,
		"CRAFT_APPS_RELEASE_GITHUB_API_URL":      gh.URL(),
		"CRAFT_APPS_RELEASE_POLL_INTERVAL_SECS":  "1",
		"CRAFT_APPS_RELEASE_TICK_SECS":           "1",
		"CRAFT_APPS_RELEASE_STARTUP_JITTER_SECS": "0",
		"CRAFT_APPS_RELEASE_REQUEST_SPACING_MS":  "0",
		"LOG_LEVEL":                              "debug",
	}
}

func allFetched(t testing.TB, p *process) func() bool {
	return func() bool {
		_, body := testkit.Get(t, p.base+infoPath)
		return testkit.Decode(t, body).ReleaseInfo.LastFetched != nil
	}
}

func TestStandaloneServesWhatGitHubHas(t *testing.T) {
	t.Parallel()
	gh := fakegithub.New(t)
	gh.Publish("storytold/photocraft", fakegithub.NewRelease("storytold/photocraft", "v0.5.0"))
	// vectorcraft has no release: a 404 is a fetch with no release.
	p := start(t, standaloneEnv(gh))

	testkit.Eventually(t, "every app was fetched", allFetched(t, p))
	res, body := testkit.Get(t, p.base+infoPath)
	if got, want := res.Header.Get("Cache-Control"), "public, max-age=60, stale-while-revalidate=30, stale-if-error=86400"; got != want {
		t.Errorf("Cache-Control got %q, want %q", got, want)
	}
	info := testkit.Decode(t, body)
	photo := info.ReleaseInfo.Apps["photocraft"]
	if photo.LatestRelease == nil || photo.LatestRelease.Tag != "v0.5.0" || photo.LatestRelease.Version != "0.5.0" {
		t.Fatalf("photocraft release got %+v, want v0.5.0", photo.LatestRelease)
	}
	if len(photo.LatestRelease.Assets) == 0 {
		t.Errorf("photocraft has no assets")
	}
	vector, ok := info.ReleaseInfo.Apps["vectorcraft"]
	if !ok || vector.Name != "VectorCraft" || vector.LatestRelease != nil || vector.AppLastFetched == nil {
		t.Errorf("vectorcraft got %+v (present %v), want fetched with no release", vector, ok)
	}

	// The gzip copy is the same document, and each representation revalidates.
	gres, gbody := testkit.Get(t, p.base+infoPath, "Accept-Encoding", "gzip")
	if gres.Header.Get("Content-Encoding") != "gzip" || gres.Header.Get("Vary") != "Accept-Encoding" {
		t.Fatalf("gzip headers got %v", gres.Header)
	}
	zr, err := gzip.NewReader(bytes.NewReader(gbody))
	if err != nil {
		t.Fatal(err)
	}
	plain, _ := io.ReadAll(zr)
	if testkit.Decode(t, plain).ReleaseInfo.Apps["photocraft"].LatestRelease.Tag != "v0.5.0" {
		t.Errorf("gzip body differs: %s", plain)
	}
	for _, c := range []struct{ name, etag, enc string }{
		{"plain", res.Header.Get("ETag"), ""},
		{"gzip", gres.Header.Get("ETag"), "gzip"},
	} {
		r, b := testkit.Get(t, p.base+infoPath, "If-None-Match", c.etag, "Accept-Encoding", c.enc)
		if r.StatusCode != http.StatusNotModified || len(b) != 0 {
			t.Errorf("%s revalidation got %d with %d bytes, want 304 and none", c.name, r.StatusCode, len(b))
		}
	}

	// The fake saw the revalidating requests of later rounds.
	testkit.Eventually(t, "a revalidation with the ETag", func() bool {
		for _, r := range gh.Requests() {
			if r.Repo == "storytold/photocraft" && r.Header.Get("If-None-Match") == gh.ETag("storytold/photocraft") {
				return true
			}
		}
		return false
	})
	if err := p.stop(); err != nil {
		t.Errorf("run after cancel got %v, want nil", err)
	}
}

func TestTokenIsSentButNeverLogged(t *testing.T) {
	t.Parallel()
	const token = "ghp_secretsecretsecret"
	gh := fakegithub.New(t)
	gh.Stick(fakegithub.AnyRepo, fakegithub.ServerError()) // failures are logged with their errors
	env := standaloneEnv(gh)
	env["CRAFT_APPS_RELEASE_GITHUB_TOKEN"] = "  " + token + " "
	p := start(t, env)
	testkit.Eventually(t, "both apps were asked", func() bool { return gh.Count(fakegithub.AnyRepo) >= 2 })
	if err := p.stop(); err != nil {
		t.Fatal(err)
	}
	if got := gh.Requests()[0].Header.Get("Authorization"); got != "Bearer "+token {
		t.Errorf("Authorization got %q, want the trimmed token", got)
	}
	if logs := p.logs.String(); strings.Contains(logs, token) || !strings.Contains(logs, "github request failed") {
		t.Errorf("logs leak the token or miss the failure:\n%s", logs)
	}
}

func TestNoTokenNoAuthorization(t *testing.T) {
	t.Parallel()
	gh := fakegithub.New(t)
	env := standaloneEnv(gh)
	env["CRAFT_APPS_RELEASE_GITHUB_TOKEN"] = "   "
	start(t, env)
	testkit.Eventually(t, "a request arrived", func() bool { return gh.Count(fakegithub.AnyRepo) >= 1 })
	if got := gh.Requests()[0].Header.Values("Authorization"); len(got) != 0 {
		t.Errorf("Authorization got %q, want no header", got)
	}
}

func TestColdPodIsNotCached(t *testing.T) {
	t.Parallel()
	gh := fakegithub.New(t)
	env := standaloneEnv(gh)
	env["CRAFT_APPS_RELEASE_POLLING_ENABLED"] = "false"
	p := start(t, env)
	res, body := testkit.Get(t, p.base+infoPath)
	if got := res.Header.Get("Cache-Control"); got != "no-store" {
		t.Errorf("Cache-Control got %q, want no-store", got)
	}
	info := testkit.Decode(t, body)
	if len(info.ReleaseInfo.Apps) != 2 || info.ReleaseInfo.LastFetched != nil {
		t.Errorf("cold body got %s, want both apps listed and last_fetched null", body)
	}
	if r, _ := testkit.Get(t, p.base+"/readyz"); r.StatusCode != http.StatusOK {
		t.Errorf("standalone readyz got %d, want 200 at once", r.StatusCode)
	}
	if n := gh.Count(fakegithub.AnyRepo); n != 0 {
		t.Errorf("polling disabled, yet GitHub was asked %d times", n)
	}
}

func TestBadEnvironmentStopsWithTheVariableName(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, key, value string
	}{
		{"tick not a number", "CRAFT_APPS_RELEASE_TICK_SECS", "abc"},
		{"bad app list", "CRAFT_APPS_RELEASE_APPS", "photocraft=PhotoCraft"},
		{"bad bool", "CRAFT_APPS_RELEASE_POLLING_ENABLED", "maybe"},
		{"bad log level", "LOG_LEVEL", "loud"},
		{"bad redis url", "REDIS_URL", "http://nope"},
		{"missing CA file", "REDIS_TLS_CA_FILE", "/nonexistent/ca.pem"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			env := map[string]string{tc.key: tc.value}
			err := run(context.Background(), nil, func(k string) string { return env[k] }, io.Discard, io.Discard)
			if err == nil || !strings.Contains(err.Error(), tc.key) {
				t.Errorf("run got %v, want an error naming %s", err, tc.key)
			}
		})
	}
}

func TestHelpListsEveryVariable(t *testing.T) {
	t.Parallel()
	var out bytes.Buffer
	if err := run(context.Background(), []string{"--help"}, func(string) string { return "" }, &out, io.Discard); err != nil {
		t.Fatal(err)
	}
	for _, name := range config.Names("api") {
		if !strings.Contains(out.String(), name) {
			t.Errorf("--help does not list %s", name)
		}
	}
	// The safe interval for the 13 built-in apps without a token.
	if !strings.Contains(out.String(), "For the 13 configured apps") || !strings.Contains(out.String(), "at least 1005") {
		t.Errorf("--help gives no safe interval for the configured apps:\n%s", out.String())
	}
}

func TestShutdownTurnsUnreadyWhileStillAnswering(t *testing.T) {
	t.Parallel()
	gh := fakegithub.New(t)
	env := standaloneEnv(gh)
	env["SHUTDOWN_TIMEOUT_SECS"] = "8"
	p := start(t, env)
	if r, _ := testkit.Get(t, p.base+"/readyz"); r.StatusCode != http.StatusOK {
		t.Fatalf("readyz before shutdown got %d, want 200", r.StatusCode)
	}
	p.cancel()
	// The cancellation reaches the gate from another goroutine: wait for
	// it, with every answer meanwhile an answer.
	testkit.Eventually(t, "readyz answers 503 once shutdown began", func() bool {
		res, err := http.Get(p.base + "/readyz")
		if err != nil {
			t.Fatalf("readyz after shutdown began: %v, want an answer", err)
		}
		res.Body.Close()
		return res.StatusCode == http.StatusServiceUnavailable
	})
	if r, _ := testkit.Get(t, p.base+infoPath); r.StatusCode != http.StatusOK {
		t.Errorf("the endpoint while draining got %d, want 200", r.StatusCode)
	}
	if err := p.stop(); err != nil {
		t.Errorf("run got %v, want nil", err)
	}
}

// TestMetricsPortApart: /metrics answers only on METRICS_ADDR, which serves
// the probes too but not the endpoint; the public port serves the endpoint
// and the probes, and nosniff everywhere.
func TestMetricsPortApart(t *testing.T) {
	t.Parallel()
	p := start(t, map[string]string{"CRAFT_APPS_RELEASE_POLLING_ENABLED": "false"})
	tests := []struct {
		url  string
		want int
	}{
		{p.base + infoPath, http.StatusOK},
		{p.base + "/healthz", http.StatusOK},
		{p.base + "/readyz", http.StatusOK},
		{p.base + "/metrics", http.StatusNotFound},
		{p.private + "/metrics", http.StatusOK},
		{p.private + "/healthz", http.StatusOK},
		{p.private + "/readyz", http.StatusOK},
		{p.private + infoPath, http.StatusNotFound},
	}
	for _, tt := range tests {
		res, _ := testkit.Get(t, tt.url)
		if res.StatusCode != tt.want || res.Header.Get("X-Content-Type-Options") != "nosniff" {
			t.Errorf("GET %s: %d, X-Content-Type-Options %q; want %d, nosniff", tt.url, res.StatusCode, res.Header.Get("X-Content-Type-Options"), tt.want)
		}
	}
}
