package config_test

import (
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

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
		{"a url, as the check converts it", map[string]string{"MYSQL_URL": "mysql://craft@db.internal/craft"},
			func(m *config.MySQL) { m.DSN = "converted mysql://craft@db.internal/craft" }, nil},
		{"every setting", map[string]string{"MYSQL_DSN": dsn, "MYSQL_MAX_CONNECTIONS": "8", "MYSQL_MAX_LIFETIME_SECS": "300",
			"MYSQL_QUERY_TIMEOUT_SECS": "2", "MYSQL_POLLER_REPLICAS": "5", "CRAFT_APPS_META_REFRESH_SECS": "30"},
			func(m *config.MySQL) {
				*m = config.MySQL{DSN: config.Secret(dsn), MaxConns: 8, MaxLifetime: 300 * time.Second,
					QueryTimeout: 2 * time.Second, Replicas: 5, Refresh: 30 * time.Second}
			}, nil},
		{"the lifetime's old name", map[string]string{"MYSQL_DSN": dsn, "MYSQL_MAX_LIFETIME_SECONDS": "300"},
			func(m *config.MySQL) { m.DSN, m.MaxLifetime = config.Secret(dsn), 300*time.Second }, nil},
		{"zeros raised to the minimums", map[string]string{"MYSQL_DSN": dsn, "MYSQL_MAX_CONNECTIONS": "0", "MYSQL_MAX_LIFETIME_SECS": "0",
			"MYSQL_QUERY_TIMEOUT_SECS": "0", "MYSQL_POLLER_REPLICAS": "0", "CRAFT_APPS_META_REFRESH_SECS": "0"},
			func(m *config.MySQL) {
				*m = config.MySQL{DSN: config.Secret(dsn), MaxConns: 1, MaxLifetime: time.Second,
					QueryTimeout: time.Second, Replicas: 1, Refresh: time.Second}
			},
			[]string{"MYSQL_MAX_CONNECTIONS=0", "MYSQL_POLLER_REPLICAS=0", "MYSQL_MAX_LIFETIME_SECS=0",
				"MYSQL_QUERY_TIMEOUT_SECS=0", "CRAFT_APPS_META_REFRESH_SECS=0"}},
		{"the old name's warning names it", map[string]string{"MYSQL_DSN": dsn, "MYSQL_MAX_LIFETIME_SECONDS": "0"},
			func(m *config.MySQL) { m.DSN, m.MaxLifetime = config.Secret(dsn), time.Second },
			[]string{"MYSQL_MAX_LIFETIME_SECONDS=0"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, warnings, err := config.LoadMySQL(lookup(tc.vars), convertURL)
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
			p, _, err := config.LoadPoller(lookup(with(tc.vars, "REDIS_URL", "redis://127.0.0.1:6379")), convertURL)
			if err != nil {
				t.Fatalf("LoadPoller: %v", err)
			}
			if !reflect.DeepEqual(p.MySQL, got) {
				t.Errorf("LoadPoller's MySQL = %+v, want LoadMySQL's %+v", p.MySQL, got)
			}
		})
	}
}

// convertURL is a DSNCheck that takes a DSN as it is and marks a URL as
// converted.
func convertURL(dsn, url string) (string, error) {
	if url != "" {
		return "converted " + url, nil
	}
	return dsn, nil
}

func TestLoadMySQLBad(t *testing.T) {
	tests := []struct {
		name string
		vars map[string]string
		want []string
	}{
		{"nothing set", map[string]string{}, []string{"MYSQL_DSN: unset, and so is MYSQL_URL"}},
		{"connections not a number", map[string]string{"MYSQL_DSN": "u@tcp(h)/d", "MYSQL_MAX_CONNECTIONS": "four"},
			[]string{`MYSQL_MAX_CONNECTIONS: "four" is not a whole number`}},
		{"connections too many", map[string]string{"MYSQL_DSN": "u@tcp(h)/d", "MYSQL_MAX_CONNECTIONS": "9999999999"},
			[]string{`MYSQL_MAX_CONNECTIONS: "9999999999" is too large`}},
		{"lifetime with a unit", map[string]string{"MYSQL_DSN": "u@tcp(h)/d", "MYSQL_MAX_LIFETIME_SECS": "10m"},
			[]string{`MYSQL_MAX_LIFETIME_SECS: "10m" is not a whole number`}},
		{"lifetime's old name with a unit", map[string]string{"MYSQL_DSN": "u@tcp(h)/d", "MYSQL_MAX_LIFETIME_SECONDS": "10m"},
			[]string{`MYSQL_MAX_LIFETIME_SECONDS: "10m" is not a whole number`}},
		{"lifetime under both names", map[string]string{"MYSQL_DSN": "u@tcp(h)/d", "MYSQL_MAX_LIFETIME_SECS": "300", "MYSQL_MAX_LIFETIME_SECONDS": "300"},
			[]string{"MYSQL_MAX_LIFETIME_SECS: set, and so is its old name MYSQL_MAX_LIFETIME_SECONDS: set only MYSQL_MAX_LIFETIME_SECS"}},
		{"query timeout", map[string]string{"MYSQL_DSN": "u@tcp(h)/d", "MYSQL_QUERY_TIMEOUT_SECS": "1.5"},
			[]string{`MYSQL_QUERY_TIMEOUT_SECS: "1.5" is not a whole number`}},
		{"replicas", map[string]string{"MYSQL_DSN": "u@tcp(h)/d", "MYSQL_POLLER_REPLICAS": "x"},
			[]string{`MYSQL_POLLER_REPLICAS: "x" is not a whole number`}},
		{"refresh", map[string]string{"MYSQL_DSN": "u@tcp(h)/d", "CRAFT_APPS_META_REFRESH_SECS": "1.5"},
			[]string{`CRAFT_APPS_META_REFRESH_SECS: "1.5" is not a whole number`}},
		{"the check's error beside config's own", map[string]string{"MYSQL_URL": "mysql://u:" + mysqlPassword + "@h/d", "MYSQL_POLLER_REPLICAS": "x"},
			[]string{"MYSQL_URL: refused", `MYSQL_POLLER_REPLICAS: "x" is not a whole number`}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, warnings, err := config.LoadMySQL(lookup(tc.vars), refuseURL)
			if err == nil {
				t.Fatalf("LoadMySQL(%q) = %+v, want an error", tc.vars, got)
			}
			for _, want := range tc.want {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q, want it to contain %q", err, want)
				}
			}
			if got != (config.MySQL{}) || warnings != nil {
				t.Errorf("on error got %+v, warnings %q; want zero values", got, warnings)
			}
		})
	}
}

// refuseURL is a DSNCheck that takes a DSN and refuses every URL.
func refuseURL(dsn, url string) (string, error) {
	if url != "" {
		return "", errors.New("MYSQL_URL: refused")
	}
	return dsn, nil
}

// acceptDSN is a DSNCheck that takes whatever is set, for tests of
// everything but the DSN; meta.DSN's own tests check the DSN.
func acceptDSN(dsn, url string) (string, error) { return dsn + url, nil }
