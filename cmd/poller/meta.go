package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"go.uber.org/zap"

	"github.com/storytold/craft-releases/pkg/config"
	"github.com/storytold/craft-releases/pkg/meta"
)

// metaHelp lists the MySQL subcommands for --help.
const metaHelp = `  migrate   apply the MySQL schema's migrations (MYSQL_DSN or MYSQL_URL), then exit
  notices   list [--all] | add --kind announcement|alert --title T [--body B] [--link https://…]
            [--start TIME] [--end TIME] | end KIND/ID
  renames   list [--all] | add --kind app|repo --old NAME --new NAME [--description D]
            [--renamed-at TIME] [--start TIME] [--end TIME] | end KIND/ID
            TIME is RFC 3339 (2026-10-10T22:00:00Z); without --start a row is live at once,
            without --end until it is ended. Limits: title 200 characters, body 4000, link 2000,
            app name 100, description 1000, repository org/project of at most 140.
`

// metaRefresher returns the loop that publishes the renames and notices from
// MySQL to pub every CRAFT_APPS_META_REFRESH_SECS, or nil when MySQL is not
// configured. It opens the pool (without connecting) and logs its settings;
// the loop checks the server's prepared-statement cap first, never fails on
// MySQL trouble, and closes the pool when ctx ends.
func metaRefresher(cfg config.Poller, pub meta.Publisher, log *zap.Logger) (func(context.Context) error, error) {
	if !cfg.MySQL.Enabled() {
		return nil, nil
	}
	db, err := openMeta(cfg.MySQL, log)
	if err != nil {
		return nil, err
	}
	f, err := meta.NewRefresher(db, pub, cfg.MySQL.Refresh, log, time.Now)
	if err != nil {
		db.Close()
		return nil, err
	}
	log.Info("mysql pool", append(db.Fields(), zap.Duration("refresh", cfg.MySQL.Refresh))...)
	return func(ctx context.Context) error {
		defer db.Close()
		checkBudget(ctx, db, cfg.MySQL, log)
		return f.Run(ctx)
	}, nil
}

func openMeta(m config.MySQL, log *zap.Logger) (*meta.DB, error) {
	return meta.Open(m.DSN.Reveal(), meta.Options{
		MaxConns:     m.MaxConns,
		MaxLifetime:  m.MaxLifetime,
		QueryTimeout: m.QueryTimeout,
		Log:          log,
	})
}

// checkBudget warns when the fleet could approach the server's cap on
// prepared statements. It runs once, at start-up; a MySQL that cannot answer
// then is logged, and the refresher carries on.
func checkBudget(ctx context.Context, db *meta.DB, m config.MySQL, log *zap.Logger) {
	b, err := db.Budget(ctx, m.Replicas)
	if err != nil {
		log.Warn("could not check max_prepared_stmt_count", zap.NamedError("err", err))
		return
	}
	fields := []zap.Field{
		zap.Int64("max_prepared_stmt_count", b.Max),
		zap.Int64("prepared_stmt_count", b.Held),
		zap.Int64("fleet_worst_case", b.Fleet),
		zap.String("formula", fmt.Sprintf("%d replicas × %d connections × %d statement", m.Replicas, m.MaxConns, meta.StatementsPerConnection)),
	}
	if b.Tight() {
		log.Warn("the poller fleet could approach max_prepared_stmt_count", fields...)
		return
	}
	log.Info("prepared statements within the server's cap", fields...)
}

// metaCommand runs `poller migrate`, `poller notices …` and `poller renames …`.
func metaCommand(ctx context.Context, args []string, getenv func(string) string, stdout io.Writer, now func() time.Time) error {
	cfg, _, err := config.LoadMySQL(getenv)
	if err != nil {
		return err
	}
	db, err := openMeta(cfg, nil)
	if err != nil {
		return err
	}
	defer db.Close()
	switch args[0] {
	case "migrate":
		if len(args) > 1 {
			return fmt.Errorf("migrate: unexpected argument %q", args[1])
		}
		return migrate(ctx, db, stdout)
	case "notices":
		return notices(ctx, db, args[1:], stdout, now)
	default:
		return renames(ctx, db, args[1:], stdout, now)
	}
}

