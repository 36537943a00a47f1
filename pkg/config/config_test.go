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

const (
	localRedis = "redis://127.0.0.1:6379"
	coordVar   = "CRAFT_APPS_RELEASE_COORDINATION_ENABLED"
	tokenVar   = "CRAFT_APPS_RELEASE_GITHUB_TOKEN"
	apiURLVar  = "CRAFT_APPS_RELEASE_GITHUB_API_URL"
)

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

// env returns the environment of the pairs name, value, ….
func env(pairs ...string) map[string]string { return with(nil, pairs...) }

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// loadCase is one environment and what a loader makes of it: want edits the
// defaults (nil: none) and warn lists the warnings; or err lists what the
// error must contain, each naming its variable.
type loadCase[T any] struct {
	name      string
	vars      map[string]string
	want      func(*T)
	warn, err []string
}

// runLoads runs each case through load and compares with def edited by the
// case, its Redis options parsed from its REDIS_URL. A refused environment
// gets a token too, to show that no error repeats a secret; the settings and
// warnings are then zero.
func runLoads[T any](t *testing.T, tests []loadCase[T], def func() T, load func(*testing.T, map[string]string) (T, []string, error)) {
	t.Helper()
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			vars := tc.vars
			if tc.err != nil {
				vars = with(vars, tokenVar, token)
			}
			got, warnings, err := load(t, vars)
			if tc.err != nil {
				if err == nil {
					t.Fatalf("load(%q) = %+v, want an error containing %q", vars, got, tc.err)
				}
				for _, want := range tc.err {
					if !strings.Contains(err.Error(), want) {
						t.Errorf("error %q, want it to contain %q", err, want)
					}
				}
				for _, secret := range []string{token, password, webhookSecret, mysqlPassword} {
					if strings.Contains(err.Error(), secret) {
						t.Errorf("error %q holds the secret %q", err, secret)
					}
				}
				if !reflect.ValueOf(got).IsZero() || warnings != nil {
					t.Errorf("on error got %+v, warnings %q; want zero values", got, warnings)
				}
				return
			}
			if err != nil {
				t.Fatalf("load(%q): %v", vars, err)
			}
			want := def()
			if tc.want != nil {
				tc.want(&want)
			}
			if s := reflect.ValueOf(&want).Elem().FieldByName("Shared"); s.IsValid() {
				withRedis(t, s.Addr().Interface().(*config.Shared))
			}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("load(%q):\n got %+v\nwant %+v", vars, got, want)
			}
			if !slices.Equal(warnings, tc.warn) {
				t.Errorf("warnings:\n got %q\nwant %q", warnings, tc.warn)
			}
		})
	}
}

// withRedis sets s.Redis.Options as REDIS_URL s.Redis.URL parses, with no
// TLS files.
func withRedis(t testing.TB, s *config.Shared) {
	t.Helper()
	s.Redis.Options = redis.Options{}
	if s.Redis.Configured() {
		o, err := redis.Parse(s.Redis.URL.Reveal())
		must(t, err)
		s.Redis.Options = o
	}
}

// common is what both binaries read, so that one table covers both.
type common struct {
	config.Shared
	config.Polling
}

// binaries loads an environment through LoadAPI and through loadPoller, with
// the defaults of each.
var binaries = []struct {
	name string
	def  func() common
	load func(*testing.T, map[string]string) (common, []string, error)
}{
	{"api", func() common { return common{defaultAPI().Shared, defaultPolling()} },
		func(_ *testing.T, vars map[string]string) (common, []string, error) {
			a, w, err := config.LoadAPI(lookup(vars))
			return common{a.Shared, a.Polling}, w, err
		}},
	{"poller", func() common { return common{defaultPoller().Shared, defaultPolling()} },
		func(_ *testing.T, vars map[string]string) (common, []string, error) {
			p, w, err := loadPoller(vars)
			return common{p.Shared, p.Polling}, w, err
		}},
}

// loadPoller is LoadPoller with a REDIS_URL unless vars sets one, since the
// poller refuses to start without Redis while coordination is on.
func loadPoller(vars map[string]string) (config.Poller, []string, error) {
	return config.LoadPoller(lookup(with(vars, "REDIS_URL", localRedis)), checkDSN)
}

