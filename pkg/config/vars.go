package config

import (
	"errors"
	"fmt"
	"io"
	"math"
	"reflect"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/caarlos0/env/v11"
)

// The structs below are the one list of environment variables: env parses
// them, and Names and Usage read the same tags, so they cannot disagree.
// Besides env's own tags, "help" is the one-line description for --help and
// "helpDefault" the default as --help shows it where envDefault cannot say it.

// sharedEnv holds the variables of both binaries.
type sharedEnv struct {
	RedisURL     string `env:"REDIS_URL" helpDefault:"(empty)" help:"redis://[user:password@]host:port[/db], rediss:// for TLS; ?addr=host:port&… for a cluster's other seeds, with &master_set=NAME for sentinels; empty: no Redis"`
	RedisTLSCA   string `env:"REDIS_TLS_CA_FILE" helpDefault:"(unset)" help:"PEM file of CA certificates that Redis's certificate may chain to, besides the system roots (which GitHub's requests keep using alone); needs rediss://"`
	RedisTLSCert string `env:"REDIS_TLS_CERT_FILE" helpDefault:"(unset)" help:"PEM file of a client certificate for a Redis that asks for one, with REDIS_TLS_KEY_FILE; needs rediss://"`
	RedisTLSKey  string `env:"REDIS_TLS_KEY_FILE" helpDefault:"(unset)" help:"PEM file of the private key of REDIS_TLS_CERT_FILE"`
	Apps         string `env:"CRAFT_APPS_RELEASE_APPS" helpDefault:"the 13 Craft Apps" help:"the apps to serve: key=Name=org/repo,key=Name=org/repo,…"`
	Prereleases  string `env:"CRAFT_APPS_RELEASE_PRERELEASE_APPS" helpDefault:"(none)" help:"the keys of the apps with a pre-release channel (latest_prerelease), comma-separated, or * for every app"`
	TagPrefixes  string `env:"CRAFT_APPS_RELEASE_TAG_PREFIXES" helpDefault:"(none)" help:"key=prefix,…: the prefix that starts an app's tags, removed with one v from its version (artcraft-launcher=artcraft-v: tag artcraft-v0.41.0, version 0.41.0)"`
	TauriPubkeys string `env:"CRAFT_APPS_RELEASE_TAURI_PUBKEYS" helpDefault:"(none)" help:"key=pubkey,…: an app's Tauri updater public key (tauri.conf.json's pubkey); a fetched signature by another key is refused"`
	LogLevel     string `env:"LOG_LEVEL" envDefault:"info" help:"debug, info, warn or error"`
	LogFormat    string `env:"LOG_FORMAT" envDefault:"json" help:"json for production, console for people"`
}

// pollingEnv holds the variables of the poller, which cmd/api reads too for
// its standalone mode.
type pollingEnv struct {
	PollingEnabled      boolean  `env:"CRAFT_APPS_RELEASE_POLLING_ENABLED" envDefault:"true" help:"false: no GitHub requests at all (the apps are still listed)"`
	CoordinationEnabled boolean  `env:"CRAFT_APPS_RELEASE_COORDINATION_ENABLED" envDefault:"true" help:"false: every process polls on its own; Redis is not read for claims, freshness or backoff"`
	GitHubAPIURL        string   `env:"CRAFT_APPS_RELEASE_GITHUB_API_URL" envDefault:"https://api.github.com/" help:"GitHub's REST API, GitHub Enterprise or a test fake"`
	GitHubToken         string   `env:"CRAFT_APPS_RELEASE_GITHUB_TOKEN" helpDefault:"(unset)" help:"optional GitHub token; unset, empty or blank: unauthenticated requests"`
	PollInterval        *seconds `env:"CRAFT_APPS_RELEASE_POLL_INTERVAL_SECS" helpDefault:"120 with a token, 1800 without" help:"seconds between two requests for one app; at least 60 with a token, 300 without, on GitHub's own API; else at least 1"`
	MaxBackoff          seconds  `env:"CRAFT_APPS_RELEASE_MAX_BACKOFF_SECS" envDefault:"14400" help:"seconds, the longest fleet backoff and the longest paced interval; at least the poll interval"`
	StartupJitter       seconds  `env:"CRAFT_APPS_RELEASE_STARTUP_JITTER_SECS" envDefault:"30" help:"seconds; the first tick waits a uniform 0…this"`
	Tick                seconds  `env:"CRAFT_APPS_RELEASE_TICK_SECS" envDefault:"30" help:"seconds between two ticks, ±10 %; at least 1"`
	RequestSpacing      millis   `env:"CRAFT_APPS_RELEASE_REQUEST_SPACING_MS" envDefault:"1000" help:"milliseconds between two GitHub requests of a round"`
}

