// Package admin runs the poller's operator commands (`poller status`,
// `poller backoff [clear]`, `poller migrate`, `poller notices …`,
// `poller renames …`, and the decisions on releases `poller rollout …`,
// `poller withdraw …`, `poller minimum …`) from one table of verbs, which also writes their part
// of `poller --help`. A verb says what it needs, Redis or MySQL, and Run
// loads the configuration and connects for it in one place.
package admin

import (
	"context"
	"errors"
	"fmt"
	"io"

	"go.uber.org/zap"

	"github.com/storytold/craft-releases/pkg/clock"
	"github.com/storytold/craft-releases/pkg/config"
	"github.com/storytold/craft-releases/pkg/mysql"
	"github.com/storytold/craft-releases/pkg/redis"
	"github.com/storytold/craft-releases/pkg/redis/store"
)

// need is what a verb connects to before it runs.
type need int

const (
	redisStore need = 1 << iota // the poller's configuration and its shared store
	mysqlDB                     // the MySQL settings and the pool
	// The poller's configuration (its apps, GitHub), the MySQL pool, and
	// its shared store, to publish at once.
	decisions
)

// verb is one subcommand.
type verb struct {
	name  string
	usage string // for --help: what it does; lines after the first start with usageIndent
	needs need
	// noRedis ends the error of a verb that needs Redis when REDIS_URL is
	// empty: what there is not to show.
	noRedis string
	// check, when set, refuses bad arguments before anything is loaded or
	// connected; other verbs check theirs once connected.
	check func(args []string) error
	run   func(ctx context.Context, c *call) error
}

// usageIndent lines up a usage's further lines under its first.
const usageIndent = "            "

// verbs is every subcommand, in the order --help lists them.
var verbs = []verb{
	{name: "status", usage: "print every app's shared entry and the fleet backoff, then exit",
		needs: redisStore, noRedis: "there is no shared state to show", run: status},
	{name: "backoff", usage: "print the fleet backoff, then exit; backoff clear [--by NAME] ends it (after\n" +
		usageIndent + "fixing the token, say), logged with who ran it: NAME, else $USER or the account",
		needs: redisStore, noRedis: "there is no fleet backoff", check: checkBackoff, run: backoff},
	{name: "migrate", usage: "apply the MySQL schema's migrations (MYSQL_DSN or MYSQL_URL), then exit",
		needs: mysqlDB, run: migrate},
	{name: "notices", usage: "list [--all] | add --kind announcement|alert --title T [--body B] [--link https://…]\n" +
		usageIndent + "[--start TIME] [--end TIME] | end KIND/ID",
		needs: mysqlDB, run: notices.run},
	{name: "renames", usage: "list [--all] | add --kind app|repo --old NAME --new NAME [--description D]\n" +
		usageIndent + "[--renamed-at TIME] [--start TIME] [--end TIME] | end KIND/ID",
		needs: mysqlDB, run: renames.run},
	{name: "rollout", usage: "APP --tag T --percent P [--reason R] [--by NAME] stages release T: P % of installs\n" +
		usageIndent + "(0 halts it, 100 completes it) | APP --end [--by NAME] | list [--all]",
		needs: decisions, check: rolloutVerb.check, run: rolloutVerb.run},
	{name: "withdraw", usage: "APP --tag T --reason R [--by NAME] serves release T to nobody\n" +
		usageIndent + "| APP --tag T --restore [--reason R] [--by NAME] | list [--all]",
		needs: decisions, check: withdrawVerb.check, run: withdrawVerb.run},
	{name: "minimum", usage: "APP --version V --reason R [--by NAME] offers clients below V the update\n" +
		usageIndent + "whatever a rollout says | APP --clear [--by NAME] | list [--all]",
		needs: decisions, check: minimumVerb.check, run: minimumVerb.run},
}

// rowsHelp follows the verbs in --help: what notices and renames take.
const rowsHelp = usageIndent + `TIME is RFC 3339 (2026-10-10T22:00:00Z); without --start a row is live at once,
` + usageIndent + `without --end until it is ended. Limits: title 200 characters, body 4000, link 2000,
` + usageIndent + `app name 100, description 1000, repository org/project of at most 140.
` + usageIndent + `rollout, withdraw and minimum check APP against CRAFT_APPS_RELEASE_APPS and a new T
` + usageIndent + `against GitHub, log who (--by, else $USER or the account), when and why, and publish
` + usageIndent + `to Redis at once; list shows what is decided, list --all the whole log. V is SemVer
` + usageIndent + `(1.2.0); a reason is at most 1000 characters.
`

