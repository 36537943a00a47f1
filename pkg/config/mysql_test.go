package config_test

import (
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/storytold/craft-releases/pkg/config"
)

// mysqlPassword holds the characters a DSN or a URL must escape.
const mysqlPassword = "s3cr@t/pw:?"

func TestLoadMySQL(t *testing.T) {
	dsn := "craft:" + mysqlPassword + "@tcp(db.internal:3306)/craft?tls=true"
	tests := []struct {
		name     string
		vars     map[string]string
		want     func(*config.MySQL)
		warnings []string
	}{
		{"a dsn", map[string]string{"MYSQL_DSN": dsn}, func(m *config.MySQL) { m.DSN = config.Secret(dsn) }, nil},
		{"a url", map[string]string{"MYSQL_URL": "mysql://craft:s3cr%40t%2Fpw%3A%3F@db.internal:3307/craft?tls=true"},
			func(m *config.MySQL) { m.DSN = "craft:" + mysqlPassword + "@tcp(db.internal:3307)/craft?tls=true" }, nil},
		{"a url without a port", map[string]string{"MYSQL_URL": "mysql://craft@db.internal/craft"},
			func(m *config.MySQL) { m.DSN = "craft@tcp(db.internal:3306)/craft" }, nil},
		{"a url with an IPv6 host", map[string]string{"MYSQL_URL": "mysql://craft@[::1]/craft"},
			func(m *config.MySQL) { m.DSN = "craft@tcp([::1]:3306)/craft" }, nil},
		{"every setting", map[string]string{"MYSQL_DSN": dsn, "MYSQL_MAX_CONNECTIONS": "8", "MYSQL_MAX_LIFETIME_SECONDS": "300",
			"MYSQL_QUERY_TIMEOUT_SECS": "2", "MYSQL_POLLER_REPLICAS": "5", "CRAFT_APPS_META_REFRESH_SECS": "30"},
			func(m *config.MySQL) {
				*m = config.MySQL{DSN: config.Secret(dsn), MaxConns: 8, MaxLifetime: 300 * time.Second,
					QueryTimeout: 2 * time.Second, Replicas: 5, Refresh: 30 * time.Second}
			}, nil},
		{"zeros raised to the minimums", map[string]string{"MYSQL_DSN": dsn, "MYSQL_MAX_CONNECTIONS": "0", "MYSQL_MAX_LIFETIME_SECONDS": "0",
			"MYSQL_QUERY_TIMEOUT_SECS": "0", "MYSQL_POLLER_REPLICAS": "0", "CRAFT_APPS_META_REFRESH_SECS": "0"},
			func(m *config.MySQL) {
				*m = config.MySQL{DSN: config.Secret(dsn), MaxConns: 1, MaxLifetime: time.Second,
					QueryTimeout: time.Second, Replicas: 1, Refresh: time.Second}
			},
			[]string{"MYSQL_MAX_CONNECTIONS=0", "MYSQL_POLLER_REPLICAS=0", "MYSQL_MAX_LIFETIME_SECONDS=0",
				"MYSQL_QUERY_TIMEOUT_SECS=0", "CRAFT_APPS_META_REFRESH_SECS=0"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, warnings, err := config.LoadMySQL(lookup(tc.vars))
			if err != nil {
				t.Fatalf("LoadMySQL(%q): %v", tc.vars, err)
			}
			want := defaultMySQL()
			tc.want(&want)
			if !reflect.DeepEqual(got, want) || got.DSN.Reveal() != want.DSN.Reveal() {
				t.Errorf("LoadMySQL(%q):\n got %+v (dsn %q)\nwant %+v (dsn %q)", tc.vars, got, got.DSN.Reveal(), want, want.DSN.Reveal())
			}
			if len(warnings) != len(tc.warnings) {
				t.Fatalf("warnings %q, want %d", warnings, len(tc.warnings))
			}
			for i, w := range tc.warnings {
				if !strings.HasPrefix(warnings[i], w) {
					t.Errorf("warning %d = %q, want it to start with %q", i, warnings[i], w)
				}
			}
			// The poller reads the same settings.
			p, _, err := config.LoadPoller(lookup(with(tc.vars, "REDIS_URL", "redis://127.0.0.1:6379")))
			if err != nil {
				t.Fatalf("LoadPoller: %v", err)
			}
			if !reflect.DeepEqual(p.MySQL, got) {
				t.Errorf("LoadPoller's MySQL = %+v, want LoadMySQL's %+v", p.MySQL, got)
			}
		})
	}
}