func defaultPolling() config.Polling {
	return config.Polling{GitHubAPIURL: "https://api.github.com/", Enabled: true, CoordinationEnabled: true,
		PollInterval: 1800 * time.Second, MaxBackoff: 14400 * time.Second, StartupJitter: 30 * time.Second,
		Tick: 30 * time.Second, RequestSpacing: time.Second}
}

func defaultAPI() config.API {
	return config.API{Shared: config.Shared{Apps: config.DefaultApps(), LogLevel: zapcore.InfoLevel, LogFormat: "json"},
		Polling: defaultPolling(), HTTPAddr: ":8080", MetricsAddr: ":9090", MaxConnections: 1024,
		HydrateTimeout: 10 * time.Second, ShutdownTimeout: 15 * time.Second,
		Cloudflare: config.Cloudflare{APIURL: "https://api.cloudflare.com/client/v4/"}}
}

func defaultPoller() config.Poller {
	a := defaultAPI()
	a.Redis.URL = localRedis
	return config.Poller{Shared: a.Shared, Polling: a.Polling, HTTPAddr: ":9090", ShutdownTimeout: 15 * time.Second,
		MySQL: defaultMySQL(), Cloudflare: a.Cloudflare}
}

func defaultMySQL() config.MySQL {
	return config.MySQL{MaxConns: 4, MaxLifetime: 600 * time.Second, QueryTimeout: 5 * time.Second, Replicas: 3, Refresh: 60 * time.Second}
}

