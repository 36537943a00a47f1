package config_test

import (
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap/zapcore"

	"github.com/storytold/craft-releases/pkg/config"
	"github.com/storytold/craft-releases/pkg/redis"
	"github.com/storytold/craft-releases/pkg/release"
	"github.com/storytold/craft-releases/pkg/schedule"
)

// Secrets used throughout: no error, printed form or log line may hold them.
const (
	token    = "ghp_t0ken5ecret"
	password = "hunter2pw"
	redisURL = "redis://user:" + password + "@127.0.0.1:6379/0"
)

// lookup returns a getenv over vars.
func lookup(vars map[string]string) func(string) string {
	return func(name string) string { return vars[name] }
}

// with returns a copy of vars with the pairs name, value, … added unless vars
// already sets name.
func with(vars map[string]string, pairs ...string) map[string]string {
	out := make(map[string]string, len(vars)+len(pairs)/2)
	for i := 0; i+1 < len(pairs); i += 2 {
		out[pairs[i]] = pairs[i+1]
	}
	for k, v := range vars {
		out[k] = v
	}
	return out
}

// loaded is what both loaders share, so one table covers both binaries.
type loaded struct {
	shared   config.Shared
	polling  config.Polling
	warnings []string
	err      error
}

// binaries runs a case through LoadAPI and through LoadPoller. The poller
// gets a REDIS_URL unless the case sets one, since it refuses to start
// without Redis while coordination is on.
var binaries = []struct {
	name string
	load func(vars map[string]string) loaded
}{
	{"api", func(vars map[string]string) loaded {
		a, w, err := config.LoadAPI(lookup(vars))
		return loaded{a.Shared, a.Polling, w, err}
	}},
	{"poller", func(vars map[string]string) loaded {
		p, w, err := config.LoadPoller(lookup(with(vars, "REDIS_URL", "redis://127.0.0.1:6379")), acceptDSN)
		return loaded{p.Shared, p.Polling, w, err}
	}},
}

func defaultShared() config.Shared {
	return config.Shared{
		Apps:      config.DefaultApps(),
		LogLevel:  zapcore.InfoLevel,
		LogFormat: "json",
	}
}

// withRedis sets s.Redis.Options as REDIS_URL s.Redis.URL parses, with no
// TLS files.
func withRedis(t testing.TB, s *config.Shared) {
	t.Helper()
	s.Redis.Options = redis.Options{}
	if s.Redis.Configured() {
		o, err := redis.Parse(s.Redis.URL.Reveal())
		if err != nil {
			t.Fatal(err)
		}
		s.Redis.Options = o
	}
}

func defaultPolling() config.Polling {
	return config.Polling{
		GitHubAPIURL:        "https://api.github.com/",
		Enabled:             true,
		CoordinationEnabled: true,
		PollInterval:        1800 * time.Second,
		MaxBackoff:          14400 * time.Second,
		StartupJitter:       30 * time.Second,
		Tick:                30 * time.Second,
		RequestSpacing:      time.Second,
	}
}

func defaultMySQL() config.MySQL {
	return config.MySQL{
		MaxConns:     4,
		MaxLifetime:  600 * time.Second,
		QueryTimeout: 5 * time.Second,
		Replicas:     3,
		Refresh:      60 * time.Second,
	}
}

