// Package config reads the settings of cmd/api and cmd/poller from the
// environment (docs/config.md): it parses every variable with caarlos0/env,
// checks it, raises a value below its minimum with a warning, and keeps
// secrets out of every printed form.
package config

import (
	"errors"
	"fmt"
	"maps"
	"net"
	"net/url"
	"slices"
	"strings"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/storytold/craft-releases/pkg/minisign"
	"github.com/storytold/craft-releases/pkg/redis"
	"github.com/storytold/craft-releases/pkg/release"
	"github.com/storytold/craft-releases/pkg/schedule"
	"github.com/storytold/craft-releases/pkg/secret"
)

// The log formats of LOG_FORMAT.
const (
	FormatJSON    = "json"
	FormatConsole = "console"
)

// Shared holds the settings both binaries read.
type Shared struct {
	Redis     Redis         // REDIS_URL and the REDIS_TLS_* files; the zero value: no Redis
	Apps      []release.App // CRAFT_APPS_RELEASE_APPS, in configured order, with CRAFT_APPS_RELEASE_PRERELEASE_APPS's marked and CRAFT_APPS_RELEASE_TAG_PREFIXES's prefixes
	LogLevel  zapcore.Level // debug, info, warn or error
	LogFormat string        // FormatJSON or FormatConsole

	// PublicKeys are CRAFT_APPS_RELEASE_TAURI_PUBKEYS's, by app key (nil:
	// none): the pollers refuse a signature by another key.
	PublicKeys map[string]minisign.PublicKey
}

// Redis is REDIS_URL with the REDIS_TLS_* files: as set, for printing, and
// parsed, for the clients.
type Redis struct {
	URL     SecretURL     // as set, masked when printed; empty: no Redis
	TLS     RedisTLS      // the files, printed as their names
	Options redis.Options // both, parsed: what the clients take
}

// Entries returns the entries the pollers keep for the apps: each app and,
// after it, its pre-release entry when it has the channel (release.Entries).
// Each is one GitHub request per interval.
func (s Shared) Entries() []release.App { return release.Entries(s.Apps) }

// Configured reports whether REDIS_URL is set.
func (r Redis) Configured() bool { return r.URL != "" }

// Polling holds the settings of the poller, which cmd/api also uses when it
// polls GitHub itself (standalone mode).
type Polling struct {
	Enabled             bool   // false: no GitHub requests at all
	CoordinationEnabled bool   // false: never read Redis for claims, freshness or backoff
	GitHubAPIURL        string // an absolute http(s) URL ending with "/"
	GitHubToken         Secret // trimmed; empty: unauthenticated requests

	PollInterval   time.Duration // I; its default and minimum depend on the token and the API URL
	MaxBackoff     time.Duration // at least PollInterval
	StartupJitter  time.Duration
	Tick           time.Duration // at least 1 s
	RequestSpacing time.Duration
}

// API holds every setting of cmd/api.
type API struct {
	Shared
	Polling
	HTTPAddr        string // host:port of the endpoint, /healthz and /readyz: the public port
	MetricsAddr     string // host:port of /metrics, /healthz and /readyz: not public
	MaxConnections  int    // the cap on open connections of HTTPAddr
	HydrateTimeout  time.Duration
	ShutdownTimeout time.Duration
	// WebhookSecrets are the GitHub webhook secrets, one or two (while
	// rotating), each trimmed and not empty; none: no webhook route.
	WebhookSecrets []Secret
	// Cloudflare is the purge on every release, which the API sends only
	// standalone.
	Cloudflare Cloudflare
}

// Poller holds every setting of cmd/poller. ShutdownTimeout is an addition
// to docs/config.md, which gives it to cmd/api only: the poller needs a bound on
// its shutdown too.
type Poller struct {
	Shared
	Polling
	HTTPAddr        string // host:port of /healthz, /readyz and /metrics
	ShutdownTimeout time.Duration
	MySQL           MySQL      // the renames and notices; MySQL.DSN empty: none
	Cloudflare      Cloudflare // the purge on every release
}