// TestLoad covers what both binaries read: a good value of every variable (a
// blank one takes the default), every value raised to its minimum with its
// one warning (docs/config.md), and a bad value of every variable.
func TestLoad(t *testing.T) {
	const (
		apps     = "CRAFT_APPS_RELEASE_APPS"
		pre      = "CRAFT_APPS_RELEASE_PRERELEASE_APPS"
		prefixes = "CRAFT_APPS_RELEASE_TAG_PREFIXES"
		polling  = "CRAFT_APPS_RELEASE_POLLING_ENABLED"
		interval = "CRAFT_APPS_RELEASE_POLL_INTERVAL_SECS"
		backoff  = "CRAFT_APPS_RELEASE_MAX_BACKOFF_SECS"
		jitter   = "CRAFT_APPS_RELEASE_STARTUP_JITTER_SECS"
		tick     = "CRAFT_APPS_RELEASE_TICK_SECS"
		spacing  = "CRAFT_APPS_RELEASE_REQUEST_SPACING_MS"
		noToken  = " is below the minimum 300 for GitHub's API without a token: using 300"
		s        = time.Second
		ab       = "alpha=Alpha=org/alpha,beta=Beta=org/beta"
	)
	// other is the settings on the API at url with tok, at the default
	// interval.
	other := func(url string, tok config.Secret) func(*common) {
		return func(c *common) {
			c.GitHubAPIURL, c.GitHubToken = url, tok
			if tok != "" {
				c.PollInterval = 120 * s
			}
		}
	}
	alphaBeta := func(alpha string) []release.App {
		return []release.App{app("alpha", alpha, "org/alpha"), app("beta", "Beta", "org/beta")}
	}
	tests := []loadCase[common]{
		{"blank values take the default", env(apps, " ", apiURLVar, "\t", "LOG_LEVEL", " ", "LOG_FORMAT", "", polling, " ", coordVar, " ",
			interval, " ", backoff, " ", jitter, " ", tick, "\n", spacing, " "), nil, nil, nil},
		{"redis url with password", env("REDIS_URL", redisURL), func(c *common) { c.Redis.URL = redisURL }, nil, nil},
		{"redis url trimmed", env("REDIS_URL", "  redis://127.0.0.1:6379/2 \n"), func(c *common) { c.Redis.URL = "redis://127.0.0.1:6379/2" }, nil, nil},
		{"apps", env(apps, "Alpha=Alpha App=org/alpha, beta = Beta = org/beta "), func(c *common) { c.Apps = alphaBeta("Alpha App") }, nil, nil},
		{"prerelease apps", env(apps, ab, pre, " Beta "), func(c *common) { c.Apps = alphaBeta("Alpha"); c.Apps[1].Prereleases = true }, nil, nil},
		{"prerelease apps blank", env(pre, " "), nil, nil, nil},
		{"tag prefixes", env(apps, ab, pre, "beta", prefixes, " Beta = beta-v "),
			func(c *common) {
				c.Apps = alphaBeta("Alpha")
				c.Apps[1].Prereleases, c.Apps[1].TagPrefix = true, "beta-v"
			}, nil, nil},
		{"tag prefixes blank", env(prefixes, " "), nil, nil, nil},
		{"api url without slash", env(apiURLVar, "http://127.0.0.1:8080"), other("http://127.0.0.1:8080/", ""), nil, nil},
		{"enterprise api url", env(apiURLVar, "https://ghe.example.com/api/v3"), other("https://ghe.example.com/api/v3/", ""), nil, nil},
		{"github without slash", env(apiURLVar, "https://api.github.com"), nil, nil, nil},
		{"log level error in capitals", env("LOG_LEVEL", "ERROR"), func(c *common) { c.LogLevel = zapcore.ErrorLevel }, nil, nil},
		{"log level debug", env("LOG_LEVEL", "debug"), func(c *common) { c.LogLevel = zapcore.DebugLevel }, nil, nil},
		{"log format console", env("LOG_FORMAT", "console"), func(c *common) { c.LogFormat = "console" }, nil, nil},
		{"log format json in capitals", env("LOG_FORMAT", "JSON"), nil, nil, nil},
		{"polling disabled", env(polling, "false"), func(c *common) { c.Enabled = false }, nil, nil},
		{"coordination disabled", env(coordVar, "false"), func(c *common) { c.CoordinationEnabled = false }, nil, nil},
		{"token trimmed, interval 120", env(tokenVar, "  "+token+"\n"), func(c *common) { c.GitHubToken, c.PollInterval = token, 120*s }, nil, nil},
		{"blank token is no token", env(tokenVar, " \t "), nil, nil, nil},
		{"interval at the minimum without token", env(interval, "300"), func(c *common) { c.PollInterval = 300 * s }, nil, nil},
		{"interval at the minimum with token", env(interval, "60", tokenVar, token), func(c *common) { c.GitHubToken, c.PollInterval = token, 60*s }, nil, nil},
		{"short interval on another api", env(interval, "1", apiURLVar, "http://127.0.0.1:9999/"), func(c *common) { c.GitHubAPIURL, c.PollInterval = "http://127.0.0.1:9999/", s }, nil, nil},
		{"interval with spaces", env(interval, " 450 "), func(c *common) { c.PollInterval = 450 * s }, nil, nil},
		{"max backoff", env(backoff, "3600"), func(c *common) { c.MaxBackoff = time.Hour }, nil, nil},
		{"max backoff equal to the interval", env(backoff, "1800"), func(c *common) { c.MaxBackoff = 1800 * s }, nil, nil},
		{"startup jitter", env(jitter, "5"), func(c *common) { c.StartupJitter = 5 * s }, nil, nil},
		{"no startup jitter", env(jitter, "0"), func(c *common) { c.StartupJitter = 0 }, nil, nil},
		{"tick", env(tick, "1"), func(c *common) { c.Tick = s }, nil, nil},
		{"request spacing", env(spacing, "250"), func(c *common) { c.RequestSpacing = 250 * time.Millisecond }, nil, nil},
		{"no request spacing", env(spacing, "0"), func(c *common) { c.RequestSpacing = 0 }, nil, nil},

		// A token goes over http:// only to a loopback address.
		{"token to https", env(apiURLVar, "https://ghe.example.com/api/v3/", tokenVar, token), other("https://ghe.example.com/api/v3/", token), nil, nil},
		{"token to 127.0.0.1", env(apiURLVar, "http://127.0.0.1:8080/", tokenVar, token), other("http://127.0.0.1:8080/", token), nil, nil},
		{"token to 127.8.9.10", env(apiURLVar, "http://127.8.9.10/", tokenVar, token), other("http://127.8.9.10/", token), nil, nil},
		{"token to ::1", env(apiURLVar, "http://[::1]:8080/", tokenVar, token), other("http://[::1]:8080/", token), nil, nil},
		{"token to localhost", env(apiURLVar, "http://localhost:8080/", tokenVar, token), other("http://localhost:8080/", token), nil, nil},
		{"no token over http", env(apiURLVar, "http://ghe.example.com/api/v3/"), other("http://ghe.example.com/api/v3/", ""), nil, nil},
		{"blank token over http", env(apiURLVar, "http://ghe.example.com/", tokenVar, "  "), other("http://ghe.example.com/", ""), nil, nil},
		{"token over http", env(apiURLVar, "http://ghe.example.com/api/v3/"), nil, nil, []string{tokenVar + ": "}},
		{"token over http to 10.0.0.1", env(apiURLVar, "http://10.0.0.1/"), nil, nil, []string{tokenVar + ": "}},
		{"token over http to 192.168.1.10", env(apiURLVar, "http://192.168.1.10:8080/"), nil, nil, []string{tokenVar + ": "}},
		{"token over http to a name under 127.0.0.1", env(apiURLVar, "http://127.0.0.1.example.com/"), nil, nil, []string{tokenVar + ": "}},

		// Raised to the minimum, with one warning each.
		{"interval below 300 without token", env(interval, "299"), func(c *common) { c.PollInterval = 300 * s }, []string{interval + "=299" + noToken}, nil},
		{"interval below 60 with token", env(interval, "59", tokenVar, token), func(c *common) { c.GitHubToken, c.PollInterval = token, 60*s },
			[]string{interval + "=59 is below the minimum 60 for GitHub's API with a token: using 60"}, nil},
		{"negative interval without token", env(interval, "-5"), func(c *common) { c.PollInterval = 300 * s }, []string{interval + "=-5" + noToken}, nil},
		{"GitHub's minimum whatever the spelling of its URL", env(interval, "30", apiURLVar, "HTTPS://API.GitHub.com:443"),
			func(c *common) { c.GitHubAPIURL, c.PollInterval = "https://API.GitHub.com:443/", 300*s }, []string{interval + "=30" + noToken}, nil},
		{"blank token keeps the minimum without token", env(interval, "60", tokenVar, "  "), func(c *common) { c.PollInterval = 300 * s },
			[]string{interval + "=60" + noToken}, nil},
		{"zero interval on another api", env(interval, "0", apiURLVar, "http://127.0.0.1:9999"),
			func(c *common) { c.GitHubAPIURL, c.PollInterval = "http://127.0.0.1:9999/", s }, []string{interval + "=0 is below the minimum 1: using 1"}, nil},
		{"max backoff below the default interval", env(backoff, "100"), func(c *common) { c.MaxBackoff = 1800 * s },
			[]string{backoff + "=100 is below the minimum 1800 (the poll interval): using 1800"}, nil},
		{"max backoff below the token's default interval", env(backoff, "100", tokenVar, token), func(c *common) { c.GitHubToken, c.PollInterval, c.MaxBackoff = token, 120*s, 120*s },
			[]string{backoff + "=100 is below the minimum 120 (the poll interval): using 120"}, nil},
		{"max backoff below a raised interval", env(interval, "10", backoff, "200"), func(c *common) { c.PollInterval, c.MaxBackoff = 300*s, 300*s },
			[]string{interval + "=10" + noToken, backoff + "=200 is below the minimum 300 (the poll interval): using 300"}, nil},
		{"max backoff below a long interval", env(interval, "20000"), func(c *common) { c.PollInterval, c.MaxBackoff = 20000*s, 20000*s },
			[]string{backoff + "=14400 is below the minimum 20000 (the poll interval): using 20000"}, nil},
		{"zero tick", env(tick, "0"), func(c *common) { c.Tick = s }, []string{tick + "=0 is below the minimum 1: using 1"}, nil},
		{"negative tick", env(tick, "-1"), func(c *common) { c.Tick = s }, []string{tick + "=-1 is below the minimum 1: using 1"}, nil},
		{"negative delays raised to 0", env(jitter, "-30", spacing, "-1000"), func(c *common) { c.StartupJitter, c.RequestSpacing = 0, 0 },
			[]string{jitter + "=-30 is below the minimum 0: using 0", spacing + "=-1000 is below the minimum 0: using 0"}, nil},

		// Refused, naming the variable and the problem.
		{"redis url scheme", env("REDIS_URL", "http://127.0.0.1:6379"), nil, nil, []string{`REDIS_URL: the scheme is not redis`}},
		{"apps repeated key", env(apps, "a=A=org/a,A=Other=org/other"), nil, nil, []string{apps + `: entry "A=Other=org/other"`, "already listed"}},
		{"prerelease app not configured", env(pre, "photocraft,nosuchapp"), nil, nil, []string{pre + `: key "nosuchapp" is not one of ` + apps + "'s"}},
		{"prerelease app of a list that does not parse", env(apps, "x", pre, "x"), nil, nil, []string{apps + ": "}},
		{"tag prefix and prerelease apps both wrong", env(pre, "nosuchapp", prefixes, "photocraft="), nil, nil, []string{pre + `: key "nosuchapp"`, prefixes + `: key "photocraft": empty prefix`}},
		{"api url scheme", env(apiURLVar, "ftp://api.github.com/"), nil, nil, []string{apiURLVar + `: "ftp://api.github.com/" is not an http or https URL`}},
		{"api url relative", env(apiURLVar, "api.github.com"), nil, nil, []string{apiURLVar + ": ", "not an http or https URL"}},
		{"api url without host", env(apiURLVar, "https:///repos"), nil, nil, []string{apiURLVar + ": ", "has no host"}},
		{"api url unparsable", env(apiURLVar, "http://[::1"), nil, nil, []string{apiURLVar + ": ", "is not a URL"}},
		{"api url with credentials", env(apiURLVar, "https://me:"+password+"@ghe.example.com/"), nil, nil, []string{apiURLVar + ": ", "must not hold credentials"}},
		{"api url with query", env(apiURLVar, "https://ghe.example.com/?x=1"), nil, nil, []string{apiURLVar + ": ", "query or a fragment"}},
		{"log level", env("LOG_LEVEL", "verbose"), nil, nil, []string{`LOG_LEVEL: "verbose" is not debug, info, warn or error`}},
		{"log level zap knows but we do not", env("LOG_LEVEL", "dpanic"), nil, nil, []string{`LOG_LEVEL: "dpanic"`}},
		{"log format", env("LOG_FORMAT", "text"), nil, nil, []string{`LOG_FORMAT: "text" is not json or console`}},
		{"coordination enabled", env(coordVar, "maybe"), nil, nil, []string{coordVar + `: "maybe" is not true or false`}},
		{"interval not a number", env(interval, "abc"), nil, nil, []string{interval + `: "abc" is not a whole number`}},
		{"interval hugely negative", env(interval, "-99999999999999999999"), nil, nil, []string{interval + `: "-99999999999999999999" is out of range`}},
		{"interval beyond a duration", env(interval, "9223372037"), nil, nil, []string{interval + `: "9223372037" is too large`}},
		{"interval beyond int64", env(interval, "99999999999999999999"), nil, nil, []string{interval + `: "99999999999999999999" is too large`}},
		{"tick not a number", env(tick, "abc"), nil, nil, []string{tick + `: "abc" is not a whole number`}},
		{"request spacing beyond a duration", env(spacing, "9223372036855"), nil, nil, []string{spacing + `: "9223372036855" is too large`}},
		{"every wrong variable at once", env(tick, "abc", "LOG_LEVEL", "loud", apps, "x"), nil, nil, []string{tick + ": ", "LOG_LEVEL: ", apps + ": "}},
	}
	for _, bin := range binaries {
		t.Run(bin.name, func(t *testing.T) { runLoads(t, tests, bin.def, bin.load) })
	}
}