func TestLoadAPIDefaults(t *testing.T) {
	got, warnings, err := config.LoadAPI(lookup(nil))
	if err != nil {
		t.Fatalf("LoadAPI(empty environment): %v", err)
	}
	want := config.API{
		Shared:          defaultShared(),
		Polling:         defaultPolling(),
		HTTPAddr:        ":8080",
		MetricsAddr:     ":9090",
		MaxConnections:  1024,
		HydrateTimeout:  10 * time.Second,
		ShutdownTimeout: 15 * time.Second,
		Cloudflare:      config.Cloudflare{APIURL: "https://api.cloudflare.com/client/v4/"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("LoadAPI(empty environment):\n got %+v\nwant %+v", got, want)
	}
	if len(warnings) != 0 {
		t.Errorf("LoadAPI(empty environment) warnings = %q, want none", warnings)
	}
	if !got.Standalone() {
		t.Errorf("Standalone() = false, want true with no REDIS_URL")
	}
}

func TestLoadPollerDefaults(t *testing.T) {
	got, warnings, err := config.LoadPoller(lookup(map[string]string{"REDIS_URL": "redis://127.0.0.1:6379"}), acceptDSN)
	if err != nil {
		t.Fatalf("LoadPoller(only REDIS_URL): %v", err)
	}
	shared := defaultShared()
	shared.Redis.URL = "redis://127.0.0.1:6379"
	want := config.Poller{
		Shared:          shared,
		Polling:         defaultPolling(),
		HTTPAddr:        ":9090",
		ShutdownTimeout: 15 * time.Second,
		MySQL:           defaultMySQL(),
		Cloudflare:      config.Cloudflare{APIURL: "https://api.cloudflare.com/client/v4/"},
	}
	withRedis(t, &want.Shared)
	if !reflect.DeepEqual(got, want) {
		t.Errorf("LoadPoller(only REDIS_URL):\n got %+v\nwant %+v", got, want)
	}
	if len(warnings) != 0 {
		t.Errorf("LoadPoller(only REDIS_URL) warnings = %q, want none", warnings)
	}
}

// TestLoadGood covers a good value of every variable both binaries read.
// want edits the defaults; blank values take the default.
func TestLoadGood(t *testing.T) {
	tests := []struct {
		name string
		vars map[string]string
		want func(*config.Shared, *config.Polling)
	}{
		{"blank values take the default", map[string]string{
			"CRAFT_APPS_RELEASE_APPS": " ", "CRAFT_APPS_RELEASE_GITHUB_API_URL": "\t", "LOG_LEVEL": " ", "LOG_FORMAT": "",
			"CRAFT_APPS_RELEASE_POLLING_ENABLED": " ", "CRAFT_APPS_RELEASE_COORDINATION_ENABLED": " ",
			"CRAFT_APPS_RELEASE_POLL_INTERVAL_SECS": " ", "CRAFT_APPS_RELEASE_MAX_BACKOFF_SECS": " ",
			"CRAFT_APPS_RELEASE_STARTUP_JITTER_SECS": " ", "CRAFT_APPS_RELEASE_TICK_SECS": "\n",
			"CRAFT_APPS_RELEASE_REQUEST_SPACING_MS": " ",
		}, func(*config.Shared, *config.Polling) {}},
		{"redis url with password", map[string]string{"REDIS_URL": redisURL},
			func(s *config.Shared, _ *config.Polling) { s.Redis.URL = redisURL }},
		{"redis url trimmed", map[string]string{"REDIS_URL": "  redis://127.0.0.1:6379/2 \n"},
			func(s *config.Shared, _ *config.Polling) { s.Redis.URL = "redis://127.0.0.1:6379/2" }},
		{"apps", map[string]string{"CRAFT_APPS_RELEASE_APPS": "Alpha=Alpha App=org/alpha, beta = Beta = org/beta "},
			func(s *config.Shared, _ *config.Polling) {
				s.Apps = []release.App{{Key: "alpha", Name: "Alpha App", Repo: "org/alpha"}, {Key: "beta", Name: "Beta", Repo: "org/beta"}}
			}},
		{"prerelease apps", map[string]string{"CRAFT_APPS_RELEASE_APPS": "alpha=Alpha=org/alpha,beta=Beta=org/beta",
			"CRAFT_APPS_RELEASE_PRERELEASE_APPS": " Beta "},
			func(s *config.Shared, _ *config.Polling) {
				s.Apps = []release.App{{Key: "alpha", Name: "Alpha", Repo: "org/alpha"}, {Key: "beta", Name: "Beta", Repo: "org/beta", Prereleases: true}}
			}},
		{"prerelease apps blank", map[string]string{"CRAFT_APPS_RELEASE_PRERELEASE_APPS": " "},
			func(*config.Shared, *config.Polling) {}},
		{"tag prefixes", map[string]string{"CRAFT_APPS_RELEASE_APPS": "alpha=Alpha=org/alpha,beta=Beta=org/beta",
			"CRAFT_APPS_RELEASE_PRERELEASE_APPS": "beta", "CRAFT_APPS_RELEASE_TAG_PREFIXES": " Beta = beta-v "},
			func(s *config.Shared, _ *config.Polling) {
				s.Apps = []release.App{{Key: "alpha", Name: "Alpha", Repo: "org/alpha"},
					{Key: "beta", Name: "Beta", Repo: "org/beta", Prereleases: true, TagPrefix: "beta-v"}}
			}},
		{"tag prefixes blank", map[string]string{"CRAFT_APPS_RELEASE_TAG_PREFIXES": " "},
			func(*config.Shared, *config.Polling) {}},
		{"api url without slash", map[string]string{"CRAFT_APPS_RELEASE_GITHUB_API_URL": "http://127.0.0.1:8080"},
			func(_ *config.Shared, p *config.Polling) { p.GitHubAPIURL = "http://127.0.0.1:8080/" }},
		{"enterprise api url", map[string]string{"CRAFT_APPS_RELEASE_GITHUB_API_URL": "https://ghe.example.com/api/v3"},
			func(_ *config.Shared, p *config.Polling) { p.GitHubAPIURL = "https://ghe.example.com/api/v3/" }},
		{"github without slash", map[string]string{"CRAFT_APPS_RELEASE_GITHUB_API_URL": "https://api.github.com"},
			func(*config.Shared, *config.Polling) {}},
		{"log level error in capitals", map[string]string{"LOG_LEVEL": "ERROR"},
			func(s *config.Shared, _ *config.Polling) { s.LogLevel = zapcore.ErrorLevel }},
		{"log format console", map[string]string{"LOG_FORMAT": "console"},
			func(s *config.Shared, _ *config.Polling) { s.LogFormat = "console" }},
		{"log format json in capitals", map[string]string{"LOG_FORMAT": "JSON"},
			func(*config.Shared, *config.Polling) {}},
		{"polling disabled", map[string]string{"CRAFT_APPS_RELEASE_POLLING_ENABLED": "false"},
			func(_ *config.Shared, p *config.Polling) { p.Enabled = false }},
		{"coordination disabled", map[string]string{"CRAFT_APPS_RELEASE_COORDINATION_ENABLED": "false"},
			func(_ *config.Shared, p *config.Polling) { p.CoordinationEnabled = false }},
		{"token trimmed, interval 120", map[string]string{"CRAFT_APPS_RELEASE_GITHUB_TOKEN": "  " + token + "\n"},
			func(_ *config.Shared, p *config.Polling) { p.GitHubToken, p.PollInterval = token, 120*time.Second }},
		{"blank token is no token", map[string]string{"CRAFT_APPS_RELEASE_GITHUB_TOKEN": " \t "},
			func(*config.Shared, *config.Polling) {}},
		{"interval at the minimum without token", map[string]string{"CRAFT_APPS_RELEASE_POLL_INTERVAL_SECS": "300"},
			func(_ *config.Shared, p *config.Polling) { p.PollInterval = 300 * time.Second }},
		{"interval at the minimum with token", map[string]string{"CRAFT_APPS_RELEASE_POLL_INTERVAL_SECS": "60", "CRAFT_APPS_RELEASE_GITHUB_TOKEN": token},
			func(_ *config.Shared, p *config.Polling) { p.GitHubToken, p.PollInterval = token, 60*time.Second }},
		{"short interval on another api", map[string]string{"CRAFT_APPS_RELEASE_POLL_INTERVAL_SECS": "1", "CRAFT_APPS_RELEASE_GITHUB_API_URL": "http://127.0.0.1:9999/"},
			func(_ *config.Shared, p *config.Polling) {
				p.GitHubAPIURL, p.PollInterval = "http://127.0.0.1:9999/", time.Second
			}},
		{"interval with spaces", map[string]string{"CRAFT_APPS_RELEASE_POLL_INTERVAL_SECS": " 450 "},
			func(_ *config.Shared, p *config.Polling) { p.PollInterval = 450 * time.Second }},
		{"max backoff", map[string]string{"CRAFT_APPS_RELEASE_MAX_BACKOFF_SECS": "3600"},
			func(_ *config.Shared, p *config.Polling) { p.MaxBackoff = time.Hour }},
		{"max backoff equal to the interval", map[string]string{"CRAFT_APPS_RELEASE_MAX_BACKOFF_SECS": "1800"},
			func(_ *config.Shared, p *config.Polling) { p.MaxBackoff = 1800 * time.Second }},
		{"startup jitter", map[string]string{"CRAFT_APPS_RELEASE_STARTUP_JITTER_SECS": "5"},
			func(_ *config.Shared, p *config.Polling) { p.StartupJitter = 5 * time.Second }},
		{"no startup jitter", map[string]string{"CRAFT_APPS_RELEASE_STARTUP_JITTER_SECS": "0"},
			func(_ *config.Shared, p *config.Polling) { p.StartupJitter = 0 }},
		{"tick", map[string]string{"CRAFT_APPS_RELEASE_TICK_SECS": "1"},
			func(_ *config.Shared, p *config.Polling) { p.Tick = time.Second }},
		{"request spacing", map[string]string{"CRAFT_APPS_RELEASE_REQUEST_SPACING_MS": "250"},
			func(_ *config.Shared, p *config.Polling) { p.RequestSpacing = 250 * time.Millisecond }},
		{"no request spacing", map[string]string{"CRAFT_APPS_RELEASE_REQUEST_SPACING_MS": "0"},
			func(_ *config.Shared, p *config.Polling) { p.RequestSpacing = 0 }},
	}
	for _, bin := range binaries {
		for _, tc := range tests {
			t.Run(bin.name+"/"+tc.name, func(t *testing.T) {
				got := bin.load(tc.vars)
				if got.err != nil {
					t.Fatalf("load(%q): %v", tc.vars, got.err)
				}
				wantShared, wantPolling := defaultShared(), defaultPolling()
				if bin.name == "poller" && tc.vars["REDIS_URL"] == "" {
					wantShared.Redis.URL = "redis://127.0.0.1:6379"
				}
				tc.want(&wantShared, &wantPolling)
				withRedis(t, &wantShared)
				if !reflect.DeepEqual(got.shared, wantShared) {
					t.Errorf("Shared:\n got %+v\nwant %+v", got.shared, wantShared)
				}
				if !reflect.DeepEqual(got.polling, wantPolling) {
					t.Errorf("Polling:\n got %+v\nwant %+v", got.polling, wantPolling)
				}
				if len(got.warnings) != 0 {
					t.Errorf("warnings = %q, want none", got.warnings)
				}
			})
		}
	}
}

// TestLoadClamps covers every value that is raised to its minimum, a
// negative one included (docs/config.md), and the one warning each raise
// gives.
func TestLoadClamps(t *testing.T) {
	const (
		interval = "CRAFT_APPS_RELEASE_POLL_INTERVAL_SECS"
		backoff  = "CRAFT_APPS_RELEASE_MAX_BACKOFF_SECS"
		tick     = "CRAFT_APPS_RELEASE_TICK_SECS"
		apiURL   = "CRAFT_APPS_RELEASE_GITHUB_API_URL"
		tok      = "CRAFT_APPS_RELEASE_GITHUB_TOKEN"
		noToken  = " is below the minimum 300 for GitHub's API without a token: using 300"
	)
	const s = time.Second
	tests := []struct {
		name                    string
		vars                    map[string]string
		interval, backoff, tick time.Duration
		warnings                []string
	}{
		{"interval below 300 without token", map[string]string{interval: "299"}, 300 * s, 14400 * s, 30 * s, []string{interval + "=299" + noToken}},
		{"interval below 60 with token", map[string]string{interval: "59", tok: token}, 60 * s, 14400 * s, 30 * s,
			[]string{interval + "=59 is below the minimum 60 for GitHub's API with a token: using 60"}},
		{"negative interval without token", map[string]string{interval: "-5"}, 300 * s, 14400 * s, 30 * s, []string{interval + "=-5" + noToken}},
		{"GitHub's minimum whatever the spelling of its URL", map[string]string{interval: "30", apiURL: "HTTPS://API.GitHub.com:443"},
			300 * s, 14400 * s, 30 * s, []string{interval + "=30" + noToken}},
		{"blank token keeps the minimum without token", map[string]string{interval: "60", tok: "  "}, 300 * s, 14400 * s, 30 * s, []string{interval + "=60" + noToken}},
		{"zero interval on another api", map[string]string{interval: "0", apiURL: "http://127.0.0.1:9999"}, s, 14400 * s, 30 * s,
			[]string{interval + "=0 is below the minimum 1: using 1"}},
		{"max backoff below the default interval", map[string]string{backoff: "100"}, 1800 * s, 1800 * s, 30 * s,
			[]string{backoff + "=100 is below the minimum 1800 (the poll interval): using 1800"}},
		{"max backoff below the token's default interval", map[string]string{backoff: "100", tok: token}, 120 * s, 120 * s, 30 * s,
			[]string{backoff + "=100 is below the minimum 120 (the poll interval): using 120"}},
		{"max backoff below a raised interval", map[string]string{interval: "10", backoff: "200"}, 300 * s, 300 * s, 30 * s,
			[]string{interval + "=10" + noToken, backoff + "=200 is below the minimum 300 (the poll interval): using 300"}},
		{"max backoff below a long interval", map[string]string{interval: "20000"}, 20000 * s, 20000 * s, 30 * s,
			[]string{backoff + "=14400 is below the minimum 20000 (the poll interval): using 20000"}},
		{"zero tick", map[string]string{tick: "0"}, 1800 * s, 14400 * s, s, []string{tick + "=0 is below the minimum 1: using 1"}},
		{"negative tick", map[string]string{tick: "-1"}, 1800 * s, 14400 * s, s, []string{tick + "=-1 is below the minimum 1: using 1"}},
	}
	for _, bin := range binaries {
		for _, tc := range tests {
			t.Run(bin.name+"/"+tc.name, func(t *testing.T) {
				got := bin.load(tc.vars)
				if got.err != nil {
					t.Fatalf("load(%q): %v", tc.vars, got.err)
				}
				p := got.polling
				if p.PollInterval != tc.interval || p.MaxBackoff != tc.backoff || p.Tick != tc.tick {
					t.Errorf("interval, max backoff, tick = %v, %v, %v; want %v, %v, %v",
						p.PollInterval, p.MaxBackoff, p.Tick, tc.interval, tc.backoff, tc.tick)
				}
				if !slices.Equal(got.warnings, tc.warnings) {
					t.Errorf("warnings:\n got %q\nwant %q", got.warnings, tc.warnings)
				}
			})
		}
	}
}

// TestLoadBad covers a bad value of every variable both binaries read: the
// error names the variable and the problem.
func TestLoadBad(t *testing.T) {
	tests := []struct {
		name string
		vars map[string]string
		want []string // each must appear in the error
	}{
		{"redis url scheme", map[string]string{"REDIS_URL": "http://127.0.0.1:6379"},
			[]string{`REDIS_URL: the scheme is not redis`}},
		{"apps repeated key", map[string]string{"CRAFT_APPS_RELEASE_APPS": "a=A=org/a,A=Other=org/other"},
			[]string{`CRAFT_APPS_RELEASE_APPS: entry "A=Other=org/other"`, "already listed"}},
		{"prerelease app not configured", map[string]string{"CRAFT_APPS_RELEASE_PRERELEASE_APPS": "photocraft,nosuchapp"},
			[]string{`CRAFT_APPS_RELEASE_PRERELEASE_APPS: key "nosuchapp" is not one of CRAFT_APPS_RELEASE_APPS's`}},
		{"prerelease app of a list that does not parse", map[string]string{"CRAFT_APPS_RELEASE_APPS": "x", "CRAFT_APPS_RELEASE_PRERELEASE_APPS": "x"},
			[]string{"CRAFT_APPS_RELEASE_APPS: "}},
		{"tag prefix and prerelease apps both wrong", map[string]string{
			"CRAFT_APPS_RELEASE_PRERELEASE_APPS": "nosuchapp", "CRAFT_APPS_RELEASE_TAG_PREFIXES": "photocraft="},
			[]string{`CRAFT_APPS_RELEASE_PRERELEASE_APPS: key "nosuchapp"`, `CRAFT_APPS_RELEASE_TAG_PREFIXES: key "photocraft": empty prefix`}},
		{"api url scheme", map[string]string{"CRAFT_APPS_RELEASE_GITHUB_API_URL": "ftp://api.github.com/"},
			[]string{`CRAFT_APPS_RELEASE_GITHUB_API_URL: "ftp://api.github.com/" is not an http or https URL`}},
		{"api url relative", map[string]string{"CRAFT_APPS_RELEASE_GITHUB_API_URL": "api.github.com"},
			[]string{"CRAFT_APPS_RELEASE_GITHUB_API_URL: ", "not an http or https URL"}},
		{"api url without host", map[string]string{"CRAFT_APPS_RELEASE_GITHUB_API_URL": "https:///repos"},
			[]string{"CRAFT_APPS_RELEASE_GITHUB_API_URL: ", "has no host"}},
		{"api url unparsable", map[string]string{"CRAFT_APPS_RELEASE_GITHUB_API_URL": "http://[::1"},
			[]string{"CRAFT_APPS_RELEASE_GITHUB_API_URL: ", "is not a URL"}},
		{"api url with credentials", map[string]string{"CRAFT_APPS_RELEASE_GITHUB_API_URL": "https://me:" + password + "@ghe.example.com/"},
			[]string{"CRAFT_APPS_RELEASE_GITHUB_API_URL: ", "must not hold credentials"}},
		{"api url with query", map[string]string{"CRAFT_APPS_RELEASE_GITHUB_API_URL": "https://ghe.example.com/?x=1"},
			[]string{"CRAFT_APPS_RELEASE_GITHUB_API_URL: ", "query or a fragment"}},
		{"log level", map[string]string{"LOG_LEVEL": "verbose"},
			[]string{`LOG_LEVEL: "verbose" is not debug, info, warn or error`}},
		{"log level zap knows but we do not", map[string]string{"LOG_LEVEL": "dpanic"},
			[]string{`LOG_LEVEL: "dpanic"`}},
		{"log format", map[string]string{"LOG_FORMAT": "text"},
			[]string{`LOG_FORMAT: "text" is not json or console`}},
		{"coordination enabled", map[string]string{"CRAFT_APPS_RELEASE_COORDINATION_ENABLED": "maybe"},
			[]string{`CRAFT_APPS_RELEASE_COORDINATION_ENABLED: "maybe" is not true or false`}},
		{"interval not a number", map[string]string{"CRAFT_APPS_RELEASE_POLL_INTERVAL_SECS": "abc"},
			[]string{`CRAFT_APPS_RELEASE_POLL_INTERVAL_SECS: "abc" is not a whole number`}},
		{"interval hugely negative", map[string]string{"CRAFT_APPS_RELEASE_POLL_INTERVAL_SECS": "-99999999999999999999"},
			[]string{`CRAFT_APPS_RELEASE_POLL_INTERVAL_SECS: "-99999999999999999999" is out of range`}},
		{"interval beyond a duration", map[string]string{"CRAFT_APPS_RELEASE_POLL_INTERVAL_SECS": "9223372037"},
			[]string{`CRAFT_APPS_RELEASE_POLL_INTERVAL_SECS: "9223372037" is too large`}},
		{"interval beyond int64", map[string]string{"CRAFT_APPS_RELEASE_POLL_INTERVAL_SECS": "99999999999999999999"},
			[]string{`CRAFT_APPS_RELEASE_POLL_INTERVAL_SECS: "99999999999999999999" is too large`}},
		{"tick", map[string]string{"CRAFT_APPS_RELEASE_TICK_SECS": "abc"},
			[]string{`CRAFT_APPS_RELEASE_TICK_SECS: "abc" is not a whole number`}},
		{"request spacing beyond a duration", map[string]string{"CRAFT_APPS_RELEASE_REQUEST_SPACING_MS": "9223372036855"},
			[]string{`CRAFT_APPS_RELEASE_REQUEST_SPACING_MS: "9223372036855" is too large`}},
		{"every wrong variable at once", map[string]string{
			"CRAFT_APPS_RELEASE_TICK_SECS": "abc", "LOG_LEVEL": "loud", "CRAFT_APPS_RELEASE_APPS": "x",
		}, []string{"CRAFT_APPS_RELEASE_TICK_SECS: ", "LOG_LEVEL: ", "CRAFT_APPS_RELEASE_APPS: "}},
	}
	for _, bin := range binaries {
		for _, tc := range tests {
			t.Run(bin.name+"/"+tc.name, func(t *testing.T) {
				// A token in every case shows no error ever repeats it.
				got := bin.load(with(tc.vars, "CRAFT_APPS_RELEASE_GITHUB_TOKEN", token))
				if got.err == nil {
					t.Fatalf("load(%q): no error, want one naming %q", tc.vars, tc.want)
				}
				msg := got.err.Error()
				for _, want := range tc.want {
					if !strings.Contains(msg, want) {
						t.Errorf("error %q, want it to contain %q", msg, want)
					}
				}
				for _, secret := range []string{token, password} {
					if strings.Contains(msg, secret) {
						t.Errorf("error %q holds the secret %q", msg, secret)
					}
				}
				if got.warnings != nil || !reflect.DeepEqual(got.shared, config.Shared{}) || got.polling != (config.Polling{}) {
					t.Errorf("on error got %+v, %+v, warnings %q; want zero values", got.shared, got.polling, got.warnings)
				}
			})
		}
	}
}

// TestLoadAPIOnly covers the variables only cmd/api reads: a good value
// (with the warning of a raise), or an error naming the variable; and when
// the API polls GitHub itself.
func TestLoadAPIOnly(t *testing.T) {
	const redis = "redis://127.0.0.1:6379"
	tests := []struct {
		name       string
		vars       map[string]string
		want       func(*config.API)
		wantErr    string
		warnings   []string
		standalone bool
	}{
		{"http addr", map[string]string{"HTTP_ADDR": "127.0.0.1:80"}, func(a *config.API) { a.HTTPAddr = "127.0.0.1:80" }, "", nil, true},
		{"http addr without colon", map[string]string{"HTTP_ADDR": "8080"}, nil, `HTTP_ADDR: "8080" is not host:port`, nil, false},
		{"http addr without port", map[string]string{"HTTP_ADDR": "localhost:"}, nil, `HTTP_ADDR: "localhost:" is not host:port`, nil, false},
		{"metrics addr on the public port", map[string]string{"METRICS_ADDR": ":8080"}, nil, `METRICS_ADDR: ":8080" has the port of HTTP_ADDR`, nil, false},
		{"metrics addr on the public port, other hosts", map[string]string{"HTTP_ADDR": "127.0.0.1:7000", "METRICS_ADDR": "0.0.0.0:7000"}, nil, "METRICS_ADDR: ", nil, false},
		{"metrics addr without colon", map[string]string{"METRICS_ADDR": "9090"}, nil, `METRICS_ADDR: "9090" is not host:port`, nil, false},
		{"both on port 0", map[string]string{"HTTP_ADDR": "127.0.0.1:0", "METRICS_ADDR": "127.0.0.1:0"},
			func(a *config.API) { a.HTTPAddr, a.MetricsAddr = "127.0.0.1:0", "127.0.0.1:0" }, "", nil, true},
		{"connection cap", map[string]string{"HTTP_MAX_CONNECTIONS": "many"}, nil, `HTTP_MAX_CONNECTIONS: "many" is not a whole number`, nil, false},
		{"no connection", map[string]string{"HTTP_MAX_CONNECTIONS": "0"}, func(a *config.API) { a.MaxConnections = 1 }, "",
			[]string{"HTTP_MAX_CONNECTIONS=0 is below the minimum 1: using 1"}, true},
		{"hydrate timeout", map[string]string{"CRAFT_APPS_HYDRATE_TIMEOUT_SECS": "3"}, func(a *config.API) { a.HydrateTimeout = 3 * time.Second }, "", nil, true},
		{"no hydrate timeout", map[string]string{"CRAFT_APPS_HYDRATE_TIMEOUT_SECS": "0"}, func(a *config.API) { a.HydrateTimeout = 0 }, "", nil, true},
		{"negative hydrate timeout", map[string]string{"CRAFT_APPS_HYDRATE_TIMEOUT_SECS": "-10"}, func(a *config.API) { a.HydrateTimeout = 0 }, "",
			[]string{"CRAFT_APPS_HYDRATE_TIMEOUT_SECS=-10 is below the minimum 0: using 0"}, true},
		{"hydrate timeout bad", map[string]string{"CRAFT_APPS_HYDRATE_TIMEOUT_SECS": "ten"}, nil, `CRAFT_APPS_HYDRATE_TIMEOUT_SECS: "ten" is not a whole number`, nil, false},
		{"shutdown timeout", map[string]string{"SHUTDOWN_TIMEOUT_SECS": "30"}, func(a *config.API) { a.ShutdownTimeout = 30 * time.Second }, "", nil, true},
		{"negative shutdown timeout", map[string]string{"SHUTDOWN_TIMEOUT_SECS": "-5"}, func(a *config.API) { a.ShutdownTimeout = 0 }, "",
			[]string{"SHUTDOWN_TIMEOUT_SECS=-5 is below the minimum 0: using 0"}, true},
		{"shutdown timeout bad", map[string]string{"SHUTDOWN_TIMEOUT_SECS": "15s"}, nil, `SHUTDOWN_TIMEOUT_SECS: "15s" is not a whole number`, nil, false},
		{"redis", map[string]string{"REDIS_URL": redis}, func(a *config.API) { a.Redis.URL = redis }, "", nil, false},
		{"redis without coordination", map[string]string{"REDIS_URL": redis, "CRAFT_APPS_RELEASE_COORDINATION_ENABLED": "false"},
			func(a *config.API) { a.Redis.URL, a.CoordinationEnabled = redis, false }, "", nil, true},
		{"no redis without coordination", map[string]string{"CRAFT_APPS_RELEASE_COORDINATION_ENABLED": "false"},
			func(a *config.API) { a.CoordinationEnabled = false }, "", nil, true},
		{"webhook secret blank", map[string]string{"CRAFT_APPS_RELEASE_WEBHOOK_SECRET": "   "}, func(*config.API) {}, "", nil, true},
		{"webhook secrets, two while rotating, trimmed", map[string]string{"CRAFT_APPS_RELEASE_WEBHOOK_SECRET": " old , new "},
			func(a *config.API) { a.WebhookSecrets = []config.Secret{"old", "new"} }, "", nil, true},
		{"three webhook secrets", map[string]string{"CRAFT_APPS_RELEASE_WEBHOOK_SECRET": "a,b,c"}, nil,
			"CRAFT_APPS_RELEASE_WEBHOOK_SECRET: 3 secrets, want one, or two", nil, false},
		{"an empty webhook secret", map[string]string{"CRAFT_APPS_RELEASE_WEBHOOK_SECRET": webhookSecret + ","}, nil,
			"CRAFT_APPS_RELEASE_WEBHOOK_SECRET: an empty secret", nil, false},
		{"a comma alone as webhook secret", map[string]string{"CRAFT_APPS_RELEASE_WEBHOOK_SECRET": ","}, nil,
			"CRAFT_APPS_RELEASE_WEBHOOK_SECRET: an empty secret", nil, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, warnings, err := config.LoadAPI(lookup(tc.vars))
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) || strings.Contains(err.Error(), webhookSecret) {
					t.Fatalf("LoadAPI(%q) error = %v, want one containing %q, quoting no secret", tc.vars, err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("LoadAPI(%q): %v", tc.vars, err)
			}
			want, _, err := config.LoadAPI(lookup(nil))
			if err != nil {
				t.Fatalf("LoadAPI(empty environment): %v", err)
			}
			tc.want(&want)
			withRedis(t, &want.Shared)
			if !reflect.DeepEqual(got, want) {
				t.Errorf("LoadAPI(%q):\n got %+v\nwant %+v", tc.vars, got, want)
			}
			if !slices.Equal(warnings, tc.warnings) {
				t.Errorf("warnings %q, want %q", warnings, tc.warnings)
			}
			if got.Standalone() != tc.standalone {
				t.Errorf("Standalone() = %v, want %v", got.Standalone(), tc.standalone)
			}
		})
	}
}

