package admin

import (
	"cmp"
	"context"
	"errors"
	"flag"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"

	"go.uber.org/zap"

	"github.com/storytold/craft-releases/pkg/github"
	"github.com/storytold/craft-releases/pkg/logsafe"
	"github.com/storytold/craft-releases/pkg/mysql"
	"github.com/storytold/craft-releases/pkg/release"
)

// decisionVerb is one of the verbs on releases, rollout, withdraw or
// minimum: its actions (the one that decides, the one that undoes it) and
// how it reads its flags and lists what is current.
type decisionVerb struct {
	name       string
	do, undo   mysql.Action
	undoFlag   string // --end, --restore, --clear
	header     string // of the current listing, tab-separated
	columns    func(mysql.Decision) []string
	declare    func(fs *flag.FlagSet) func(d *mysql.Decision, undo bool) error
	askGitHub  bool // the tag is checked against GitHub
	reasonNeed bool // do needs --reason
}

var rolloutVerb = decisionVerb{
	name: "rollout", do: mysql.ActionRollout, undo: mysql.ActionRolloutEnd, undoFlag: "end",
	header:  "APP\tTAG\tPERCENT\tSINCE\tBY\tREASON",
	columns: func(d mysql.Decision) []string { return []string{d.Tag, strconv.Itoa(d.Percent) + " %"} },
	declare: func(fs *flag.FlagSet) func(*mysql.Decision, bool) error {
		tag := fs.String("tag", "", "the release to stage")
		percent := fs.String("percent", "", "0 to 100")
		return func(d *mysql.Decision, end bool) error {
			switch {
			case end && (*tag != "" || *percent != ""):
				return errors.New("--end takes no --tag or --percent")
			case end:
				return nil
			case *tag == "":
				return errors.New("--tag is missing (the release to stage, such as v0.6.0)")
			case *percent == "":
				return errors.New("--percent is missing (0 to 100: 0 halts the rollout, 100 completes it)")
			}
			p, err := strconv.Atoi(*percent)
			if err != nil || p < 0 || p > 100 {
				return fmt.Errorf("--percent %q is not a whole number from 0 to 100", *percent)
			}
			d.Tag, d.Percent = *tag, p
			return nil
		}
	},
	askGitHub: true,
}

var withdrawVerb = decisionVerb{
	name: "withdraw", do: mysql.ActionWithdraw, undo: mysql.ActionRestore, undoFlag: "restore",
	header:  "APP\tTAG\tSINCE\tBY\tREASON",
	columns: func(d mysql.Decision) []string { return []string{d.Tag} },
	declare: func(fs *flag.FlagSet) func(*mysql.Decision, bool) error {
		tag := fs.String("tag", "", "the release to withdraw or restore")
		return func(d *mysql.Decision, _ bool) error {
			if *tag == "" {
				return errors.New("--tag is missing (the release, such as v0.6.0)")
			}
			d.Tag = *tag
			return nil
		}
	},
	askGitHub: true, reasonNeed: true,
}

var minimumVerb = decisionVerb{
	name: "minimum", do: mysql.ActionMinimum, undo: mysql.ActionMinimumClear, undoFlag: "clear",
	header:  "APP\tVERSION\tSINCE\tBY\tREASON",
	columns: func(d mysql.Decision) []string { return []string{d.Version} },
	declare: func(fs *flag.FlagSet) func(*mysql.Decision, bool) error {
		version := fs.String("version", "", "the lowest version a client may run")
		return func(d *mysql.Decision, clear bool) error {
			switch {
			case clear && *version != "":
				return errors.New("--clear takes no --version")
			case clear:
				return nil
			case *version == "":
				return errors.New("--version is missing (SemVer, such as 1.2.0)")
			}
			d.Version = *version
			return nil
		}
	},
	reasonNeed: true,
}

// decisionCall is one command line of a decision verb, parsed.
type decisionCall struct {
	list, all bool
	d         mysql.Decision // with App, Action and the verb's fields; By is "" unless --by
}

// parse reads `VERB list [--all]` or `VERB APP flags…`, and refuses a
// malformed command line before anything is loaded.
func (v decisionVerb) parse(args []string) (decisionCall, error) {
	if len(args) == 0 || strings.HasPrefix(args[0], "-") {
		return decisionCall{}, fmt.Errorf("%s: say list, or the app first: %s APP --… (try --help)", v.name, v.name)
	}
	if args[0] == "list" {
		fs := newFlags(v.name + " list")
		all := fs.Bool("all", false, "the whole log, with who, when and why")
		if err := parseFlags(fs, args[1:]); err != nil {
			return decisionCall{}, err
		}
		return decisionCall{list: true, all: *all}, nil
	}
	fs := newFlags(v.name)
	undo := fs.Bool(v.undoFlag, false, "undo")
	reason := fs.String("reason", "", "why")
	by := fs.String("by", "", "who decides (default: $USER or the account)")
	fill := v.declare(fs)
	if err := parseFlags(fs, args[1:]); err != nil {
		return decisionCall{}, err
	}
	c := decisionCall{d: mysql.Decision{App: args[0], Action: v.do, Reason: strings.TrimSpace(*reason), By: strings.TrimSpace(*by)}}
	if *undo {
		c.d.Action = v.undo
	}
	if err := fill(&c.d, *undo); err != nil {
		return decisionCall{}, fmt.Errorf("%s: %w", v.name, err)
	}
	if v.reasonNeed && !*undo && c.d.Reason == "" {
		return decisionCall{}, fmt.Errorf("%s: --reason is missing (why: it is kept in the log, shown by %s list)", v.name, v.name)
	}
	return c, nil
}