// TestLoadAPI covers the variables only cmd/api reads: a good value (with
// the warning of a raise), or an error naming the variable.
func TestLoadAPI(t *testing.T) {
	const webhook = "CRAFT_APPS_RELEASE_WEBHOOK_SECRET"
	runLoads(t, []loadCase[config.API]{
		{"defaults", nil, nil, nil, nil},
		{"http addr", env("HTTP_ADDR", "127.0.0.1:80"), func(a *config.API) { a.HTTPAddr = "127.0.0.1:80" }, nil, nil},
		{"http addr without colon", env("HTTP_ADDR", "8080"), nil, nil, []string{`HTTP_ADDR: "8080" is not host:port`}},
		{"http addr without port", env("HTTP_ADDR", "localhost:"), nil, nil, []string{`HTTP_ADDR: "localhost:" is not host:port`}},
		{"metrics addr on the public port", env("METRICS_ADDR", ":8080"), nil, nil, []string{`METRICS_ADDR: ":8080" has the port of HTTP_ADDR`}},
		{"metrics addr on the public port, other hosts", env("HTTP_ADDR", "127.0.0.1:7000", "METRICS_ADDR", "0.0.0.0:7000"), nil, nil, []string{"METRICS_ADDR: "}},
		{"metrics addr without colon", env("METRICS_ADDR", "9090"), nil, nil, []string{`METRICS_ADDR: "9090" is not host:port`}},
		{"both on port 0", env("HTTP_ADDR", "127.0.0.1:0", "METRICS_ADDR", "127.0.0.1:0"), func(a *config.API) { a.HTTPAddr, a.MetricsAddr = "127.0.0.1:0", "127.0.0.1:0" }, nil, nil},
		{"connection cap", env("HTTP_MAX_CONNECTIONS", "many"), nil, nil, []string{`HTTP_MAX_CONNECTIONS: "many" is not a whole number`}},
		{"no connection", env("HTTP_MAX_CONNECTIONS", "0"), func(a *config.API) { a.MaxConnections = 1 }, []string{"HTTP_MAX_CONNECTIONS=0 is below the minimum 1: using 1"}, nil},
		{"hydrate timeout", env("CRAFT_APPS_HYDRATE_TIMEOUT_SECS", "3"), func(a *config.API) { a.HydrateTimeout = 3 * time.Second }, nil, nil},
		{"no hydrate timeout", env("CRAFT_APPS_HYDRATE_TIMEOUT_SECS", "0"), func(a *config.API) { a.HydrateTimeout = 0 }, nil, nil},
		{"negative hydrate timeout", env("CRAFT_APPS_HYDRATE_TIMEOUT_SECS", "-10"), func(a *config.API) { a.HydrateTimeout = 0 },
			[]string{"CRAFT_APPS_HYDRATE_TIMEOUT_SECS=-10 is below the minimum 0: using 0"}, nil},
		{"hydrate timeout bad", env("CRAFT_APPS_HYDRATE_TIMEOUT_SECS", "ten"), nil, nil, []string{`CRAFT_APPS_HYDRATE_TIMEOUT_SECS: "ten" is not a whole number`}},
		{"shutdown timeout", env("SHUTDOWN_TIMEOUT_SECS", "30"), func(a *config.API) { a.ShutdownTimeout = 30 * time.Second }, nil, nil},
		{"negative shutdown timeout", env("SHUTDOWN_TIMEOUT_SECS", "-5"), func(a *config.API) { a.ShutdownTimeout = 0 },
			[]string{"SHUTDOWN_TIMEOUT_SECS=-5 is below the minimum 0: using 0"}, nil},
		{"shutdown timeout bad", env("SHUTDOWN_TIMEOUT_SECS", "15s"), nil, nil, []string{`SHUTDOWN_TIMEOUT_SECS: "15s" is not a whole number`}},
		{"redis", env("REDIS_URL", localRedis), func(a *config.API) { a.Redis.URL = localRedis }, nil, nil},
		{"redis without coordination", env("REDIS_URL", localRedis, coordVar, "false"), func(a *config.API) { a.Redis.URL, a.CoordinationEnabled = localRedis, false }, nil, nil},
		{"webhook secret blank", env(webhook, "   "), nil, nil, nil},
		{"webhook secrets, two while rotating, trimmed", env(webhook, " old , new "), func(a *config.API) { a.WebhookSecrets = []config.Secret{"old", "new"} }, nil, nil},
		{"three webhook secrets", env(webhook, "a,b,c"), nil, nil, []string{webhook + ": 3 secrets, want one, or two"}},
		{"an empty webhook secret", env(webhook, webhookSecret+","), nil, nil, []string{webhook + ": an empty secret"}},
		{"a comma alone as webhook secret", env(webhook, ","), nil, nil, []string{webhook + ": an empty secret"}},
	}, defaultAPI, func(_ *testing.T, vars map[string]string) (config.API, []string, error) {
		return config.LoadAPI(lookup(vars))
	})
}