// apiEnv holds every variable cmd/api reads.
type apiEnv struct {
	Shared          sharedEnv
	Polling         pollingEnv
	HTTPAddr        string  `env:"HTTP_ADDR" envDefault:":8080" help:"the public port: the endpoint, /healthz and /readyz"`
	MetricsAddr     string  `env:"METRICS_ADDR" envDefault:":9090" help:"the port that is not public: /metrics, /healthz and /readyz; another port than HTTP_ADDR's"`
	MaxConnections  count   `env:"HTTP_MAX_CONNECTIONS" envDefault:"1024" help:"open connections on HTTP_ADDR; at the cap the one idle (or without its request headers after 250 ms) for longest is closed for a new one; at least 1"`
	HydrateTimeout  seconds `env:"CRAFT_APPS_HYDRATE_TIMEOUT_SECS" envDefault:"10" help:"seconds; ready after the first load from Redis, or after this long without one"`
	ShutdownTimeout seconds `env:"SHUTDOWN_TIMEOUT_SECS" envDefault:"15" help:"seconds; on SIGTERM: unready at once, finish in-flight requests, then exit"`
	WebhookSecret   string  `env:"CRAFT_APPS_RELEASE_WEBHOOK_SECRET" helpDefault:"(unset)" help:"the GitHub webhook secret, or two separated by a comma while rotating; set: POST /v1/craft_apps/github_webhook is served"`
	Cloudflare      cloudflareEnv
}

// pollerEnv holds every variable cmd/poller reads.
type pollerEnv struct {
	Shared          sharedEnv
	Polling         pollingEnv
	HTTPAddr        string  `env:"HTTP_ADDR" envDefault:":9090" help:"the poller's /healthz, /readyz and /metrics"`
	ShutdownTimeout seconds `env:"SHUTDOWN_TIMEOUT_SECS" envDefault:"15" help:"seconds; on SIGTERM: unready at once, cancel the GitHub request in flight (no shared write is left half-done), then exit"`
	MySQL           mysqlEnv
	Cloudflare      cloudflareEnv
}

// mysqlEnv holds the poller's MySQL variables: where the renames and notices
// live. The API never opens MySQL, so it has none of them.
type mysqlEnv struct {
	MySQLDSN         string   `env:"MYSQL_DSN" helpDefault:"(unset)" help:"user:password@tcp(host:3306)/database as go-sql-driver/mysql takes it; unset, with MYSQL_URL unset: no renames or notices"`
	MySQLURL         string   `env:"MYSQL_URL" helpDefault:"(unset)" help:"mysql://user:password@host:3306/database, instead of MYSQL_DSN"`
	MySQLMaxConns    count    `env:"MYSQL_MAX_CONNECTIONS" envDefault:"4" help:"MySQL connections per poller; at least 1"`
	MySQLMaxLifetime *seconds `env:"MYSQL_MAX_LIFETIME_SECS" helpDefault:"600" help:"seconds before a MySQL connection is closed and replaced; at least 1"`
	// The old name, read as before; setting both is refused, so that no
	// manifest keeps a value that is silently ignored.
	MySQLMaxLifetimeOld *seconds `env:"MYSQL_MAX_LIFETIME_SECONDS" helpDefault:"(unset)" help:"the old name of MYSQL_MAX_LIFETIME_SECS, still read; set only one of the two"`
	MySQLQueryTimeout   seconds  `env:"MYSQL_QUERY_TIMEOUT_SECS" envDefault:"5" help:"seconds, the limit of every MySQL query; at least 1"`
	MySQLReplicas       count    `env:"MYSQL_POLLER_REPLICAS" envDefault:"3" help:"poller replicas sharing the MySQL server, for the start-up check of max_prepared_stmt_count; at least 1"`
	MetaRefresh         seconds  `env:"CRAFT_APPS_META_REFRESH_SECS" envDefault:"60" help:"seconds between two reads of the renames and notices from MySQL; at least 1"`
}