func (v decisionVerb) check(args []string) error {
	_, err := v.parse(args)
	return err
}

// run runs the verb: it lists, or it checks the decision (the app is one of
// the poller's, the fields are within the limits, GitHub has the tag),
// stores it and publishes it at once. Nothing is written when a check
// fails.
func (v decisionVerb) run(ctx context.Context, c *call) error {
	dc, err := v.parse(c.args)
	if err != nil {
		return err
	}
	if dc.list {
		return v.listDecisions(ctx, c, dc.all)
	}
	d := dc.d
	who, host := operator(c.getenv)
	if d.By == "" {
		d.By = who
	}
	i := slices.IndexFunc(c.cfg.Apps, func(a release.App) bool { return a.Key == d.App })
	if i < 0 {
		keys := make([]string, len(c.cfg.Apps))
		for j, a := range c.cfg.Apps {
			keys[j] = a.Key
		}
		return fmt.Errorf("%s: unknown app %q (CRAFT_APPS_RELEASE_APPS has %s)", v.name, d.App, strings.Join(keys, ", "))
	}
	app := c.cfg.Apps[i]
	if err := d.Validate(); err != nil {
		return fmt.Errorf("%s: %w", v.name, flagged(err))
	}
	if v.askGitHub && d.Action == v.do {
		if err := v.checkTag(ctx, c, app, d); err != nil {
			return fmt.Errorf("%s: %w", v.name, err)
		}
	}
	stored, err := c.db.AddDecision(ctx, d, c.clock.Now())
	if err != nil {
		return fmt.Errorf("%s: %w; nothing written", v.name, err)
	}
	log := c.cfg.Logger(c.stderr).With(zap.String("binary", "poller"))
	log.Info("release decision",
		zap.String("app", stored.App), zap.String("action", string(stored.Action)), logsafe.String("tag", stored.Tag),
		zap.Int("percent", stored.Percent), logsafe.String("version", stored.Version), logsafe.String("reason", stored.Reason),
		logsafe.String("user", stored.By), zap.String("host", host), zap.String("id", stored.Ref()))
	_ = log.Sync()
	fmt.Fprintf(c.stdout, "%s by %s (%s)\n", describe(stored), stored.By, stored.Ref())
	v.publish(ctx, c, stored)
	return nil
}

// flags are the flags of mysql.Decision's fields, as its Validate names
// them at the start of each problem.
var flags = [...][2]string{{"tag ", "--tag "}, {"percent ", "--percent "}, {"version ", "--version "},
	{"reason ", "--reason "}, {"who decided ", "--by "}}

// flagged returns err, mysql.Decision.Validate's, with each problem naming
// the flag an operator typed rather than the field.
func flagged(err error) error {
	lines := strings.Split(err.Error(), "\n")
	for i, l := range lines {
		for _, f := range flags {
			if rest, ok := strings.CutPrefix(l, f[0]); ok {
				lines[i] = f[1] + rest
				break
			}
		}
	}
	return errors.New(strings.Join(lines, "\n"))
}

// checkTag refuses a tag the app never had: it asks GitHub, unless the tag
// is one the app's current decisions already name (raising or halting a
// rollout, rewording a withdrawal, withdrawing the staged release: "Stop a
// bad release" must work while GitHub is down), which was checked when
// they were made.
func (v decisionVerb) checkTag(ctx context.Context, c *call, app release.App, d mysql.Decision) error {
	current, err := c.db.CurrentDecisions(ctx, app.Key)
	if err != nil {
		return err
	}
	if slices.ContainsFunc(current, func(r mysql.Decision) bool {
		return r.Tag == d.Tag && (r.Action == d.Action || d.Action != mysql.ActionRollout)
	}) {
		return nil
	}
	gh, err := github.New(github.Options{BaseURL: c.cfg.GitHubAPIURL, Token: c.cfg.GitHubToken.Reveal(), UserAgent: "craft-releases-poller-admin"})
	if err != nil {
		return err
	}
	rel, err := gh.Release(ctx, app, d.Tag)
	switch {
	case errors.Is(err, github.ErrNoRelease) && d.Action == mysql.ActionRollout:
		// A draft may be staged before it is published, so that the
		// rollout holds from its first second.
		if draft, derr := gh.Draft(ctx, app, d.Tag); derr != nil {
			return fmt.Errorf("--tag %q: could not check it on GitHub, nothing written (try again): %w", d.Tag, derr)
		} else if draft {
			fmt.Fprintf(c.stdout, "%s is a draft: the rollout holds once it is published\n", d.Tag)
			return nil
		}
		return fmt.Errorf("--tag %q: %s has no published release or draft %s on GitHub (%s)", d.Tag, app.Key, d.Tag, app.Repo)
	case errors.Is(err, github.ErrNoRelease):
		return fmt.Errorf("--tag %q: %s has no published release %s on GitHub (%s)", d.Tag, app.Key, d.Tag, app.Repo)
	case err != nil:
		return fmt.Errorf("--tag %q: could not check it on GitHub, nothing written (try again): %w", d.Tag, err)
	case d.Action == mysql.ActionRollout && rel.Prerelease:
		return fmt.Errorf("--tag %q is a pre-release: a rollout stages a stable release", d.Tag)
	}
	return nil
}

