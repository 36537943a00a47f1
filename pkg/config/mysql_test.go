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

// TestLoadMySQL covers every MySQL variable: a good value (a raise with its
// warning), or an error naming the variable; the poller reads the same.
func TestLoadMySQL(t *testing.T) {
	const lifetime, old = "MYSQL_MAX_LIFETIME_SECS", "MYSQL_MAX_LIFETIME_SECONDS"
	dsn := "craft:" + mysqlPassword + "@tcp(db.internal:3306)/craft?tls=true"
	withDSN := func(f func(*config.MySQL)) func(*config.MySQL) {
		return func(m *config.MySQL) { m.DSN = config.Secret(dsn); f(m) }
	}
	raised := func(v string) string { return v + "=0 is below the minimum 1: using 1" }
	runLoads(t, []loadCase[config.MySQL]{
		{"a dsn", env("MYSQL_DSN", dsn), withDSN(func(*config.MySQL) {}), nil, nil},
		{"a url, as the check converts it", env("MYSQL_URL", "mysql://craft@db.internal/craft"), func(m *config.MySQL) { m.DSN = "converted mysql://craft@db.internal/craft" }, nil, nil},
		{"every setting", env("MYSQL_DSN", dsn, "MYSQL_MAX_CONNECTIONS", "8", lifetime, "300", "MYSQL_QUERY_TIMEOUT_SECS", "2",
			"MYSQL_POLLER_REPLICAS", "5", "CRAFT_APPS_META_REFRESH_SECS", "30"), withDSN(func(m *config.MySQL) {
			m.MaxConns, m.MaxLifetime, m.QueryTimeout, m.Replicas, m.Refresh = 8, 300*time.Second, 2*time.Second, 5, 30*time.Second
		}), nil, nil},
		{"the lifetime's old name", env("MYSQL_DSN", dsn, old, "300"), withDSN(func(m *config.MySQL) { m.MaxLifetime = 300 * time.Second }), nil, nil},
		{"zeros raised to the minimums", env("MYSQL_DSN", dsn, "MYSQL_MAX_CONNECTIONS", "0", lifetime, "0", "MYSQL_QUERY_TIMEOUT_SECS", "0",
			"MYSQL_POLLER_REPLICAS", "0", "CRAFT_APPS_META_REFRESH_SECS", "0"), withDSN(func(m *config.MySQL) {
			m.MaxConns, m.MaxLifetime, m.QueryTimeout, m.Replicas, m.Refresh = 1, time.Second, time.Second, 1, time.Second
		}), []string{raised("MYSQL_MAX_CONNECTIONS"), raised("MYSQL_POLLER_REPLICAS"), raised(lifetime),
			raised("MYSQL_QUERY_TIMEOUT_SECS"), raised("CRAFT_APPS_META_REFRESH_SECS")}, nil},
		{"the old name's warning names it", env("MYSQL_DSN", dsn, old, "0"), withDSN(func(m *config.MySQL) { m.MaxLifetime = time.Second }), []string{raised(old)}, nil},

		{"nothing set", nil, nil, nil, []string{"MYSQL_DSN: unset, and so is MYSQL_URL"}},
		{"connections not a number", env("MYSQL_DSN", dsn, "MYSQL_MAX_CONNECTIONS", "four"), nil, nil, []string{`MYSQL_MAX_CONNECTIONS: "four" is not a whole number`}},
		{"connections too many", env("MYSQL_DSN", dsn, "MYSQL_MAX_CONNECTIONS", "9999999999"), nil, nil, []string{`MYSQL_MAX_CONNECTIONS: "9999999999" is too large`}},
		{"lifetime with a unit", env("MYSQL_DSN", dsn, lifetime, "10m"), nil, nil, []string{lifetime + `: "10m" is not a whole number`}},
		{"lifetime's old name with a unit", env("MYSQL_DSN", dsn, old, "10m"), nil, nil, []string{old + `: "10m" is not a whole number`}},
		{"lifetime under both names", env("MYSQL_DSN", dsn, lifetime, "300", old, "300"), nil, nil, []string{lifetime + ": set, and so is its old name " + old + ": set only " + lifetime}},
		{"query timeout", env("MYSQL_DSN", dsn, "MYSQL_QUERY_TIMEOUT_SECS", "1.5"), nil, nil, []string{`MYSQL_QUERY_TIMEOUT_SECS: "1.5" is not a whole number`}},
		{"replicas", env("MYSQL_DSN", dsn, "MYSQL_POLLER_REPLICAS", "x"), nil, nil, []string{`MYSQL_POLLER_REPLICAS: "x" is not a whole number`}},
		{"refresh", env("MYSQL_DSN", dsn, "CRAFT_APPS_META_REFRESH_SECS", "1.5"), nil, nil, []string{`CRAFT_APPS_META_REFRESH_SECS: "1.5" is not a whole number`}},
		{"the check's error beside config's own", env("MYSQL_URL", "mysql://u:"+mysqlPassword+"@refuse/d", "MYSQL_POLLER_REPLICAS", "x"), nil, nil,
			[]string{"MYSQL_URL: refused", `MYSQL_POLLER_REPLICAS: "x" is not a whole number`}},
	}, defaultMySQL, func(t *testing.T, vars map[string]string) (config.MySQL, []string, error) {
		m, warnings, err := config.LoadMySQL(lookup(vars), checkDSN)
		if err == nil {
			if p, _, err := loadPoller(vars); err != nil || !reflect.DeepEqual(p.MySQL, m) {
				t.Errorf("LoadPoller's MySQL = %+v (error %v), want LoadMySQL's %+v", p.MySQL, err, m)
			}
		}
		return m, warnings, err
	})
}

// checkDSN is a DSNCheck that takes a DSN as it is, refuses a URL to the
// host "refuse" and marks another as converted; meta.DSN's own tests check
// the DSN.
func checkDSN(dsn, url string) (string, error) {
	switch {
	case strings.Contains(url, "@refuse/"):
		return "", errors.New("MYSQL_URL: refused")
	case url != "":
		return "converted " + url, nil
	}
	return dsn, nil
}
