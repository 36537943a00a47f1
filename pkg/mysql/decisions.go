package mysql

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	mysqldriver "github.com/go-sql-driver/mysql"

	"github.com/storytold/craft-releases/pkg/release"
	"github.com/storytold/craft-releases/pkg/updates/semver"
)

// tableDecisions is the operators' decisions on releases: append-only, both
// the state and the audit log (migrations/00002_release_decisions.sql).
const tableDecisions = "craft_release_decisions"

// Action is what one decision row does.
type Action string

// The actions (docs/operations.md, "Roll a release out").
const (
	ActionRollout      Action = "rollout"       // stage Tag at Percent (0 halts, 100 completes)
	ActionRolloutEnd   Action = "rollout_end"   // no rollout any more
	ActionWithdraw     Action = "withdraw"      // serve Tag to nobody, for Reason
	ActionRestore      Action = "restore"       // undo the withdrawal of Tag
	ActionMinimum      Action = "minimum"       // clients below Version must update, for Reason
	ActionMinimumClear Action = "minimum_clear" // no minimum version any more
)

// The limits on a decision. Lengths of text are counted in characters, as
// the schema's columns count them.
const (
	MaxAppKey    = release.MaxKey       // an app's key, as CRAFT_APPS_RELEASE_APPS spells it
	MaxReason    = release.MaxReason    // why: newlines and tabs allowed
	MaxBy        = 100                  // who: one line
	MaxWithdrawn = release.MaxWithdrawn // tags of one app withdrawn at once
	// MaxDecisions is the most decision rows published at once: the
	// newest.
	MaxDecisions = 1000
)

// Decision is one row of the decisions log: what an operator decided about
// an app's releases, who and when.
type Decision struct {
	ID        int64
	App       string // the app's key
	Action    Action
	Tag       string // rollout, withdraw and restore
	Percent   int    // rollout: 0 to 100
	Version   string // minimum: SemVer
	Reason    string // required by withdraw and minimum
	By        string // who decided
	CreatedAt time.Time
}

// Ref is how people name a decision: "decision/12".
func (d Decision) Ref() string { return "decision/" + strconv.FormatInt(d.ID, 10) }

// fieldsOf says what each action takes; whatever else is set is refused.
var fieldsOf = map[Action]struct{ tag, percent, version, reason bool }{
	ActionRollout:      {tag: true, percent: true},
	ActionRolloutEnd:   {},
	ActionWithdraw:     {tag: true, reason: true},
	ActionRestore:      {tag: true},
	ActionMinimum:      {version: true, reason: true},
	ActionMinimumClear: {},
}

// Validate checks d against the limits and returns every problem found,
// joined, or nil: the app is a key (a-z, 0-9, '.', '_', '-'); a tag, where
// the action takes one, is a git ref name of at most release.MaxTag bytes; a
// percent is 0 to 100; a version is SemVer (1.2.0, no leading v); a reason
// is required by withdraw and minimum; who decided is required. A field the
// action does not take must be empty.
func (d Decision) Validate() error {
	var errs []error
	if d.App == "" {
		errs = append(errs, errors.New("app is missing"))
	} else if !release.ValidKey(d.App) {
		errs = append(errs, fmt.Errorf("app %q is not an app key (at most %d of a-z, 0-9, '.', '_' and '-')", d.App, MaxAppKey))
	}
	takes, ok := fieldsOf[d.Action]
	if !ok {
		errs = append(errs, fmt.Errorf("action %q is not one of rollout, rollout_end, withdraw, restore, minimum, minimum_clear", d.Action))
	}
	switch {
	case !takes.tag && d.Tag != "":
		errs = append(errs, fmt.Errorf("%s takes no tag", d.Action))
	case takes.tag && d.Tag == "":
		errs = append(errs, errors.New("tag is missing"))
	case takes.tag && (len(d.Tag) > release.MaxTag || !release.ValidTag(d.Tag)):
		errs = append(errs, fmt.Errorf("tag %q is not a git tag of at most %d bytes", d.Tag, release.MaxTag))
	}
	switch {
	case !takes.percent && d.Percent != 0:
		errs = append(errs, fmt.Errorf("%s takes no percent", d.Action))
	case d.Percent < 0 || d.Percent > 100:
		errs = append(errs, fmt.Errorf("percent %d is not from 0 to 100", d.Percent))
	}
	switch {
	case !takes.version && d.Version != "":
		errs = append(errs, fmt.Errorf("%s takes no version", d.Action))
	case takes.version && d.Version == "":
		errs = append(errs, errors.New("version is missing"))
	case takes.version:
		if _, ok := semver.Parse(d.Version); !ok {
			errs = append(errs, fmt.Errorf("version %q is not a SemVer version such as 1.2.0 (no leading v)", d.Version))
		}
	}
	if takes.reason && strings.TrimSpace(d.Reason) == "" {
		errs = append(errs, errors.New("reason is missing (it is kept in the log and shown by the listings)"))
	} else {
		errs = append(errs, text("reason", d.Reason, MaxReason, true))
	}
	if strings.TrimSpace(d.By) == "" {
		errs = append(errs, errors.New("who decided is missing"))
	} else {
		errs = append(errs, text("who decided", d.By, MaxBy, false))
	}
	return errors.Join(errs...)
}