// Usage writes the subcommands' part of `poller --help` to w.
func Usage(w io.Writer) {
	fmt.Fprint(w, "\nSubcommands:\n")
	for _, v := range verbs {
		fmt.Fprintf(w, "  %-8s  %s\n", v.name, v.usage)
	}
	fmt.Fprint(w, rowsHelp)
}

// call is one run of a verb: its arguments, its output, and what it needs,
// loaded and connected.
type call struct {
	args           []string // after the verb
	getenv         func(string) string
	stdout, stderr io.Writer
	clock          clock.Clock

	cfg   config.Poller // with redisStore
	store *store.Store  // with redisStore
	db    *mysql.DB     // with mysqlDB
}

// Run runs the subcommand args[0] (there must be one) with the rest of
// args, reading its settings with getenv, printing its result to stdout and
// its log lines to stderr, and closes what it connected to before it
// returns; clk tells the time, clock.System when nil. A subcommand that is
// not in the table is an error that points at --help. Calls may run
// concurrently.
func Run(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer, clk clock.Clock) error {
	i := 0
	for i < len(verbs) && verbs[i].name != args[0] {
		i++
	}
	if i == len(verbs) {
		return fmt.Errorf("unknown argument %q (try --help)", args[0])
	}
	v := verbs[i]
	c := &call{args: args[1:], getenv: getenv, stdout: stdout, stderr: stderr, clock: clock.Or(clk)}
	if v.check != nil {
		if err := v.check(c.args); err != nil {
			return err
		}
	}
	if v.needs&redisStore != 0 {
		closeStore, err := c.openStore(v.name, v.noRedis)
		if err != nil {
			return err
		}
		defer closeStore()
	}
	if v.needs&decisions != 0 {
		closeAll, err := c.openDecisions()
		if err != nil {
			return err
		}
		defer closeAll()
	}
	if v.needs&mysqlDB != 0 {
		m, _, err := config.LoadMySQL(getenv, mysql.DSN)
		if err != nil {
			return err
		}
		if c.db, err = OpenMeta(m, nil); err != nil {
			return err
		}
		defer c.db.Close()
	}
	return v.run(ctx, c)
}

// openStore loads the poller's configuration and connects to its Redis for
// the verb name, which without REDIS_URL has absent to show. It returns the
// function that closes the connection.
func (c *call) openStore(name, absent string) (func(), error) {
	cfg, _, err := config.LoadPoller(c.getenv, mysql.DSN)
	if err != nil {
		return nil, err
	}
	if !cfg.Redis.Configured() {
		return nil, fmt.Errorf("%s: REDIS_URL is empty: %s", name, absent)
	}
	conn := redis.Open(cfg.Redis.Options)
	c.cfg, c.store = cfg, store.New(conn, "", cfg.Entries(), store.WithClock(c.clock))
	return conn.Close, nil
}

// openDecisions loads the poller's configuration, opens its MySQL pool,
// which it requires, and its shared store (the configuration requires
// REDIS_URL with MySQL). It returns the function that closes them.
func (c *call) openDecisions() (func(), error) {
	cfg, _, err := config.LoadPoller(c.getenv, mysql.DSN)
	if err != nil {
		return nil, err
	}
	if !cfg.MySQL.Enabled() {
		return nil, errors.New("MYSQL_DSN: unset, and so is MYSQL_URL: set one to reach the database")
	}
	if c.db, err = OpenMeta(cfg.MySQL, nil); err != nil {
		return nil, err
	}
	c.cfg = cfg
	_, host := operator(c.getenv)
	conn := redis.Open(cfg.Redis.Options)
	c.store = store.New(conn, host, cfg.Entries(), store.WithClock(c.clock))
	return func() { conn.Close(); c.db.Close() }, nil
}

// OpenMeta opens the MySQL pool that m describes, without connecting, for
// the admin verbs and the poller's refresher alike; log, when not nil, gets
// the driver's messages.
func OpenMeta(m config.MySQL, log *zap.Logger) (*mysql.DB, error) {
	return mysql.Open(m.DSN.Reveal(), mysql.Options{
		MaxConns:     m.MaxConns,
		MaxLifetime:  m.MaxLifetime,
		QueryTimeout: m.QueryTimeout,
		Log:          log,
	})
}