func migrate(ctx context.Context, db *meta.DB, w io.Writer) error {
	applied, err := db.Migrate(ctx)
	for _, name := range applied {
		fmt.Fprintf(w, "applied %s\n", name)
	}
	if err != nil {
		return err
	}
	current, _, err := db.SchemaVersion(ctx)
	if err != nil {
		return err
	}
	if len(applied) == 0 {
		fmt.Fprintf(w, "schema already at version %d\n", current)
	} else {
		fmt.Fprintf(w, "schema at version %d\n", current)
	}
	return nil
}

func notices(ctx context.Context, db *meta.DB, args []string, w io.Writer, now func() time.Time) error {
	verb, rest, err := subcommand("notices", args)
	if err != nil {
		return err
	}
	switch verb {
	case "list":
		all, err := listFlags("notices list", rest)
		if err != nil {
			return err
		}
		list, err := db.Notices(ctx)
		if err != nil {
			return err
		}
		t := now()
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "ID\tSTATE\tSTART\tEND\tTITLE\tLINK")
		for _, n := range list {
			if state := n.State(t); all || state != "ended" {
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", n.Ref(), state, when(n.StartsAt), when(n.EndsAt),
					strconv.Quote(n.Title), orDash(shown(n.Link)))
			}
		}
		return tw.Flush()
	case "add":
		fs := newFlags("notices add")
		kind := fs.String("kind", "", "announcement (inline) or alert (a popup)")
		title := fs.String("title", "", "one line, required")
		body := fs.String("body", "", "the text")
		link := fs.String("link", "", "alerts only: an https:// URL")
		start, end := timeFlag(fs, "start", "live from (default: at once)"), timeFlag(fs, "end", "live until (default: until ended)")
		if err := parseFlags(fs, rest); err != nil {
			return err
		}
		if *kind == "" {
			return errors.New("notices add: --kind is missing (announcement or alert)")
		}
		n, err := db.AddNotice(ctx, meta.Notice{Kind: meta.NoticeKind(*kind), Title: strings.TrimSpace(*title),
			Body: *body, Link: strings.TrimSpace(*link), StartsAt: start.t, EndsAt: end.t}, now())
		if err != nil {
			return fmt.Errorf("notices add: %w", err)
		}
		fmt.Fprintf(w, "added %s (%s)\n", n.Ref(), n.State(now()))
		return nil
	case "end":
		kind, id, err := ref("notices end", rest)
		if err != nil {
			return err
		}
		ended, err := db.EndNotice(ctx, meta.NoticeKind(kind), id, now())
		return reportEnd(w, kind, id, ended, err)
	}
	return fmt.Errorf("notices: unknown command %q (list, add or end)", verb)
}

func renames(ctx context.Context, db *meta.DB, args []string, w io.Writer, now func() time.Time) error {
	verb, rest, err := subcommand("renames", args)
	if err != nil {
		return err
	}
	switch verb {
	case "list":
		all, err := listFlags("renames list", rest)
		if err != nil {
			return err
		}
		list, err := db.Renames(ctx)
		if err != nil {
			return err
		}
		t := now()
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "ID\tSTATE\tSTART\tEND\tOLD\tNEW\tRENAMED")
		for _, r := range list {
			if state := r.State(t); all || state != "ended" {
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", r.Ref(), state, when(r.StartsAt), when(r.EndsAt),
					strconv.Quote(r.OldName), strconv.Quote(r.NewName), when(r.RenamedAt))
			}
		}
		return tw.Flush()
	case "add":
		fs := newFlags("renames add")
		kind := fs.String("kind", "", "app (a display name) or repo (org/project)")
		oldName := fs.String("old", "", "the old name, required")
		newName := fs.String("new", "", "the new name, required")
		description := fs.String("description", "", "app renames only: what launchers may show")
		renamed := timeFlag(fs, "renamed-at", "when the rename happened (default: now)")
		start, end := timeFlag(fs, "start", "live from (default: at once)"), timeFlag(fs, "end", "live until (default: until ended)")
		if err := parseFlags(fs, rest); err != nil {
			return err
		}
		if *kind == "" {
			return errors.New("renames add: --kind is missing (app or repo)")
		}
		at := renamed.t
		if at.IsZero() {
			at = now()
		}
		r, err := db.AddRename(ctx, meta.Rename{Kind: meta.RenameKind(*kind), OldName: strings.TrimSpace(*oldName),
			NewName: strings.TrimSpace(*newName), Description: *description, RenamedAt: at,
			StartsAt: start.t, EndsAt: end.t}, now())
		if err != nil {
			return fmt.Errorf("renames add: %w", err)
		}
		fmt.Fprintf(w, "added %s (%s)\n", r.Ref(), r.State(now()))
		return nil
	case "end":
		kind, id, err := ref("renames end", rest)
		if err != nil {
			return err
		}
		ended, err := db.EndRename(ctx, meta.RenameKind(kind), id, now())
		return reportEnd(w, kind, id, ended, err)
	}
	return fmt.Errorf("renames: unknown command %q (list, add or end)", verb)
}