// decisionColumns are a decision row's columns, in Decision's order.
const decisionColumns = "id, app, action, tag, percent, version, reason, decided_by, created_at"

// currentQuery selects the rows that make the current decisions: of each
// app, its newest rollout row, the newest withdraw row of each tag and its
// newest minimum row, unless the newest row of its kind undoes it
// (rollout_end, restore, minimum_clear). Newest first, at most
// MaxDecisions. %s is a condition on the app.
const currentQuery = "SELECT " + decisionColumns + " FROM " + tableDecisions + " JOIN (SELECT MAX(id) AS newest FROM " + tableDecisions +
	" WHERE %s GROUP BY app, IF(action IN ('withdraw', 'restore'), tag, ''), CASE WHEN action IN ('rollout', 'rollout_end') THEN 1 WHEN action IN ('withdraw', 'restore') THEN 2 ELSE 3 END)" +
	" AS n ON id = n.newest WHERE action IN ('rollout', 'withdraw', 'minimum') ORDER BY id DESC LIMIT "

// CurrentDecisions returns the rows that make the current decisions of
// app, or of every app when app is "", newest first, at most MaxDecisions:
// the newest rollout of each app, unless ended; each tag's newest
// withdrawal, unless restored; the newest minimum, unless cleared.
func (d *DB) CurrentDecisions(ctx context.Context, app string) ([]Decision, error) {
	ctx, cancel := context.WithTimeout(ctx, d.opts.QueryTimeout)
	defer cancel()
	out, err := current(ctx, d.db, app)
	if err != nil {
		return nil, fmt.Errorf("read decisions: %w", err)
	}
	return out, nil
}

// querier is a pool or a transaction.
type querier interface {
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
}

// current runs currentQuery on q for app ("" for every app).
func current(ctx context.Context, q querier, app string) ([]Decision, error) {
	where, args := "TRUE", []any{}
	if app != "" {
		where, args = "app = ?", append(args, app)
	}
	return scanDecisions(q.QueryContext(ctx, fmt.Sprintf(currentQuery, where)+strconv.Itoa(MaxDecisions), args...))
}

// DecisionLog returns every decision row of app, or of every app when app
// is "", undone ones included, oldest first: the audit log.
func (d *DB) DecisionLog(ctx context.Context, app string) ([]Decision, error) {
	ctx, cancel := context.WithTimeout(ctx, d.opts.QueryTimeout)
	defer cancel()
	where, args := "", []any{}
	if app != "" {
		where, args = " WHERE app = ?", append(args, app)
	}
	out, err := scanDecisions(d.db.QueryContext(ctx, "SELECT "+decisionColumns+" FROM "+tableDecisions+where+" ORDER BY id", args...))
	if err != nil {
		return nil, fmt.Errorf("read the decisions log: %w", err)
	}
	return out, nil
}

func scanDecisions(rows *sql.Rows, err error) ([]Decision, error) {
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []Decision
	for rows.Next() {
		var (
			d       Decision
			action  string
			percent sql.NullInt64
		)
		if err := rows.Scan(&d.ID, &d.App, &action, &d.Tag, &percent, &d.Version, &d.Reason, &d.By, &d.CreatedAt); err != nil {
			return nil, err
		}
		d.Action, d.Percent = Action(action), int(percent.Int64)
		out = append(out, d)
	}
	return out, rows.Err()
}

// Decided turns the rows of CurrentDecisions (newest first) into the
// decisions of each app that has one, as the pollers publish them: the
// withdrawals in the order they were made, at most MaxWithdrawn of an app,
// the newest. A row that breaks the limits of Validate (written by hand,
// say), or a withdrawal over MaxWithdrawn, is left out and its ID listed in
// skipped. The map is never nil.
func Decided(current []Decision) (decided map[string]release.Decisions, skipped []string) {
	decided = make(map[string]release.Decisions)
	for _, r := range current {
		if r.Validate() != nil {
			skipped = append(skipped, r.Ref())
			continue
		}
		d := decided[r.App]
		switch r.Action {
		case ActionRollout:
			d.Rollout = &release.Rollout{Tag: r.Tag, Percent: r.Percent}
		case ActionWithdraw:
			if len(d.Withdrawn) == MaxWithdrawn {
				skipped = append(skipped, r.Ref())
				continue
			}
			d.Withdrawn = append(d.Withdrawn, release.Withdrawal{Tag: r.Tag, Reason: r.Reason})
		case ActionMinimum:
			d.Minimum = &release.Minimum{Version: r.Version, Reason: r.Reason}
		default:
			continue
		}
		decided[r.App] = d
	}
	for app, d := range decided {
		slices.Reverse(d.Withdrawn)
		decided[app] = d
	}
	return decided, skipped
}

