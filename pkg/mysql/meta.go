// Package mysql is the MySQL side of the renames and notices launchers are
// told about and of the operators' decisions on releases (staged rollouts,
// withdrawn tags, minimum versions): the schema and its embedded migrations,
// the connection pool, the queries that manage rows and read the live ones,
// the validation of what is stored, and the Refresher, with which each poller
// publishes what is live to Redis every minute or so. Only pollers (and the `poller` subcommands)
// open MySQL; API pods read what the pollers publish.
//
// The pool never holds server-side prepared statements: every query goes out
// as text with its arguments interpolated by the driver (interpolateParams),
// so a fleet cannot exhaust the server's max_prepared_stmt_count (see
// Budget).
package mysql

import (
	"database/sql"
	"errors"
	"fmt"
	"time"

	mysqldriver "github.com/go-sql-driver/mysql"
	"go.uber.org/zap"

	"github.com/storytold/craft-releases/pkg/logsafe"
)

// Defaults of Options.
const (
	DefaultMaxConns     = 4
	DefaultMaxLifetime  = 10 * time.Minute
	DefaultQueryTimeout = 5 * time.Second
)

// Options shape the pool of Open. Zero values take the defaults.
type Options struct {
	MaxConns     int           // connections open at once (MYSQL_MAX_CONNECTIONS); default 4
	MaxLifetime  time.Duration // a connection is closed after this (MYSQL_MAX_LIFETIME_SECS); default 10 min
	QueryTimeout time.Duration // bounds every query and every dial; default 5 s
	Log          *zap.Logger   // the driver's own messages, at debug level; nil: none
}

// DB is the pool and the queries. Its methods are safe for concurrent use.
// Every method bounds each query by the query timeout within its context's
// deadline; on error nothing is known of what MySQL did.
type DB struct {
	db      *sql.DB
	cfg     *mysqldriver.Config // without its password once Open returns
	maxIdle int
	opts    Options
}

// Open returns a pool for dsn, a go-sql-driver/mysql data source name
// (user:password@tcp(host:3306)/database). Whatever the DSN says, the pool
// interpolates arguments client-side (interpolateParams=true), so it never
// prepares a statement on the server; parses DATETIME columns into UTC
// times; dials within the query timeout; holds at most MaxConns
// connections; and closes each one after MaxLifetime, which frees whatever a
// cancelled query left behind on the server. Every query of a DB runs under
// a context deadline of the query timeout (Migrate's is longer): when it
// passes, the driver closes the connection, so a silent server costs a
// query its timeout and never a hang.
//
// Open does not connect: the first query does, so a MySQL that is down only
// fails queries until it is back. Its error never contains the password.
func Open(dsn string, o Options) (*DB, error) {
	cfg, err := mysqldriver.ParseDSN(dsn)
	if err != nil {
		return nil, fmt.Errorf("parse mysql dsn: %w", err)
	}
	if o.MaxConns <= 0 {
		o.MaxConns = DefaultMaxConns
	}
	if o.MaxLifetime <= 0 {
		o.MaxLifetime = DefaultMaxLifetime
	}
	if o.QueryTimeout <= 0 {
		o.QueryTimeout = DefaultQueryTimeout
	}
	if o.Log == nil {
		o.Log = zap.NewNop()
	}
	if cfg.Timeout <= 0 || cfg.Timeout > o.QueryTimeout {
		cfg.Timeout = o.QueryTimeout
	}
	// The driver prints to stderr by default; its messages (a dropped
	// connection, say) are repeated by the errors the queries return.
	cfg.Logger = driverLog{o.Log}
	conn, err := connector(cfg)
	if err != nil {
		return nil, fmt.Errorf("mysql dsn: %w", err)
	}
	db := sql.OpenDB(conn)
	db.SetMaxOpenConns(o.MaxConns)
	// database/sql keeps two idle connections unless told otherwise; more
	// would only be closed by MaxLifetime.
	maxIdle := min(2, o.MaxConns)
	db.SetMaxIdleConns(maxIdle)
	db.SetConnMaxLifetime(o.MaxLifetime)
	shown := cfg.Clone()
	shown.Passwd = ""
	return &DB{db: db, cfg: shown, maxIdle: maxIdle, opts: o}, nil
}

// Close closes the pool's connections. Queries in flight fail.
func (d *DB) Close() error { return d.db.Close() }

// Fields describes the pool for the one start-up log line: address,
// database, user and the pool's limits, never the password.
func (d *DB) Fields() []zap.Field {
	return []zap.Field{
		zap.String("mysql_addr", d.cfg.Addr),
		zap.String("mysql_database", d.cfg.DBName),
		zap.String("mysql_user", d.cfg.User),
		zap.Int("max_connections", d.opts.MaxConns),
		zap.Int("max_idle_connections", d.maxIdle),
		zap.Duration("max_lifetime", d.opts.MaxLifetime),
		zap.Duration("query_timeout", d.opts.QueryTimeout),
		zap.Bool("interpolate_params", d.cfg.InterpolateParams),
	}
}

// ErrNotFound is returned for a row that does not exist.
var ErrNotFound = errors.New("not found")

// driverLog passes the driver's messages to zap at debug level.
type driverLog struct{ log *zap.Logger }

func (l driverLog) Print(v ...any) {
	l.log.Debug("mysql driver", logsafe.String("msg", fmt.Sprint(v...)))
}