// LoadAPI reads the settings of cmd/api through getenv (os.Getenv in main),
// calling it once for each of Names("api") and for nothing else; it is safe
// for concurrent use if getenv is. Values are trimmed, and a blank one takes
// the default. It returns the checked settings and one warning for each
// value it raised to its minimum, for the caller to log. The error names
// every variable that is wrong and what is wrong with it, never a secret's
// value; the settings are then zero.
func LoadAPI(getenv func(string) string) (API, []string, error) {
	var raw apiEnv
	parseErr := parse(&raw, getenv)
	var c checker
	a := API{
		Shared:      raw.Shared.check(&c),
		HTTPAddr:    raw.HTTPAddr,
		MetricsAddr: raw.MetricsAddr,
	}
	a.MaxConnections = int(c.atLeast("HTTP_MAX_CONNECTIONS", time.Duration(raw.MaxConnections), 1, 1, ""))
	a.HydrateTimeout = c.atLeast("CRAFT_APPS_HYDRATE_TIMEOUT_SECS", time.Duration(raw.HydrateTimeout), 0, time.Second, "")
	a.ShutdownTimeout = c.atLeast("SHUTDOWN_TIMEOUT_SECS", time.Duration(raw.ShutdownTimeout), 0, time.Second, "")
	a.Polling = raw.Polling.check(&c)
	c.checkAddr("HTTP_ADDR", a.HTTPAddr)
	c.checkAddr("METRICS_ADDR", a.MetricsAddr)
	if samePort(a.HTTPAddr, a.MetricsAddr) {
		c.fail("METRICS_ADDR", "%q has the port of HTTP_ADDR: /metrics is served on a port of its own, which is not public", a.MetricsAddr)
	}
	a.WebhookSecrets = c.webhookSecrets(raw.WebhookSecret)
	a.Cloudflare = raw.Cloudflare.check(&c)
	if err := errors.Join(parseErr, c.err()); err != nil {
		return API{}, nil, err
	}
	return a, c.warnings, nil
}

// LoadPoller reads the settings of cmd/poller through getenv, as LoadAPI
// does, with dsn (meta.DSN) checking MYSQL_DSN or MYSQL_URL, so that one
// error still names every wrong variable. Unlike the API, the poller refuses
// an empty REDIS_URL unless coordination is off, and a MySQL DSN without a
// REDIS_URL, since the renames and notices are shared through Redis.
func LoadPoller(getenv func(string) string, dsn DSNCheck) (Poller, []string, error) {
	var raw pollerEnv
	parseErr := parse(&raw, getenv)
	var c checker
	p := Poller{
		Shared:          raw.Shared.check(&c),
		HTTPAddr:        raw.HTTPAddr,
		ShutdownTimeout: c.atLeast("SHUTDOWN_TIMEOUT_SECS", time.Duration(raw.ShutdownTimeout), 0, time.Second, ""),
	}
	p.Polling = raw.Polling.check(&c)
	c.checkAddr("HTTP_ADDR", p.HTTPAddr)
	p.MySQL = raw.MySQL.check(&c, dsn)
	p.Cloudflare = raw.Cloudflare.check(&c)
	if !p.Redis.Configured() && p.CoordinationEnabled {
		c.fail("REDIS_URL", "empty; the poller needs Redis unless CRAFT_APPS_RELEASE_COORDINATION_ENABLED=false")
	}
	if !p.Redis.Configured() && p.MySQL.Enabled() {
		c.fail("REDIS_URL", "empty, yet MySQL is set: the renames and notices are shared through Redis")
	}
	if err := errors.Join(parseErr, c.err()); err != nil {
		return Poller{}, nil, err
	}
	return p, c.warnings, nil
}

// Standalone reports whether cmd/api polls GitHub itself instead of reading
// what the pollers share through Redis: with no REDIS_URL, or with
// coordination off.
func (a API) Standalone() bool { return !a.Redis.Configured() || !a.CoordinationEnabled }

// Timing returns the poller's timing for the schedule rules.
func (p Polling) Timing() schedule.Timing {
	return schedule.Timing{
		Interval:      p.PollInterval,
		MaxBackoff:    p.MaxBackoff,
		Tick:          p.Tick,
		Spacing:       p.RequestSpacing,
		StartupJitter: p.StartupJitter,
	}
}