// boolean is a variable that is true or false (or 1/0, t/f as strconv allows).
type boolean bool

func (b *boolean) UnmarshalText(text []byte) error {
	v, err := strconv.ParseBool(string(text))
	if err != nil {
		return fmt.Errorf("%q is not true or false", text)
	}
	*b = boolean(v)
	return nil
}

// count is a variable holding a whole number. A negative one is kept for the
// checks to raise to the minimum with a warning, as for any value below it.
type count int

func (n *count) UnmarshalText(text []byte) error {
	d, err := wholeNumber(string(text), 1)
	if err == nil && int64(d) > math.MaxInt32 {
		return fmt.Errorf("%q is too large (at most %d)", text, math.MaxInt32)
	}
	if err == nil && int64(d) < math.MinInt32 {
		return fmt.Errorf("%q is out of range", text)
	}
	*n = count(d)
	return err
}

// seconds is a variable holding a whole number of seconds.
type seconds time.Duration

func (s *seconds) UnmarshalText(text []byte) error {
	d, err := wholeNumber(string(text), time.Second)
	*s = seconds(d)
	return err
}

// millis is a variable holding a whole number of milliseconds.
type millis time.Duration

func (m *millis) UnmarshalText(text []byte) error {
	d, err := wholeNumber(string(text), time.Millisecond)
	*m = millis(d)
	return err
}

// wholeNumber parses s as a count of unit, refusing what a time.Duration
// cannot hold. A negative count parses: it is below every minimum, and the
// checks raise it with a warning (docs/config.md).
func wholeNumber(s string, unit time.Duration) (time.Duration, error) {
	limit := int64(math.MaxInt64 / unit)
	n, err := strconv.ParseInt(s, 10, 64)
	switch {
	case errors.Is(err, strconv.ErrRange) && strings.HasPrefix(s, "-"), err == nil && n < -limit:
		return 0, fmt.Errorf("%q is out of range", s)
	case errors.Is(err, strconv.ErrRange), err == nil && n > limit:
		return 0, fmt.Errorf("%q is too large (at most %d)", s, limit)
	case err != nil:
		return 0, fmt.Errorf("%q is not a whole number", s)
	}
	return time.Duration(n) * unit, nil
}

// variable is one environment variable as the tags of an *Env struct say.
type variable struct {
	field string // the Go field that holds it, as env's errors name it
	name  string
	def   string // as --help shows it
	help  string
}

// variables lists the variables of an *Env struct type in field order, the
// variables of an untagged struct field in its place, as env walks them.
func variables(t reflect.Type) []variable {
	var vars []variable
	for f := range t.Fields() {
		name, _, _ := strings.Cut(f.Tag.Get("env"), ",")
		if name == "" {
			if f.Type.Kind() == reflect.Struct {
				vars = append(vars, variables(f.Type)...)
			}
			continue
		}
		def, ok := f.Tag.Lookup("helpDefault")
		if !ok {
			def = f.Tag.Get("envDefault")
		}
		vars = append(vars, variable{field: f.Name, name: name, def: def, help: f.Tag.Get("help")})
	}
	return vars
}

// binaryEnv returns the *Env struct type of a binary, or nil.
func binaryEnv(binary string) reflect.Type {
	switch binary {
	case "api":
		return reflect.TypeFor[apiEnv]()
	case "poller":
		return reflect.TypeFor[pollerEnv]()
	}
	return nil
}