// TestLoadPoller covers the variables only cmd/poller reads, and what the
// poller refuses that the API takes: a good value, or an error naming every
// wrong variable, the DSN check's beside config's own.
func TestLoadPoller(t *testing.T) {
	runLoads(t, []loadCase[config.Poller]{
		{"defaults", nil, nil, nil, nil},
		{"http addr", env("HTTP_ADDR", ":9191"), func(p *config.Poller) { p.HTTPAddr = ":9191" }, nil, nil},
		{"shutdown timeout", env("SHUTDOWN_TIMEOUT_SECS", "5"), func(p *config.Poller) { p.ShutdownTimeout = 5 * time.Second }, nil, nil},
		{"shutdown timeout bad", env("SHUTDOWN_TIMEOUT_SECS", "5s"), nil, nil, []string{`SHUTDOWN_TIMEOUT_SECS: "5s" is not a whole number`}},
		{"no redis while coordinated", env("REDIS_URL", ""), nil, nil, []string{"REDIS_URL: empty", coordVar + "=false"}},
		{"blank redis while coordinated", env("REDIS_URL", "  "), nil, nil, []string{"REDIS_URL: empty"}},
		{"no redis without coordination", env("REDIS_URL", "", coordVar, "false"), func(p *config.Poller) { p.Redis.URL, p.CoordinationEnabled = "", false }, nil, nil},
		{"redis without coordination", env(coordVar, "false"), func(p *config.Poller) { p.CoordinationEnabled = false }, nil, nil},
		{"mysql without redis", env("REDIS_URL", "", "MYSQL_DSN", "u@tcp(h)/d", coordVar, "false"), nil, nil, []string{"REDIS_URL: empty, yet MySQL is set"}},
		{"the DSN check's error beside the rest", env("MYSQL_URL", "mysql://u@refuse/d", "HTTP_ADDR", "nowhere"), nil, nil, []string{"MYSQL_URL: refused", `HTTP_ADDR: "nowhere" is not host:port`}},
	}, defaultPoller, func(_ *testing.T, vars map[string]string) (config.Poller, []string, error) { return loadPoller(vars) })
}