// Fields returns the resolved settings, secrets masked, for the one start-up
// log line.
func (a API) Fields() []zap.Field {
	return append(append(append(a.Shared.fields(), a.Polling.fields()...),
		zap.String("http_addr", a.HTTPAddr),
		zap.String("metrics_addr", a.MetricsAddr),
		zap.Int("max_connections", a.MaxConnections),
		zap.Duration("hydrate_timeout", a.HydrateTimeout),
		zap.Duration("shutdown_timeout", a.ShutdownTimeout),
		zap.Bool("standalone", a.Standalone()),
		zap.Int("webhook_secrets", len(a.WebhookSecrets)),
	), a.Cloudflare.fields()...)
}

// webhookSecrets splits CRAFT_APPS_RELEASE_WEBHOOK_SECRET (already trimmed;
// "" for unset) into its one or two secrets. The errors never quote a secret.
func (c *checker) webhookSecrets(s string) []Secret {
	if s == "" {
		return nil
	}
	parts := strings.Split(s, ",")
	if len(parts) > 2 {
		c.fail("CRAFT_APPS_RELEASE_WEBHOOK_SECRET", "%d secrets, want one, or two separated by a comma while rotating", len(parts))
		return nil
	}
	out := make([]Secret, 0, len(parts))
	for _, p := range parts {
		p = strings.TrimSpace(p)
		if p == "" {
			c.fail("CRAFT_APPS_RELEASE_WEBHOOK_SECRET", "an empty secret beside a comma")
			return nil
		}
		out = append(out, Secret(p))
	}
	return out
}

// Fields returns the resolved settings, secrets masked, for the one start-up
// log line.
func (p Poller) Fields() []zap.Field {
	return append(append(append(p.Shared.fields(), p.Polling.fields()...),
		zap.String("http_addr", p.HTTPAddr),
		zap.Duration("shutdown_timeout", p.ShutdownTimeout),
	), append(p.MySQL.fields(), p.Cloudflare.fields()...)...)
}

func (s Shared) fields() []zap.Field {
	keys := make([]string, len(s.Apps))
	for i, app := range s.Apps {
		keys[i] = app.Key
	}
	fields := []zap.Field{
		zap.String("redis_url", s.Redis.URL.String()),
		zap.Strings("apps", keys),
		zap.String("log_level", s.LogLevel.String()),
		zap.String("log_format", s.LogFormat),
	}
	var pre []string
	for _, app := range s.Apps {
		if app.Prereleases {
			pre = append(pre, app.Key)
		}
	}
	if pre != nil {
		fields = append(fields, zap.Strings("prerelease_apps", pre))
	}
	var prefixes []string
	for _, app := range s.Apps {
		if app.TagPrefix != "" {
			prefixes = append(prefixes, app.Key+"="+app.TagPrefix)
		}
	}
	if prefixes != nil {
		fields = append(fields, zap.Strings("tag_prefixes", prefixes))
	}
	if len(s.PublicKeys) > 0 {
		// Which app's signatures are checked against which key: the key
		// ids, which a refused signature's error names too.
		var keys []string
		for _, app := range slices.Sorted(maps.Keys(s.PublicKeys)) {
			keys = append(keys, app+"="+s.PublicKeys[app].KeyID.String())
		}
		fields = append(fields, zap.Strings("tauri_pubkeys", keys))
	}
	for i, name := range []string{"redis_tls_ca_file", "redis_tls_cert_file", "redis_tls_key_file"} {
		if s.Redis.TLS.files[i] != "" {
			fields = append(fields, zap.String(name, s.Redis.TLS.files[i]))
		}
	}
	return fields
}

func (p Polling) fields() []zap.Field {
	return []zap.Field{
		zap.String("github_api_url", p.GitHubAPIURL),
		zap.Bool("polling_enabled", p.Enabled),
		zap.Bool("coordination_enabled", p.CoordinationEnabled),
		zap.Bool("github_token_set", p.GitHubToken != ""),
		zap.Duration("poll_interval", p.PollInterval),
		zap.Duration("max_backoff", p.MaxBackoff),
		zap.Duration("startup_jitter", p.StartupJitter),
		zap.Duration("tick", p.Tick),
		zap.Duration("request_spacing", p.RequestSpacing),
	}
}

