package config

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"strings"
	"time"

	"github.com/go-sql-driver/mysql"
	"go.uber.org/zap"
)

// MySQL holds the poller's MySQL settings, where the renames and notices
// live (pkg/meta). The `poller migrate`, `notices` and `renames` subcommands
// read them too.
type MySQL struct {
	// DSN is the go-sql-driver/mysql data source name, from MYSQL_DSN or
	// converted from MYSQL_URL; empty: no MySQL, the lists stay empty.
	DSN          Secret
	MaxConns     int           // MYSQL_MAX_CONNECTIONS, at least 1
	MaxLifetime  time.Duration // MYSQL_MAX_LIFETIME_SECONDS, at least 1 s
	QueryTimeout time.Duration // MYSQL_QUERY_TIMEOUT_SECS, at least 1 s
	Replicas     int           // MYSQL_POLLER_REPLICAS, at least 1
	Refresh      time.Duration // CRAFT_APPS_META_REFRESH_SECS, at least 1 s
}

// Enabled reports whether MySQL is configured.
func (m MySQL) Enabled() bool { return m.DSN != "" }

// LoadMySQL reads only the MySQL settings through getenv, as LoadPoller
// reads them, for the subcommands that need nothing else. It refuses an
// empty DSN: they have nothing to work on without one.
func LoadMySQL(getenv func(string) string) (MySQL, []string, error) {
	var raw mysqlEnv
	parseErr := parse(&raw, getenv)
	var c checker
	m := raw.check(&c)
	if parseErr == nil && len(c.errs) == 0 && !m.Enabled() {
		c.fail("MYSQL_DSN", "unset, and so is MYSQL_URL: set one to reach the database")
	}
	if err := errors.Join(parseErr, c.err()); err != nil {
		return MySQL{}, nil, err
	}
	return m, c.warnings, nil
}

func (r mysqlEnv) check(c *checker) MySQL {
	m := MySQL{
		MaxConns: int(c.atLeast("MYSQL_MAX_CONNECTIONS", time.Duration(r.MySQLMaxConns), 1, 1, "")),
		Replicas: int(c.atLeast("MYSQL_POLLER_REPLICAS", time.Duration(r.MySQLReplicas), 1, 1, "")),
	}
	m.MaxLifetime = c.atLeast("MYSQL_MAX_LIFETIME_SECONDS", time.Duration(r.MySQLMaxLifetime), time.Second, time.Second, "")
	m.QueryTimeout = c.atLeast("MYSQL_QUERY_TIMEOUT_SECS", time.Duration(r.MySQLQueryTimeout), time.Second, time.Second, "")
	m.Refresh = c.atLeast("CRAFT_APPS_META_REFRESH_SECS", time.Duration(r.MetaRefresh), time.Second, time.Second, "")
	switch {
	case r.MySQLDSN != "" && r.MySQLURL != "":
		c.fail("MYSQL_DSN", "set, and so is MYSQL_URL: set only one")
	case r.MySQLDSN != "":
		if msg := dsnProblem(r.MySQLDSN); msg != "" {
			c.fail("MYSQL_DSN", "%s", msg)
		} else {
			m.DSN = Secret(r.MySQLDSN)
		}
	case r.MySQLURL != "":
		dsn, msg := mysqlURLToDSN(r.MySQLURL)
		if msg != "" {
			c.fail("MYSQL_URL", "%s", msg)
		} else {
			m.DSN = Secret(dsn)
		}
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

// dsnProblem says what is wrong with a MYSQL_DSN, or "" when the driver
// accepts it. The driver's messages do not quote the DSN, but a malformed
// one can put part of the password where they quote the database name, so
// whatever could be the password is masked.
func dsnProblem(dsn string) string {
	cfg, err := mysql.ParseDSN(dsn)
	if err != nil {
		return "does not parse as user:password@tcp(host:port)/database: " + maskPassword(err.Error(), dsn)
	}
	return poolRefuses(cfg)
}

// poolRefuses says why pkg/meta's pool, which always interpolates
// arguments, could not use cfg (a collation that interpolation cannot
// escape safely), or "".
func poolRefuses(cfg *mysql.Config) string {
	cfg.InterpolateParams = true
	if _, err := mysql.NewConnector(cfg); err != nil {
		return err.Error()
	}
	return ""
}

// maskPassword replaces in msg whatever lies in dsn between the first ':'
// and the last '@', where a DSN keeps its password.
func maskPassword(msg, dsn string) string {
	at := strings.LastIndex(dsn, "@")
	colon := strings.Index(dsn, ":")
	if at < 0 || colon < 0 || colon >= at || colon+1 == at {
		return msg
	}
	return strings.ReplaceAll(msg, dsn[colon+1:at], "xxxxx")
}

// mysqlURLToDSN converts mysql://user:password@host[:port]/database[?params]
// into the driver's DSN; the port defaults to 3306, and the parameters are
// the driver's own (tls=true, …). The message never holds the password.
func mysqlURLToDSN(raw string) (dsn, problem string) {
	const want = " (want mysql://user:password@host:3306/database, special characters of the password percent-encoded)"
	u, err := url.Parse(raw)
	switch {
	case err != nil:
		return "", "not a URL" + want
	case u.Scheme != "mysql":
		return "", fmt.Sprintf("scheme %q is not mysql", u.Scheme) + want
	case u.Hostname() == "":
		return "", "has no host" + want
	case u.Fragment != "":
		return "", "has a fragment" + want
	}
	db := strings.TrimPrefix(u.Path, "/")
	if db == "" || strings.Contains(db, "/") {
		return "", "names no database, or more than one" + want
	}
	cfg := mysql.NewConfig()
	cfg.Net, cfg.Addr, cfg.DBName = "tcp", u.Host, db
	if u.Port() == "" {
		cfg.Addr = net.JoinHostPort(u.Hostname(), "3306")
	}
	if u.User != nil {
		cfg.User = u.User.Username()
		cfg.Passwd, _ = u.User.Password()
	}
	if strings.ContainsAny(u.RawQuery, "/@") {
		// Only a password with unescaped special characters puts these
		// here; the driver would quote pieces of it.
		return "", "parameters hold '/' or '@'" + want
	}
	if u.RawQuery != "" {
		// The parameters are checked alone, so that the driver's message
		// cannot quote anything else of the URL.
		if _, err := mysql.ParseDSN("/?" + u.RawQuery); err != nil {
			return "", "parameters: " + err.Error()
		}
	}
	dsn = cfg.FormatDSN()
	if u.RawQuery != "" {
		dsn += "?" + u.RawQuery
	}
	parsed, err := mysql.ParseDSN(dsn)
	if err != nil {
		return "", "does not make a DSN the driver takes" + want
	}
	if msg := poolRefuses(parsed); msg != "" {
		return "", msg
	}
	return dsn, ""
}