// TestStandalone: the API polls GitHub itself without REDIS_URL, or with
// coordination off.
func TestStandalone(t *testing.T) {
	for _, tc := range []struct {
		redis        config.SecretURL
		coord, alone bool
	}{{"", true, true}, {localRedis, true, false}, {localRedis, false, true}, {"", false, true}} {
		a := config.API{Shared: config.Shared{Redis: config.Redis{URL: tc.redis}}, Polling: config.Polling{CoordinationEnabled: tc.coord}}
		if got := a.Standalone(); got != tc.alone {
			t.Errorf("Standalone() with REDIS_URL %q, coordination %v = %v, want %v", tc.redis, tc.coord, got, tc.alone)
		}
	}
}

// TestLoadReadsOnlyGetenv checks that the process environment, which env
// would read by default, plays no part.
func TestLoadReadsOnlyGetenv(t *testing.T) {
	t.Setenv("LOG_LEVEL", "debug")
	t.Setenv("REDIS_URL", localRedis)
	t.Setenv("CRAFT_APPS_RELEASE_TICK_SECS", "abc")
	a, _, err := config.LoadAPI(lookup(nil))
	if err != nil {
		t.Fatalf("LoadAPI(empty getenv): %v", err)
	}
	if a.LogLevel != zapcore.InfoLevel || a.Redis.URL != "" {
		t.Errorf("LoadAPI(empty getenv) = level %v, redis %q; want info and empty, not the process environment", a.LogLevel, a.Redis.URL)
	}
	if _, _, err := config.LoadPoller(lookup(nil), checkDSN); err == nil {
		t.Errorf("LoadPoller(empty getenv): no error, want one for the missing REDIS_URL")
	}
}