func TestLoadMySQLBad(t *testing.T) {
	tests := []struct {
		name string
		vars map[string]string
		want []string
	}{
		{"nothing set", map[string]string{}, []string{"MYSQL_DSN: unset, and so is MYSQL_URL"}},
		{"both set", map[string]string{"MYSQL_DSN": "u:p@tcp(h:3306)/d", "MYSQL_URL": "mysql://u@h/d"},
			[]string{"MYSQL_DSN: set, and so is MYSQL_URL: set only one"}},
		{"a dsn without a database", map[string]string{"MYSQL_DSN": "craft:" + mysqlPassword + "@tcp(h:3306)"},
			[]string{"MYSQL_DSN: does not parse as user:password@tcp(host:port)/database"}},
		{"a dsn with an open address", map[string]string{"MYSQL_DSN": "craft:" + mysqlPassword + "@tcp(h:3306/d"},
			[]string{"MYSQL_DSN: does not parse", "network address not terminated"}},
		{"a dsn with a bad parameter", map[string]string{"MYSQL_DSN": "craft:" + mysqlPassword + "@tcp(h:3306)/d?parseTime=maybe"},
			[]string{"MYSQL_DSN: does not parse", "invalid bool value: maybe"}},
		{"a dsn with a collation interpolation cannot escape", map[string]string{"MYSQL_DSN": "u@tcp(h)/d?collation=gbk_chinese_ci"},
			[]string{"MYSQL_DSN: invalid DSN: interpolateParams can not be used with unsafe collations"}},
		{"a url with a collation interpolation cannot escape", map[string]string{"MYSQL_URL": "mysql://u@h/d?collation=sjis_japanese_ci"},
			[]string{"MYSQL_URL: invalid DSN: interpolateParams can not be used with unsafe collations"}},
		{"a url of another scheme", map[string]string{"MYSQL_URL": "postgres://craft:" + mysqlPassword + "@h/d"},
			[]string{`MYSQL_URL: scheme "postgres" is not mysql`}},
		{"a url without a database", map[string]string{"MYSQL_URL": "mysql://craft@h:3306"},
			[]string{"MYSQL_URL: names no database"}},
		{"a url with a path", map[string]string{"MYSQL_URL": "mysql://craft@h:3306/d/e"},
			[]string{"MYSQL_URL: names no database, or more than one"}},
		{"a url without a host", map[string]string{"MYSQL_URL": "mysql:///d"}, []string{"MYSQL_URL: has no host"}},
		{"a url that does not parse", map[string]string{"MYSQL_URL": "mysql://craft:pw%zz@h/d"},
			[]string{"MYSQL_URL: not a URL"}},
		{"a url with a bad parameter", map[string]string{"MYSQL_URL": "mysql://craft:pw@h/d?interpolateParams=perhaps"},
			[]string{"MYSQL_URL: parameters: invalid bool value: perhaps"}},
		{"a url with an unescaped password", map[string]string{"MYSQL_URL": "mysql://craft:" + mysqlPassword + "@h/d"},
			[]string{"MYSQL_URL: parameters hold '/' or '@'", "percent-encoded"}},
		{"connections not a number", map[string]string{"MYSQL_DSN": "u@tcp(h)/d", "MYSQL_MAX_CONNECTIONS": "four"},
			[]string{`MYSQL_MAX_CONNECTIONS: "four" is not a whole number`}},
		{"connections too many", map[string]string{"MYSQL_DSN": "u@tcp(h)/d", "MYSQL_MAX_CONNECTIONS": "9999999999"},
			[]string{`MYSQL_MAX_CONNECTIONS: "9999999999" is too large`}},
		{"lifetime with a unit", map[string]string{"MYSQL_DSN": "u@tcp(h)/d", "MYSQL_MAX_LIFETIME_SECONDS": "10m"},
			[]string{`MYSQL_MAX_LIFETIME_SECONDS: "10m" is not a whole number`}},
		{"query timeout", map[string]string{"MYSQL_DSN": "u@tcp(h)/d", "MYSQL_QUERY_TIMEOUT_SECS": "1.5"},
			[]string{`MYSQL_QUERY_TIMEOUT_SECS: "1.5" is not a whole number`}},
		{"replicas", map[string]string{"MYSQL_DSN": "u@tcp(h)/d", "MYSQL_POLLER_REPLICAS": "x"},
			[]string{`MYSQL_POLLER_REPLICAS: "x" is not a whole number`}},
		{"refresh", map[string]string{"MYSQL_DSN": "u@tcp(h)/d", "CRAFT_APPS_META_REFRESH_SECS": "1.5"},
			[]string{`CRAFT_APPS_META_REFRESH_SECS: "1.5" is not a whole number`}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, warnings, err := config.LoadMySQL(lookup(tc.vars))
			if err == nil {
				t.Fatalf("LoadMySQL(%q) = %+v, want an error", tc.vars, got)
			}
			for _, want := range tc.want {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q, want it to contain %q", err, want)
				}
			}
			for _, secret := range []string{mysqlPassword, "s3cr"} {
				if strings.Contains(err.Error(), secret) {
					t.Errorf("error %q holds the password", err)
				}
			}
			if got != (config.MySQL{}) || warnings != nil {
				t.Errorf("on error got %+v, warnings %q; want zero values", got, warnings)
			}
		})
	}
}