// Names returns every environment variable that binary ("api" or "poller")
// reads, in the order Usage lists them; nil for any other binary.
func Names(binary string) []string {
	t := binaryEnv(binary)
	if t == nil {
		return nil
	}
	var names []string
	for _, v := range variables(t) {
		names = append(names, v.name)
	}
	return names
}

// Usage writes the --help text of binary ("api" or "poller"): every variable
// it reads, with its default and a one-line description. It writes nothing
// for any other binary, and ignores write errors, as a --help printer may.
func Usage(w io.Writer, binary string) {
	t := binaryEnv(binary)
	if t == nil {
		return
	}
	fmt.Fprintf(w, "%s reads its settings from these environment variables:\n\n", binary)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "VARIABLE\tDEFAULT\tDESCRIPTION")
	for _, v := range variables(t) {
		fmt.Fprintf(tw, "%s\t%s\t%s\n", v.name, v.def, v.help)
	}
	tw.Flush()
	if binary == "api" {
		fmt.Fprintln(w, "\n"+standaloneNote)
	}
}

// standaloneNote says when the API reads the polling settings, for --help
// and docs/config.md.
const standaloneNote = "The CRAFT_APPS_RELEASE_* polling settings apply when the API polls GitHub itself:\nwith no REDIS_URL, or with CRAFT_APPS_RELEASE_COORDINATION_ENABLED=false."

// reference writes the Markdown table of docs/config.md from the same tags as
// Usage: one row per variable, or one per binary where the binaries give a
// variable different defaults or descriptions.
func reference(w io.Writer) {
	type row struct {
		variable
		binaries []string
	}
	var rows []*row
	for _, binary := range []string{"api", "poller"} {
	next:
		for _, v := range variables(binaryEnv(binary)) {
			for _, r := range rows {
				if r.name == v.name && r.def == v.def && r.help == v.help {
					r.binaries = append(r.binaries, binary)
					continue next
				}
			}
			rows = append(rows, &row{variable: v, binaries: []string{binary}})
		}
	}
	cell := strings.NewReplacer("|", `\|`, "\n", " ").Replace
	fmt.Fprintln(w, "| variable | binaries | default | description |")
	fmt.Fprintln(w, "| --- | --- | --- | --- |")
	for _, r := range rows {
		def := "`" + r.def + "`"
		if r.def == "" || strings.HasPrefix(r.def, "(") || strings.Contains(r.def, " ") {
			def = r.def // a phrase, not a value
		}
		fmt.Fprintf(w, "| `%s` | %s | %s | %s |\n", r.name, strings.Join(r.binaries, ", "), cell(def), cell(r.help))
	}
	fmt.Fprintln(w, "\n"+cell(standaloneNote))
}

// parse fills raw, a pointer to an *Env struct, from getenv. Values are
// trimmed, and a blank one counts as unset. The error names each variable
// whose value does not parse.
func parse[T any](raw *T, getenv func(string) string) error {
	vars := variables(reflect.TypeFor[T]())
	// A non-nil map, even empty, keeps env from reading the process's
	// environment behind getenv's back.
	environment := make(map[string]string, len(vars))
	for _, v := range vars {
		if s := strings.TrimSpace(getenv(v.name)); s != "" {
			environment[v.name] = s
		}
	}
	err := env.ParseWithOptions(raw, env.Options{Environment: environment})
	if err == nil {
		return nil
	}
	var agg env.AggregateError
	if !errors.As(err, &agg) {
		return fmt.Errorf("read environment: %w", err)
	}
	names := make(map[string]string, len(vars))
	for _, v := range vars {
		names[v.field] = v.name
	}
	errs := make([]error, 0, len(agg.Errors))
	for _, e := range agg.Errors {
		var pe env.ParseError
		if errors.As(e, &pe) && names[pe.Name] != "" {
			// Our parsers say what is wrong; env's wrapping would name
			// the Go field instead of the variable.
			e = fmt.Errorf("%s: %w", names[pe.Name], pe.Err)
		}
		errs = append(errs, e)
	}
	return errors.Join(errs...)
}