// TestLoadPollerOnly covers the variables only cmd/poller reads, and what
// the poller refuses that the API takes: a good value, or an error naming
// every wrong variable, the DSN check's (dsn; acceptDSN when nil) beside
// config's own.
func TestLoadPollerOnly(t *testing.T) {
	const redis = "redis://127.0.0.1:6379"
	tests := []struct {
		name    string
		vars    map[string]string
		dsn     config.DSNCheck
		want    func(*config.Poller)
		wantErr []string
	}{
		{"http addr", map[string]string{"REDIS_URL": redis, "HTTP_ADDR": ":9191"}, nil, func(p *config.Poller) { p.HTTPAddr = ":9191" }, nil},
		{"shutdown timeout", map[string]string{"REDIS_URL": redis, "SHUTDOWN_TIMEOUT_SECS": "5"}, nil, func(p *config.Poller) { p.ShutdownTimeout = 5 * time.Second }, nil},
		{"shutdown timeout bad", map[string]string{"REDIS_URL": redis, "SHUTDOWN_TIMEOUT_SECS": "5s"}, nil, nil, []string{`SHUTDOWN_TIMEOUT_SECS: "5s" is not a whole number`}},
		{"no redis while coordinated", map[string]string{}, nil, nil, []string{"REDIS_URL: empty", "CRAFT_APPS_RELEASE_COORDINATION_ENABLED=false"}},
		{"blank redis while coordinated", map[string]string{"REDIS_URL": "  "}, nil, nil, []string{"REDIS_URL: empty"}},
		{"no redis without coordination", map[string]string{"CRAFT_APPS_RELEASE_COORDINATION_ENABLED": "false"}, nil,
			func(p *config.Poller) { p.Redis.URL, p.CoordinationEnabled = "", false }, nil},
		{"redis without coordination", map[string]string{"REDIS_URL": redis, "CRAFT_APPS_RELEASE_COORDINATION_ENABLED": "false"}, nil,
			func(p *config.Poller) { p.CoordinationEnabled = false }, nil},
		{"mysql without redis", map[string]string{"MYSQL_DSN": "u@tcp(h)/d", "CRAFT_APPS_RELEASE_COORDINATION_ENABLED": "false"}, nil, nil,
			[]string{"REDIS_URL: empty, yet MySQL is set"}},
		{"the DSN check's error beside the rest", map[string]string{"REDIS_URL": redis, "MYSQL_URL": "mysql://u@h/d", "HTTP_ADDR": "nowhere"}, refuseURL, nil,
			[]string{"MYSQL_URL: refused", `HTTP_ADDR: "nowhere" is not host:port`}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dsn := tc.dsn
			if dsn == nil {
				dsn = acceptDSN
			}
			got, _, err := config.LoadPoller(lookup(tc.vars), dsn)
			if tc.wantErr != nil {
				for _, want := range tc.wantErr {
					if err == nil || !strings.Contains(err.Error(), want) {
						t.Errorf("LoadPoller(%q) error = %v, want it to contain %q", tc.vars, err, want)
					}
				}
				return
			}
			if err != nil {
				t.Fatalf("LoadPoller(%q): %v", tc.vars, err)
			}
			want, _, err := config.LoadPoller(lookup(map[string]string{"REDIS_URL": redis}), acceptDSN)
			if err != nil {
				t.Fatalf("LoadPoller(only REDIS_URL): %v", err)
			}
			tc.want(&want)
			withRedis(t, &want.Shared)
			if !reflect.DeepEqual(got, want) {
				t.Errorf("LoadPoller(%q):\n got %+v\nwant %+v", tc.vars, got, want)
			}
		})
	}
}