func TestPollerMySQLNeedsRedis(t *testing.T) {
	vars := map[string]string{"MYSQL_DSN": "u@tcp(h)/d", "CRAFT_APPS_RELEASE_COORDINATION_ENABLED": "false"}
	_, _, err := config.LoadPoller(lookup(vars))
	if err == nil || !strings.Contains(err.Error(), "REDIS_URL: empty, yet MySQL is set") {
		t.Errorf("LoadPoller(%q) error = %v, want one saying MySQL needs Redis", vars, err)
	}
	// The API has no MySQL settings at all: it never opens MySQL.
	if names := config.Names("api"); slices.ContainsFunc(names, func(n string) bool { return strings.HasPrefix(n, "MYSQL_") }) {
		t.Errorf("Names(api) = %q, want no MYSQL_ variable", names)
	}
}

func TestMySQLNeverPrintsPassword(t *testing.T) {
	for _, vars := range []map[string]string{
		{"REDIS_URL": "redis://127.0.0.1:6379", "MYSQL_DSN": "craft:" + mysqlPassword + "@tcp(db:3306)/craft"},
		{"REDIS_URL": "redis://127.0.0.1:6379", "MYSQL_URL": "mysql://craft:s3cr%40t%2Fpw%3A%3F@db/craft"},
	} {
		p, _, err := config.LoadPoller(lookup(vars))
		if err != nil {
			t.Fatalf("LoadPoller: %v", err)
		}
		if !strings.Contains(p.MySQL.DSN.Reveal(), mysqlPassword) {
			t.Fatalf("DSN %q lacks the password; the test would prove nothing", p.MySQL.DSN.Reveal())
		}
		printed := map[string]string{}
		for _, verb := range []string{"%v", "%+v", "%#v", "%s", "%q"} {
			printed["poller "+verb] = fmt.Sprintf(verb, p)
			printed["mysql "+verb] = fmt.Sprintf(verb, p.MySQL)
		}
		b, err := json.Marshal(p)
		if err != nil {
			t.Fatal(err)
		}
		printed["json"] = string(b)
		printed["log"] = logLine(t, zapcore.NewJSONEncoder(zap.NewProductionEncoderConfig()), p.Fields()...)
		for name, out := range printed {
			if strings.Contains(out, mysqlPassword) || strings.Contains(out, "s3cr") {
				t.Errorf("%s holds the password:\n%s", name, out)
			}
		}
	}
}
