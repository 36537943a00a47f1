package admin

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/storytold/craft-releases/pkg/mysql"
)

// row is a notice or a rename as the rows verbs handle it.
type row interface {
	Ref() string
	State(now time.Time) string
}

// rows is one table that operators manage in MySQL, the notices or the
// renames, with its kind type K; its verbs list, add and end work alike on
// both.
type rows[T row, K ~string] struct {
	name    string // the subcommand: notices
	kinds   string // what --kind takes, for its error: announcement or alert
	header  string // of the listing, tab-separated
	columns func(T) []string
	// flags declares add's own flags on fs and returns what builds the row
	// from them once parsed, at now.
	flags func(fs *flag.FlagSet) func(kind K, start, end, now time.Time) T
	list  func(*mysql.DB, context.Context) ([]T, error)
	add   func(*mysql.DB, context.Context, T, time.Time) (T, error)
	end   func(*mysql.DB, context.Context, K, int64, time.Time) (bool, error)
}

var notices = rows[mysql.Notice, mysql.NoticeKind]{
	name:   "notices",
	kinds:  "announcement or alert",
	header: "ID\tSTATE\tSTART\tEND\tTITLE\tLINK",
	columns: func(n mysql.Notice) []string {
		return []string{when(n.StartsAt), when(n.EndsAt), strconv.Quote(n.Title), orDash(shown(n.Link))}
	},
	flags: func(fs *flag.FlagSet) func(mysql.NoticeKind, time.Time, time.Time, time.Time) mysql.Notice {
		title := fs.String("title", "", "one line, required")
		body := fs.String("body", "", "the text")
		link := fs.String("link", "", "alerts only: an https:// URL")
		return func(kind mysql.NoticeKind, start, end, _ time.Time) mysql.Notice {
			return mysql.Notice{Kind: kind, Title: strings.TrimSpace(*title), Body: *body, Link: strings.TrimSpace(*link),
				StartsAt: start, EndsAt: end}
		}
	},
	list: (*mysql.DB).Notices,
	add:  (*mysql.DB).AddNotice,
	end:  (*mysql.DB).EndNotice,
}

var renames = rows[mysql.Rename, mysql.RenameKind]{
	name:   "renames",
	kinds:  "app or repo",
	header: "ID\tSTATE\tSTART\tEND\tOLD\tNEW\tRENAMED",
	columns: func(r mysql.Rename) []string {
		return []string{when(r.StartsAt), when(r.EndsAt), strconv.Quote(r.OldName), strconv.Quote(r.NewName), when(r.RenamedAt)}
	},
	flags: func(fs *flag.FlagSet) func(mysql.RenameKind, time.Time, time.Time, time.Time) mysql.Rename {
		oldName := fs.String("old", "", "the old name, required")
		newName := fs.String("new", "", "the new name, required")
		description := fs.String("description", "", "app renames only: what launchers may show")
		renamed := timeFlag(fs, "renamed-at", "when the rename happened (default: now)")
		return func(kind mysql.RenameKind, start, end, now time.Time) mysql.Rename {
			at := renamed.t
			if at.IsZero() {
				at = now
			}
			return mysql.Rename{Kind: kind, OldName: strings.TrimSpace(*oldName), NewName: strings.TrimSpace(*newName),
				Description: *description, RenamedAt: at, StartsAt: start, EndsAt: end}
		}
	},
	list: (*mysql.DB).Renames,
	add:  (*mysql.DB).AddRename,
	end:  (*mysql.DB).EndRename,
}

// run runs `poller notices …` or `poller renames …`: list [--all], add with
// flags, or end KIND/ID.
func (rs rows[T, K]) run(ctx context.Context, c *call) error {
	if len(c.args) == 0 {
		return fmt.Errorf("%s: say list, add or end (try --help)", rs.name)
	}
	verb, args := c.args[0], c.args[1:]
	switch verb {
	case "list":
		return rs.listRows(ctx, c, args)
	case "add":
		return rs.addRow(ctx, c, args)
	case "end":
		return rs.endRow(ctx, c, args)
	}
	return fmt.Errorf("%s: unknown command %q (list, add or end)", rs.name, verb)
}

// listRows prints the rows that have not ended, or with --all every row.
func (rs rows[T, K]) listRows(ctx context.Context, c *call, args []string) error {
	var all bool
	fs := newFlags(rs.name + " list")
	fs.BoolVar(&all, "all", false, "include ended rows")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	list, err := rs.list(c.db, ctx)
	if err != nil {
		return err
	}
	t := c.clock.Now()
	tw := tabwriter.NewWriter(c.stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, rs.header)
	for _, r := range list {
		if state := r.State(t); all || state != "ended" {
			fmt.Fprintln(tw, strings.Join(append([]string{r.Ref(), state}, rs.columns(r)...), "\t"))
		}
	}
	return tw.Flush()
}

func (rs rows[T, K]) addRow(ctx context.Context, c *call, args []string) error {
	name := rs.name + " add"
	fs := newFlags(name)
	kind := fs.String("kind", "", rs.kinds)
	start, end := timeFlag(fs, "start", "live from (default: at once)"), timeFlag(fs, "end", "live until (default: until ended)")
	build := rs.flags(fs)
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if *kind == "" {
		return fmt.Errorf("%s: --kind is missing (%s)", name, rs.kinds)
	}
	now := c.clock.Now()
	r, err := rs.add(c.db, ctx, build(K(*kind), start.t, end.t, now), now)
	if err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	fmt.Fprintf(c.stdout, "added %s (%s)\n", r.Ref(), r.State(c.clock.Now()))
	return nil
}

// endRow ends the one row KIND/ID, such as alert/3.
func (rs rows[T, K]) endRow(ctx context.Context, c *call, args []string) error {
	name := rs.name + " end"
	if len(args) != 1 {
		return fmt.Errorf("%s: want one KIND/ID, as list shows it (such as alert/3)", name)
	}
	kind, n, ok := strings.Cut(args[0], "/")
	id, err := strconv.ParseInt(n, 10, 64)
	if !ok || err != nil || id <= 0 {
		return fmt.Errorf("%s: %q is not KIND/ID, as list shows it (such as alert/3)", name, args[0])
	}
	ended, err := rs.end(c.db, ctx, K(kind), id, c.clock.Now())
	switch {
	case errors.Is(err, mysql.ErrNotFound):
		return fmt.Errorf("there is no %s/%d (list shows what there is)", kind, id)
	case err != nil:
		return err
	case ended:
		fmt.Fprintf(c.stdout, "ended %s/%d: the pollers stop publishing it at their next refresh\n", kind, id)
	default:
		fmt.Fprintf(c.stdout, "%s/%d had already ended\n", kind, id)
	}
	return nil
}

func migrate(ctx context.Context, c *call) error {
	if len(c.args) > 0 {
		return fmt.Errorf("migrate: unexpected argument %q", c.args[0])
	}
	applied, err := c.db.Migrate(ctx)
	for _, name := range applied {
		fmt.Fprintf(c.stdout, "applied %s\n", name)
	}
	if err != nil {
		return err
	}
	current, _, err := c.db.SchemaVersion(ctx)
	if err != nil {
		return err
	}
	if len(applied) == 0 {
		fmt.Fprintf(c.stdout, "schema already at version %d\n", current)
	} else {
		fmt.Fprintf(c.stdout, "schema at version %d\n", current)
	}
	return nil
}