// publish publishes what MySQL holds now to Redis, as a poller's refresh
// does, and asks the pollers for the app's release history at once (a
// refresh request for its history entry, as a webhook files one), so that
// the API pods follow within seconds rather than at the pollers' next
// refresh; it says which happened.
func (v decisionVerb) publish(ctx context.Context, c *call, d mysql.Decision) {
	every := c.cfg.MySQL.Refresh
	f, err := mysql.NewRefresher(c.db, c.store, every, c.cfg.Logger(c.stderr).With(zap.String("binary", "poller")), c.clock)
	if err == nil {
		err = f.Refresh(ctx)
	}
	if err != nil {
		fmt.Fprintf(c.stdout, "stored, but not published now (%s): the pollers publish it within %s\n", shown(err.Error()), every)
		return
	}
	fmt.Fprintln(c.stdout, "published to Redis: the API pods follow within seconds")
	history := release.App{Key: d.App}.HistoryEntry().Key
	if err := c.store.Request(ctx, map[string]release.Refresh{history: {At: c.clock.Now()}}); err != nil {
		fmt.Fprintf(c.stdout, "the pollers were not asked for the app's recent releases (%s): they read the decision within %s\n",
			shown(err.Error()), every)
	}
}

// describe says what d decides, for people.
func describe(d mysql.Decision) string {
	switch d.Action {
	case mysql.ActionRollout:
		what := fmt.Sprintf("%s of %s at %d %%", d.Tag, d.App, d.Percent)
		switch d.Percent {
		case 0:
			return "rollout halted: " + what + " (no install is offered it)"
		case 100:
			return "rollout complete: " + what + " (every install is offered it)"
		}
		return "rollout: " + what
	case mysql.ActionRolloutEnd:
		return "rollout of " + d.App + " ended (the latest release is offered to everyone)"
	case mysql.ActionWithdraw:
		return "withdrawn: " + d.Tag + " of " + d.App + " (served to nobody)"
	case mysql.ActionRestore:
		return "restored: " + d.Tag + " of " + d.App
	case mysql.ActionMinimum:
		return "minimum version of " + d.App + ": " + d.Version
	}
	return "minimum version of " + d.App + " cleared"
}

// listDecisions prints the verb's current decisions, or with all its whole
// log: every row of its two actions, oldest first.
func (v decisionVerb) listDecisions(ctx context.Context, c *call, all bool) error {
	tw := tabwriter.NewWriter(c.stdout, 0, 0, 2, ' ', 0)
	if all {
		log, err := c.db.DecisionLog(ctx, "")
		if err != nil {
			return err
		}
		fmt.Fprintln(tw, "ID\tWHEN\tAPP\tACTION\tTAG\tPERCENT\tVERSION\tBY\tREASON")
		for _, d := range log {
			if d.Action != v.do && d.Action != v.undo {
				continue
			}
			percent := "-"
			if d.Action == mysql.ActionRollout {
				percent = strconv.Itoa(d.Percent) + " %"
			}
			fmt.Fprintln(tw, strings.Join([]string{d.Ref(), when(d.CreatedAt), d.App, string(d.Action), orDash(d.Tag), percent,
				orDash(d.Version), shown(d.By), reasonOf(d)}, "\t"))
		}
		return tw.Flush()
	}
	current, err := c.db.CurrentDecisions(ctx, "")
	if err != nil {
		return err
	}
	slices.SortFunc(current, func(a, b mysql.Decision) int {
		return cmp.Or(strings.Compare(a.App, b.App), cmp.Compare(a.ID, b.ID))
	})
	fmt.Fprintln(tw, v.header)
	for _, d := range current {
		if d.Action == v.do {
			cols := append([]string{d.App}, v.columns(d)...)
			fmt.Fprintln(tw, strings.Join(append(cols, when(d.CreatedAt), shown(d.By), reasonOf(d)), "\t"))
		}
	}
	return tw.Flush()
}

// reasonOf quotes d's reason for a listing, "-" for none.
func reasonOf(d mysql.Decision) string {
	if d.Reason == "" {
		return "-"
	}
	return strconv.Quote(d.Reason)
}