// TestLoadReadsOnlyGetenv checks that the process environment, which env
// would read by default, plays no part.
func TestLoadReadsOnlyGetenv(t *testing.T) {
	t.Setenv("LOG_LEVEL", "debug")
	t.Setenv("REDIS_URL", "redis://127.0.0.1:6379")
	t.Setenv("CRAFT_APPS_RELEASE_TICK_SECS", "abc")
	a, _, err := config.LoadAPI(lookup(nil))
	if err != nil {
		t.Fatalf("LoadAPI(empty getenv): %v", err)
	}
	if a.LogLevel != zapcore.InfoLevel || a.Redis.URL != "" {
		t.Errorf("LoadAPI(empty getenv) = level %v, redis %q; want info and empty, not the process environment", a.LogLevel, a.Redis.URL)
	}
	if _, _, err := config.LoadPoller(lookup(nil), acceptDSN); err == nil {
		t.Errorf("LoadPoller(empty getenv): no error, want one for the missing REDIS_URL")
	}
}

// TestLoadAsksForNames checks that the loaders ask getenv for exactly the
// variables Names lists, so a manifest check built on Names is true.
func TestLoadAsksForNames(t *testing.T) {
	for _, bin := range []string{"api", "poller"} {
		t.Run(bin, func(t *testing.T) {
			var asked []string
			getenv := func(name string) string {
				asked = append(asked, name)
				return ""
			}
			if bin == "api" {
				_, _, _ = config.LoadAPI(getenv) // only the names it asks for matter here
			} else {
				_, _, _ = config.LoadPoller(getenv, acceptDSN)
			}
			if want := config.Names(bin); !slices.Equal(asked, want) {
				t.Errorf("getenv asked for\n %q\nwant Names(%q) =\n %q", asked, bin, want)
			}
		})
	}
}

