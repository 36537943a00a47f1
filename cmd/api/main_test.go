package main

import (
	"context"
	"io"
	"net/http"
	"os"
	"strings"
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
	*testkit.Process
	base    string // the public port
	private string // the metrics port
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// start runs the api with env on free ports and waits for /healthz.
func start(t testing.TB, env map[string]string) *process {
	t.Helper()
	env["HTTP_ADDR"], env["METRICS_ADDR"] = testkit.FreeAddr(t), testkit.FreeAddr(t)
	p := &process{base: "http://" + env["HTTP_ADDR"], private: "http://" + env["METRICS_ADDR"]}
	p.Process = testkit.StartProcess(t, run, env, p.base+"/healthz")
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

// TestStandaloneServesWhatGitHubHas: the standalone path, from GitHub's
// answers, asked with the trimmed token, to the endpoint; the token is in no
// log line, failures included; cancelling run stops it cleanly.
func TestStandaloneServesWhatGitHubHas(t *testing.T) {
	t.Parallel()
	const token = "ghp_secretsecretsecret"
	gh := fakegithub.New(t)
	gh.Publish("storytold/photocraft", fakegithub.NewRelease("storytold/photocraft", "v0.5.0"))
	// vectorcraft has no release: a 404 is a fetch with no release.
	env := standaloneEnv(gh)
	env["CRAFT_APPS_RELEASE_GITHUB_TOKEN"] = "  " + token + " "
	p := start(t, env)

	testkit.Eventually(t, "every app was fetched", allFetched(t, p))
	_, body := testkit.Get(t, p.base+infoPath)
	photo := testkit.Decode(t, body).ReleaseInfo.Apps["photocraft"]
	if photo.LatestRelease.Tag != "v0.5.0" || photo.LatestRelease.Version != "0.5.0" || len(photo.LatestRelease.Assets) == 0 {
		t.Errorf("photocraft release got %+v, want v0.5.0 with its assets", photo.LatestRelease)
	}
	gh.Stick(fakegithub.AnyRepo, fakegithub.ServerError()) // a failure is logged with its error
	testkit.Eventually(t, "a failure is logged", func() bool {
		return strings.Contains(p.Logs.String(), "github request failed")
	})
	if err := p.Stop(); err != nil {
		t.Errorf("run after cancel got %v, want nil", err)
	}
	if got := gh.Requests()[0].Header.Get("Authorization"); got != "Bearer "+token {
		t.Errorf("Authorization got %q, want the trimmed token", got)
	}
	if strings.Contains(p.Logs.String(), token) {
		t.Errorf("logs leak the token:\n%s", p.Logs)
	}
}

// TestPortsWithPollingOff: with polling off the pod is ready at once and
// serves the cold answer without asking GitHub; /metrics answers only on
// METRICS_ADDR, which serves the probes too but not the endpoint.
func TestPortsWithPollingOff(t *testing.T) {
	t.Parallel()
	gh := fakegithub.New(t)
	env := standaloneEnv(gh)
	env["CRAFT_APPS_RELEASE_POLLING_ENABLED"] = "false"
	p := start(t, env)
	for _, tt := range []struct {
		url  string
		want int
	}{
		{p.base + infoPath, http.StatusOK},
		{p.base + "/readyz", http.StatusOK},
		{p.base + "/metrics", http.StatusNotFound},
		{p.private + "/metrics", http.StatusOK},
		{p.private + "/healthz", http.StatusOK},
		{p.private + "/readyz", http.StatusOK},
		{p.private + infoPath, http.StatusNotFound},
	} {
		if got := testkit.Status(tt.url); got != tt.want {
			t.Errorf("GET %s: %d, want %d", tt.url, got, tt.want)
		}
	}
	if _, body := testkit.Get(t, p.base+infoPath); testkit.Decode(t, body).ReleaseInfo.LastFetched != nil {
		t.Errorf("cold body got %s, want last_fetched null", body)
	}
	if n := gh.Count(fakegithub.AnyRepo); n != 0 {
		t.Errorf("polling disabled, yet GitHub was asked %d times", n)
	}
}

func TestBadEnvironmentStopsWithTheVariableNames(t *testing.T) {
	t.Parallel()
	env := map[string]string{"CRAFT_APPS_RELEASE_TICK_SECS": "abc", "REDIS_TLS_CA_FILE": "/nonexistent/ca.pem"}
	err := run(context.Background(), nil, func(k string) string { return env[k] }, io.Discard, io.Discard)
	for name := range env {
		if err == nil || !strings.Contains(err.Error(), name) {
			t.Errorf("run got %v, want an error naming %s", err, name)
		}
	}
}

func TestHelpListsEveryVariable(t *testing.T) {
	t.Parallel()
	var out strings.Builder
	must(t, run(context.Background(), []string{"--help"}, func(string) string { return "" }, &out, io.Discard))
	// With the safe interval for the 13 built-in apps without a token.
	for _, want := range append(config.Names("api"), "For the 13 configured apps", "at least 1005") {
		if !strings.Contains(out.String(), want) {
			t.Errorf("--help does not list %s", want)
		}
	}
}