// checker gathers the problems of one load, so that one start-up reports
// every wrong variable at once.
type checker struct {
	errs     []error
	warnings []string
}

func (c *checker) fail(name, format string, args ...any) {
	c.errs = append(c.errs, fmt.Errorf("%s: "+format, append([]any{name}, args...)...))
}

func (c *checker) err() error { return errors.Join(c.errs...) }

// atLeast returns d, or floor with a warning when d is below it. why says
// where the minimum comes from, for the warning.
func (c *checker) atLeast(name string, d, floor, unit time.Duration, why string) time.Duration {
	if d >= floor {
		return d
	}
	c.warnings = append(c.warnings, fmt.Sprintf("%s=%d is below the minimum %d%s: using %d",
		name, d/unit, floor/unit, why, floor/unit))
	return floor
}

func (c *checker) checkAddr(name, addr string) {
	if _, port, err := net.SplitHostPort(addr); err != nil || port == "" {
		c.fail(name, "%q is not host:port (such as :8080)", addr)
	}
}

// samePort reports whether two listen addresses name the same port; port 0
// (any free port) is never the same.
func samePort(a, b string) bool {
	_, pa, errA := net.SplitHostPort(a)
	_, pb, errB := net.SplitHostPort(b)
	return errA == nil && errB == nil && pa != "" && pa != "0" && pa == pb
}

func (r sharedEnv) check(c *checker) Shared {
	s := Shared{Redis: Redis{URL: SecretURL(r.RedisURL)}}
	// The URL first, so that its problem is reported first; the TLS files
	// are checked against what it says (a URL that does not parse says
	// nothing).
	tlsURL := true
	if r.RedisURL != "" {
		opt, err := redis.Parse(r.RedisURL)
		if err != nil {
			c.fail("REDIS_URL", "%w", err)
		} else {
			s.Redis.Options, tlsURL = opt, opt.TLS()
		}
	} else {
		tlsURL = false
	}
	s.Redis.TLS = RedisTLS{config: r.redisTLS(c, tlsURL), files: [3]string{r.RedisTLSCA, r.RedisTLSCert, r.RedisTLSKey}}
	s.Redis.Options = s.Redis.Options.WithTLS(s.Redis.TLS.Config())
	apps, err := ParseApps(r.Apps)
	if err != nil {
		c.fail("CRAFT_APPS_RELEASE_APPS", "%w", err)
	} else {
		// Each list is checked against the apps even when the other is
		// wrong, so that one start-up names both.
		marked, err := WithPrereleases(apps, r.Prereleases)
		if err != nil {
			c.fail("CRAFT_APPS_RELEASE_PRERELEASE_APPS", "%w", err)
			marked = apps
		}
		if apps, err = WithTagPrefixes(marked, r.TagPrefixes); err != nil {
			c.fail("CRAFT_APPS_RELEASE_TAG_PREFIXES", "%w", err)
		}
		if s.PublicKeys, err = ParsePublicKeys(marked, r.TauriPubkeys); err != nil {
			c.fail("CRAFT_APPS_RELEASE_TAURI_PUBKEYS", "%w", err)
		}
	}
	s.Apps = apps
	switch level := strings.ToLower(r.LogLevel); level {
	case "debug", "info", "warn", "error":
		// ParseLevel cannot fail on these four.
		s.LogLevel, _ = zapcore.ParseLevel(level)
	default:
		c.fail("LOG_LEVEL", "%q is not debug, info, warn or error", r.LogLevel)
	}
	switch format := strings.ToLower(r.LogFormat); format {
	case FormatJSON, FormatConsole:
		s.LogFormat = format
	default:
		c.fail("LOG_FORMAT", "%q is not json or console", r.LogFormat)
	}
	return s
}