func subcommand(name string, args []string) (string, []string, error) {
	if len(args) == 0 {
		return "", nil, fmt.Errorf("%s: say list, add or end (try --help)", name)
	}
	return args[0], args[1:], nil
}

func newFlags(name string) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	// The errors are returned; the usage is in --help.
	fs.SetOutput(io.Discard)
	return fs
}

// parseFlags parses args into fs and refuses any argument left over.
func parseFlags(fs *flag.FlagSet, args []string) error {
	if err := fs.Parse(args); errors.Is(err, flag.ErrHelp) {
		return fmt.Errorf("%s: the flags are listed by poller --help", fs.Name())
	} else if err != nil {
		// A time flag's own error names it as it is typed; the flag
		// package's would say "invalid value … for flag -end".
		fs.VisitAll(func(f *flag.Flag) {
			if v, ok := f.Value.(*timeValue); ok && v.err != nil {
				err = v.err
			}
		})
		return fmt.Errorf("%s: %w", fs.Name(), err)
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("%s: unexpected argument %q (values go after flags: --title \"…\")", fs.Name(), fs.Arg(0))
	}
	return nil
}

func listFlags(name string, args []string) (all bool, err error) {
	fs := newFlags(name)
	fs.BoolVar(&all, "all", false, "include ended rows")
	return all, parseFlags(fs, args)
}

// ref parses the one argument KIND/ID of an end command, such as alert/3.
func ref(name string, args []string) (string, int64, error) {
	if len(args) != 1 {
		return "", 0, fmt.Errorf("%s: want one KIND/ID, as list shows it (such as alert/3)", name)
	}
	kind, n, ok := strings.Cut(args[0], "/")
	id, err := strconv.ParseInt(n, 10, 64)
	if !ok || err != nil || id <= 0 {
		return "", 0, fmt.Errorf("%s: %q is not KIND/ID, as list shows it (such as alert/3)", name, args[0])
	}
	return kind, id, nil
}

func reportEnd(w io.Writer, kind string, id int64, ended bool, err error) error {
	switch {
	case errors.Is(err, meta.ErrNotFound):
		return fmt.Errorf("there is no %s/%d (list shows what there is)", kind, id)
	case err != nil:
		return err
	case ended:
		fmt.Fprintf(w, "ended %s/%d: the pollers stop publishing it at their next refresh\n", kind, id)
	default:
		fmt.Fprintf(w, "%s/%d had already ended\n", kind, id)
	}
	return nil
}

// timeValue is a flag holding an RFC 3339 time. The zero time is refused:
// it is how the rows say "none", which leaving the flag out already says.
type timeValue struct {
	name string
	t    time.Time
	err  error // why the last Set failed, naming the flag
}

func timeFlag(fs *flag.FlagSet, name, usage string) *timeValue {
	v := &timeValue{name: name}
	fs.Var(v, name, usage)
	return v
}

func (v *timeValue) String() string {
	if v == nil || v.t.IsZero() {
		return ""
	}
	return v.t.Format(time.RFC3339)
}

func (v *timeValue) Set(s string) error {
	t, err := time.Parse(time.RFC3339, s)
	switch {
	case err != nil:
		v.err = fmt.Errorf("--%s %q is not an RFC 3339 time such as 2026-10-10T22:00:00Z", v.name, s)
	case t.IsZero():
		v.err = fmt.Errorf("--%s %q is the zero time, which means none: leave --%s out instead", v.name, s, v.name)
	default:
		v.t = t
		return nil
	}
	return v.err
}

// when shows a time of a listing, "-" for none.
func when(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return t.UTC().Format(time.RFC3339)
}
