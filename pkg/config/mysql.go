package config

import (
	"errors"
	"time"

	"go.uber.org/zap"
)

// MySQL holds the poller's MySQL settings, where the renames and notices
// live (pkg/mysql). The `poller migrate`, `notices` and `renames` subcommands
// read them too.
type MySQL struct {
	// DSN is the go-sql-driver/mysql data source name, from MYSQL_DSN or
	// converted from MYSQL_URL by the DSNCheck; empty: no MySQL, the lists
	// stay empty.
	DSN          Secret
	MaxConns     int           // MYSQL_MAX_CONNECTIONS, at least 1
	MaxLifetime  time.Duration // MYSQL_MAX_LIFETIME_SECS (or its old name), at least 1 s
	QueryTimeout time.Duration // MYSQL_QUERY_TIMEOUT_SECS, at least 1 s
	Replicas     int           // MYSQL_POLLER_REPLICAS, at least 1
	Refresh      time.Duration // CRAFT_APPS_META_REFRESH_SECS, at least 1 s
}

// A DSNCheck turns MYSQL_DSN and MYSQL_URL, as set (either may be empty),
// into the pool's data source name, or returns what is wrong, naming the
// variable and never quoting the password. meta.DSN is the one: the package
// that owns the pool owns its policy, and pkg/config cannot import it without
// linking the MySQL driver into the API.
type DSNCheck func(dsn, url string) (string, error)

// Enabled reports whether MySQL is configured.
func (m MySQL) Enabled() bool { return m.DSN != "" }

// LoadMySQL reads only the MySQL settings through getenv, as LoadPoller
// reads them with the same dsn check, for the subcommands that need nothing
// else. It refuses an empty DSN: they have nothing to work on without one.
func LoadMySQL(getenv func(string) string, dsn DSNCheck) (MySQL, []string, error) {
	var raw mysqlEnv
	parseErr := parse(&raw, getenv)
	var c checker
	m := raw.check(&c, dsn)
	if parseErr == nil && len(c.errs) == 0 && !m.Enabled() {
		c.fail("MYSQL_DSN", "unset, and so is MYSQL_URL: set one to reach the database")
	}
	if err := errors.Join(parseErr, c.err()); err != nil {
		return MySQL{}, nil, err
	}
	return m, c.warnings, nil
}

// defaultMaxLifetime is MYSQL_MAX_LIFETIME_SECS's default, as its helpDefault
// says.
const defaultMaxLifetime = 600 * time.Second

func (r mysqlEnv) check(c *checker, dsn DSNCheck) MySQL {
	m := MySQL{
		MaxConns: int(c.atLeast("MYSQL_MAX_CONNECTIONS", time.Duration(r.MySQLMaxConns), 1, 1, "")),
		Replicas: int(c.atLeast("MYSQL_POLLER_REPLICAS", time.Duration(r.MySQLReplicas), 1, 1, "")),
	}
	lifetime, name := defaultMaxLifetime, "MYSQL_MAX_LIFETIME_SECS"
	switch {
	case r.MySQLMaxLifetime != nil && r.MySQLMaxLifetimeOld != nil:
		c.fail("MYSQL_MAX_LIFETIME_SECS", "set, and so is its old name MYSQL_MAX_LIFETIME_SECONDS: set only MYSQL_MAX_LIFETIME_SECS")
	case r.MySQLMaxLifetime != nil:
		lifetime = time.Duration(*r.MySQLMaxLifetime)
	case r.MySQLMaxLifetimeOld != nil:
		lifetime, name = time.Duration(*r.MySQLMaxLifetimeOld), "MYSQL_MAX_LIFETIME_SECONDS"
	}
	m.MaxLifetime = c.atLeast(name, lifetime, time.Second, time.Second, "")
	m.QueryTimeout = c.atLeast("MYSQL_QUERY_TIMEOUT_SECS", time.Duration(r.MySQLQueryTimeout), time.Second, time.Second, "")
	m.Refresh = c.atLeast("CRAFT_APPS_META_REFRESH_SECS", time.Duration(r.MetaRefresh), time.Second, time.Second, "")
	if r.MySQLDSN != "" || r.MySQLURL != "" {
		s, err := dsn(r.MySQLDSN, r.MySQLURL)
		if err != nil {
			c.errs = append(c.errs, err)
		}
		m.DSN = Secret(s)
	}
	return m
}

func (m MySQL) fields() []zap.Field {
	return []zap.Field{
		zap.Bool("mysql", m.Enabled()),
		zap.Int("mysql_max_connections", m.MaxConns),
		zap.Duration("mysql_max_lifetime", m.MaxLifetime),
		zap.Duration("mysql_query_timeout", m.QueryTimeout),
		zap.Int("mysql_poller_replicas", m.Replicas),
		zap.Duration("meta_refresh", m.Refresh),
	}
}