func (r pollingEnv) check(c *checker) Polling {
	apiURL, err := normalizeAPIURL(r.GitHubAPIURL, "CRAFT_APPS_RELEASE_GITHUB_TOKEN")
	if err != nil {
		c.fail("CRAFT_APPS_RELEASE_GITHUB_API_URL", "%q %w", secret.MaskURL(r.GitHubAPIURL), err)
	}
	p := Polling{
		GitHubAPIURL:        apiURL,
		Enabled:             bool(r.PollingEnabled),
		CoordinationEnabled: bool(r.CoordinationEnabled),
		GitHubToken:         Secret(r.GitHubToken), // parse trimmed it: blank is no token
		StartupJitter:       c.atLeast("CRAFT_APPS_RELEASE_STARTUP_JITTER_SECS", time.Duration(r.StartupJitter), 0, time.Second, ""),
		RequestSpacing:      c.atLeast("CRAFT_APPS_RELEASE_REQUEST_SPACING_MS", time.Duration(r.RequestSpacing), 0, time.Millisecond, ""),
	}
	// The minimum protects GitHub's quota (60 requests an hour per IP
	// without a token, 304s included); another API URL is a GitHub
	// Enterprise or a test fake with quotas of its own.
	interval, minimum, why := 1800*time.Second, time.Second, ""
	if p.GitHubToken != "" {
		interval = 120 * time.Second
	}
	if isGitHub(apiURL) {
		minimum, why = 300*time.Second, " for GitHub's API without a token"
		if p.GitHubToken != "" {
			minimum, why = 60*time.Second, " for GitHub's API with a token"
		}
	}
	if r.PollInterval != nil {
		interval = time.Duration(*r.PollInterval)
	}
	if p.GitHubToken != "" && cleartext(apiURL) {
		c.fail("CRAFT_APPS_RELEASE_GITHUB_TOKEN", "is set, and CRAFT_APPS_RELEASE_GITHUB_API_URL is http:// to a host that is not loopback: a token goes over cleartext only to loopback (use https://)")
	}
	p.PollInterval = c.atLeast("CRAFT_APPS_RELEASE_POLL_INTERVAL_SECS", interval, minimum, time.Second, why)
	p.MaxBackoff = c.atLeast("CRAFT_APPS_RELEASE_MAX_BACKOFF_SECS", time.Duration(r.MaxBackoff), p.PollInterval, time.Second, " (the poll interval)")
	p.Tick = c.atLeast("CRAFT_APPS_RELEASE_TICK_SECS", time.Duration(r.Tick), time.Second, time.Second, "")
	return p
}

// normalizeAPIURL checks that s is an absolute http(s) URL fit to be a base
// URL, and returns it ending with "/". The error does not repeat s; when s
// holds credentials it names tokenVar, the variable that carries them.
func normalizeAPIURL(s, tokenVar string) (string, error) {
	u, err := url.Parse(s)
	switch {
	case err != nil:
		return "", errors.New("is not a URL")
	case u.Scheme != "http" && u.Scheme != "https":
		return "", errors.New("is not an http or https URL")
	case u.Host == "":
		return "", errors.New("has no host")
	case u.User != nil:
		return "", errors.New("must not hold credentials; set " + tokenVar)
	case u.RawQuery != "" || u.ForceQuery || u.Fragment != "":
		return "", errors.New("must not have a query or a fragment")
	}
	if !strings.HasSuffix(u.Path, "/") {
		u.Path += "/"
		if u.RawPath != "" {
			u.RawPath += "/"
		}
	}
	return u.String(), nil
}

// cleartext reports whether apiURL, normalised, is http:// to a host that is
// not loopback, where a token would cross the network in the clear.
func cleartext(apiURL string) bool {
	u, err := url.Parse(apiURL)
	if err != nil || u.Scheme != "http" {
		return false
	}
	ip := net.ParseIP(u.Hostname())
	return !strings.EqualFold(u.Hostname(), "localhost") && (ip == nil || !ip.IsLoopback())
}

// isGitHub reports whether apiURL, normalised, is GitHub's own API. Only the
// host counts, so that no spelling of the URL escapes GitHub's minimum.
func isGitHub(apiURL string) bool {
	u, err := url.Parse(apiURL)
	return err == nil && strings.EqualFold(strings.TrimSuffix(u.Hostname(), "."), "api.github.com")
}