func TestTiming(t *testing.T) {
	p := config.Polling{PollInterval: time.Minute, MaxBackoff: 2 * time.Minute, StartupJitter: 3 * time.Second, Tick: 4 * time.Second, RequestSpacing: 5 * time.Millisecond}
	want := schedule.Timing{Interval: time.Minute, MaxBackoff: 2 * time.Minute, Tick: 4 * time.Second, Spacing: 5 * time.Millisecond, StartupJitter: 3 * time.Second}
	if got := p.Timing(); got != want {
		t.Errorf("Timing() = %+v, want %+v", got, want)
	}
}

// TestLoadRaisesNegatives: the delays whose minimum is 0 raise a negative
// value to 0 with one warning (the others' raises are TestLoadClamps's).
func TestLoadRaisesNegatives(t *testing.T) {
	for _, bin := range binaries {
		got := bin.load(map[string]string{"CRAFT_APPS_RELEASE_STARTUP_JITTER_SECS": "-30", "CRAFT_APPS_RELEASE_REQUEST_SPACING_MS": "-1000"})
		want := []string{"CRAFT_APPS_RELEASE_STARTUP_JITTER_SECS=-30 is below the minimum 0: using 0",
			"CRAFT_APPS_RELEASE_REQUEST_SPACING_MS=-1000 is below the minimum 0: using 0"}
		if got.err != nil || got.polling.StartupJitter != 0 || got.polling.RequestSpacing != 0 || !slices.Equal(got.warnings, want) {
			t.Errorf("%s: jitter %v, spacing %v, warnings %q, err %v; want 0, 0, %q", bin.name, got.polling.StartupJitter, got.polling.RequestSpacing, got.warnings, got.err, want)
		}
	}
}