// ErrUndecided is returned for an undoing decision (rollout_end, restore,
// minimum_clear) with nothing to undo.
var ErrUndecided = errors.New("nothing to undo")

// AddDecision validates d and stores it, made at now, unless it would
// change nothing that could be undone: ending a rollout when there is none,
// restoring a tag that is not withdrawn, or clearing a minimum when there is
// none is ErrUndecided (wrapped), and withdrawing a tag when MaxWithdrawn
// others are withdrawn is an error; nothing is written then. It returns d
// as stored, with its ID. The app's rows are locked while it decides, so
// that two operators at once are told in turn; a deadlock between two
// first decisions on an app (InnoDB's gap locks) is tried again.
func (d *DB) AddDecision(ctx context.Context, dec Decision, now time.Time) (Decision, error) {
	dec.ID, dec.CreatedAt = 0, stored(now)
	if err := dec.Validate(); err != nil {
		return Decision{}, err
	}
	ctx, cancel := context.WithTimeout(ctx, d.opts.QueryTimeout)
	defer cancel()
	for attempt := 1; ; attempt++ {
		stored, err := d.addDecision(ctx, dec)
		var my *mysqldriver.MySQLError
		if attempt < maxDeadlockAttempts && errors.As(err, &my) && my.Number == erDeadlock {
			continue
		}
		return stored, err
	}
}

// erDeadlock is MySQL's ER_LOCK_DEADLOCK, after which the transaction may
// simply be tried again; maxDeadlockAttempts bounds the tries.
const (
	erDeadlock          = 1213
	maxDeadlockAttempts = 10
)

// addDecision is one try of AddDecision, in one transaction.
func (d *DB) addDecision(ctx context.Context, dec Decision) (Decision, error) {
	tx, err := d.db.BeginTx(ctx, nil)
	if err != nil {
		return Decision{}, fmt.Errorf("add decision: %w", err)
	}
	defer func() { _ = tx.Rollback() }()
	// Locks the app's rows and the gaps between them: another decision on
	// the app waits for this one.
	if _, err := tx.ExecContext(ctx, "SELECT id FROM "+tableDecisions+" WHERE app = ? FOR UPDATE", dec.App); err != nil {
		return Decision{}, fmt.Errorf("add decision: %w", err)
	}
	rows, err := current(ctx, tx, dec.App)
	if err != nil {
		return Decision{}, fmt.Errorf("add decision: %w", err)
	}
	if err := undoable(dec, rows); err != nil {
		return Decision{}, err
	}
	var percent sql.NullInt64
	if dec.Action == ActionRollout {
		percent = sql.NullInt64{Int64: int64(dec.Percent), Valid: true}
	}
	res, err := tx.ExecContext(ctx, "INSERT INTO "+tableDecisions+
		" (app, action, tag, percent, version, reason, decided_by, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
		dec.App, string(dec.Action), dec.Tag, percent, dec.Version, dec.Reason, dec.By, dec.CreatedAt)
	if err != nil {
		return Decision{}, fmt.Errorf("add decision: %w", err)
	}
	if dec.ID, err = res.LastInsertId(); err != nil {
		return Decision{}, fmt.Errorf("add decision: %w", err)
	}
	if err := tx.Commit(); err != nil {
		return Decision{}, fmt.Errorf("add decision: %w", err)
	}
	return dec, nil
}

// undoable refuses dec when, given the app's current rows, it would undo
// nothing or withdraw one tag too many.
func undoable(dec Decision, rows []Decision) error {
	has := func(a Action, tag string) bool {
		return slices.ContainsFunc(rows, func(r Decision) bool { return r.Action == a && (tag == "" || r.Tag == tag) })
	}
	switch dec.Action {
	case ActionRolloutEnd:
		if !has(ActionRollout, "") {
			return fmt.Errorf("%s has no rollout to end: %w", dec.App, ErrUndecided)
		}
	case ActionRestore:
		if !has(ActionWithdraw, dec.Tag) {
			return fmt.Errorf("%s of %s is not withdrawn: %w", dec.Tag, dec.App, ErrUndecided)
		}
	case ActionMinimumClear:
		if !has(ActionMinimum, "") {
			return fmt.Errorf("%s has no minimum version to clear: %w", dec.App, ErrUndecided)
		}
	case ActionWithdraw:
		n := 0
		for _, r := range rows {
			if r.Action == ActionWithdraw && r.Tag != dec.Tag {
				n++
			}
		}
		if n >= MaxWithdrawn {
			return fmt.Errorf("%s already has %d tags withdrawn, the most it may have: restore one first", dec.App, n)
		}
	}
	return nil
}