// TestLoadAsksForNames checks that the loaders ask getenv for exactly the
// variables Names lists, so a manifest check built on Names is true.
func TestLoadAsksForNames(t *testing.T) {
	for _, bin := range []string{"api", "poller"} {
		var asked []string
		getenv := func(name string) string {
			asked = append(asked, name)
			return ""
		}
		if bin == "api" {
			_, _, _ = config.LoadAPI(getenv) // only the names it asks for matter here
		} else {
			_, _, _ = config.LoadPoller(getenv, checkDSN)
		}
		if want := config.Names(bin); !slices.Equal(asked, want) {
			t.Errorf("getenv asked for\n %q\nwant Names(%q) =\n %q", asked, bin, want)
		}
	}
}

func TestTiming(t *testing.T) {
	p := config.Polling{PollInterval: time.Minute, MaxBackoff: 2 * time.Minute, StartupJitter: 3 * time.Second, Tick: 4 * time.Second, RequestSpacing: 5 * time.Millisecond}
	want := schedule.Timing{Interval: time.Minute, MaxBackoff: 2 * time.Minute, Tick: 4 * time.Second, Spacing: 5 * time.Millisecond, StartupJitter: 3 * time.Second}
	if got := p.Timing(); got != want {
		t.Errorf("Timing() = %+v, want %+v", got, want)
	}
}