// TestTokenOverCleartext: a GitHub token goes over http:// only to a
// loopback address; CRAFT_APPS_RELEASE_GITHUB_API_URL is checked here alone,
// and github.New takes what was checked.
func TestTokenOverCleartext(t *testing.T) {
	tests := []struct {
		base, token string
		ok          bool
	}{
		{"http://ghe.example.com/api/v3/", "secret", false},
		{"http://10.0.0.1/", "secret", false},
		{"http://192.168.1.10:8080/", "secret", false},
		{"http://127.0.0.1.example.com/", "secret", false},
		{"http://ghe.example.com/api/v3/", "", true},
		{"https://ghe.example.com/api/v3/", "secret", true},
		{"http://127.0.0.1:8080/", "secret", true},
		{"http://127.8.9.10/", "secret", true},
		{"http://[::1]:8080/", "secret", true},
		{"http://localhost:8080/", "secret", true},
		{"http://ghe.example.com/", "  ", true},
	}
	for _, bin := range binaries {
		for _, tt := range tests {
			t.Run(bin.name+" "+tt.base+" "+tt.token, func(t *testing.T) {
				got := bin.load(map[string]string{"CRAFT_APPS_RELEASE_GITHUB_API_URL": tt.base, "CRAFT_APPS_RELEASE_GITHUB_TOKEN": tt.token})
				if ok := got.err == nil; ok != tt.ok {
					t.Errorf("error %v, want ok %v", got.err, tt.ok)
				}
				if got.err != nil && (!strings.Contains(got.err.Error(), "CRAFT_APPS_RELEASE_GITHUB_TOKEN: ") || strings.Contains(got.err.Error(), tt.token)) {
					t.Errorf("error %q: want it to name the token's variable and not hold the token", got.err)
				}
			})
		}
	}
}
