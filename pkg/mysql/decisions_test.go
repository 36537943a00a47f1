package mysql_test

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/storytold/craft-releases/pkg/mysql"
	"github.com/storytold/craft-releases/pkg/release"
)

// rollout, withdraw and restore are decisions as an operator enters them.
func rollout(app, tag string, percent int) mysql.Decision {
	return mysql.Decision{App: app, Action: mysql.ActionRollout, Tag: tag, Percent: percent}
}

func withdraw(app, tag, reason string) mysql.Decision {
	return mysql.Decision{App: app, Action: mysql.ActionWithdraw, Tag: tag, Reason: reason}
}

func restore(app, tag string) mysql.Decision {
	return mysql.Decision{App: app, Action: mysql.ActionRestore, Tag: tag}
}

func decide(t testing.TB, db *mysql.DB, d mysql.Decision, now time.Time) mysql.Decision {
	t.Helper()
	if d.By == "" {
		d.By = "alice"
	}
	got, err := db.AddDecision(context.Background(), d, now)
	must(t, err)
	return got
}

// decided reads what the pollers would publish of the decisions.
func decided(t testing.TB, db *mysql.DB) map[string]release.Decisions {
	t.Helper()
	m, skipped, err := db.Live(context.Background(), noon)
	if err != nil || len(skipped) > 0 {
		t.Fatalf("Live: skipped %q, %v", skipped, err)
	}
	return m.Decisions
}

// TestDecisionSequences: the current decisions derived from the log after
// each step of what operators do.
func TestDecisionSequences(t *testing.T) {
	db := migrated(t, nil)
	staged := func(tag string, p int, more ...release.Withdrawal) map[string]release.Decisions {
		return map[string]release.Decisions{"photocraft": {Rollout: &release.Rollout{Tag: tag, Percent: p}, Withdrawn: more}}
	}
	steps := []struct {
		name string
		d    mysql.Decision
		want map[string]release.Decisions
	}{
		{"start at 5 %", rollout("photocraft", "v0.6.0", 5), staged("v0.6.0", 5)},
		{"raise to 20 %", rollout("photocraft", "v0.6.0", 20), staged("v0.6.0", 20)},
		{"halt", rollout("photocraft", "v0.6.0", 0), staged("v0.6.0", 0)},
		{"withdraw the staged tag", withdraw("photocraft", "v0.6.0", "crashes"), staged("v0.6.0", 0, release.Withdrawal{Tag: "v0.6.0", Reason: "crashes"})},
		{"end the rollout", mysql.Decision{App: "photocraft", Action: mysql.ActionRolloutEnd}, map[string]release.Decisions{"photocraft": {Withdrawn: []release.Withdrawal{{Tag: "v0.6.0", Reason: "crashes"}}}}},
		{"withdraw another, in order", withdraw("photocraft", "v0.5.9", "bad\nsignature"), map[string]release.Decisions{"photocraft": {Withdrawn: []release.Withdrawal{{Tag: "v0.6.0", Reason: "crashes"}, {Tag: "v0.5.9", Reason: "bad\nsignature"}}}}},
		{"withdraw the first again, with a new reason", withdraw("photocraft", "v0.6.0", "crashes on macOS"), map[string]release.Decisions{"photocraft": {Withdrawn: []release.Withdrawal{{Tag: "v0.5.9", Reason: "bad\nsignature"}, {Tag: "v0.6.0", Reason: "crashes on macOS"}}}}},
		{"restore one", restore("photocraft", "v0.5.9"), map[string]release.Decisions{"photocraft": {Withdrawn: []release.Withdrawal{{Tag: "v0.6.0", Reason: "crashes on macOS"}}}}},
		{"a minimum for another app", mysql.Decision{App: "vectorcraft", Action: mysql.ActionMinimum, Version: "1.2.0", Reason: "old format"}, map[string]release.Decisions{"photocraft": {Withdrawn: []release.Withdrawal{{Tag: "v0.6.0", Reason: "crashes on macOS"}}}, "vectorcraft": {Minimum: &release.Minimum{Version: "1.2.0", Reason: "old format"}}}},
		{"restore the last", restore("photocraft", "v0.6.0"), map[string]release.Decisions{"vectorcraft": {Minimum: &release.Minimum{Version: "1.2.0", Reason: "old format"}}}},
		{"raise the minimum", mysql.Decision{App: "vectorcraft", Action: mysql.ActionMinimum, Version: "1.3.0-rc.1", Reason: "newer"}, map[string]release.Decisions{"vectorcraft": {Minimum: &release.Minimum{Version: "1.3.0-rc.1", Reason: "newer"}}}},
		{"clear it", mysql.Decision{App: "vectorcraft", Action: mysql.ActionMinimumClear}, map[string]release.Decisions{}},
		{"a new rollout after all that", rollout("photocraft", "v0.7.0", 100), staged("v0.7.0", 100)},
	}
	for i, st := range steps {
		at := noon.Add(time.Duration(i) * time.Minute)
		got := decide(t, db, st.d, at)
		if got.ID != int64(i+1) || !got.CreatedAt.Equal(at) {
			t.Errorf("%s: stored as %s at %v, want decision/%d at %v", st.name, got.Ref(), got.CreatedAt, i+1, at)
		}
		if got := decided(t, db); !reflect.DeepEqual(got, st.want) {
			t.Errorf("%s: decided\n got %s\nwant %s", st.name, show(got), show(st.want))
		}
	}
	log, err := db.DecisionLog(context.Background(), "vectorcraft")
	must(t, err)
	var actions []string
	for _, d := range log {
		actions = append(actions, fmt.Sprintf("%s %s %s by %s at %s", d.Ref(), d.Action, d.Version, d.By, d.CreatedAt.Format("15:04")))
	}
	want := []string{"decision/9 minimum 1.2.0 by alice at 12:08", "decision/11 minimum 1.3.0-rc.1 by alice at 12:10",
		"decision/12 minimum_clear  by alice at 12:11"}
	if !reflect.DeepEqual(actions, want) {
		t.Errorf("the log of vectorcraft:\n got %q\nwant %q", actions, want)
	}
}

func show(m map[string]release.Decisions) string {
	b, _ := release.Marshal(m)
	return string(b)
}

// TestAddDecisionRefuses: bad input is refused with what is wrong, and
// nothing is written.
func TestAddDecisionRefuses(t *testing.T) {
	db := migrated(t, nil)
	ctx := context.Background()
	decide(t, db, withdraw("photocraft", "v0.5.0", "x"), noon)
	for i := range mysql.MaxWithdrawn - 1 {
		decide(t, db, withdraw("photocraft", fmt.Sprintf("v0.4.%d", i), "x"), noon)
	}
	before, err := db.DecisionLog(ctx, "")
	must(t, err)
	tests := []struct {
		name string
		d    mysql.Decision
		want []string
	}{
		{"no app", mysql.Decision{Action: mysql.ActionRollout, Tag: "v1", Percent: 5}, []string{"app is missing"}},
		{"an app that is no key", mysql.Decision{App: "Photo Craft", Action: mysql.ActionRolloutEnd}, []string{`app "Photo Craft" is not an app key`}},
		{"an unknown action", mysql.Decision{App: "a", Action: "delete"}, []string{`action "delete" is not one of`}},
		{"a percent over 100", rollout("a", "v1", 101), []string{"percent 101 is not from 0 to 100"}},
		{"a negative percent", rollout("a", "v1", -1), []string{"percent -1 is not from 0 to 100"}},
		{"a rollout without a tag", mysql.Decision{App: "a", Action: mysql.ActionRollout, Percent: 5}, []string{"tag is missing"}},
		{"a tag that is no git ref", rollout("a", "v1 .2", 5), []string{`tag "v1 .2" is not a git tag`}},
		{"a tag over the limit", mysql.Decision{App: "a", Action: mysql.ActionRollout, Tag: "v" + strings.Repeat("1", 64), Percent: 5}, []string{"is not a git tag of at most 64 bytes"}},
		{"a withdrawal without a reason", withdraw("a", "v1", " "), []string{"reason is missing"}},
		{"a minimum that is not SemVer", mysql.Decision{App: "a", Action: mysql.ActionMinimum, Version: "v1.2", Reason: "x"},
			[]string{`version "v1.2" is not a SemVer version such as 1.2.0 (no leading v)`}},
		{"a minimum without a version", mysql.Decision{App: "a", Action: mysql.ActionMinimum, Reason: "x"}, []string{"version is missing"}},
		{"a reason over the limit", mysql.Decision{App: "a", Action: mysql.ActionMinimum, Version: "1.0.0", Reason: strings.Repeat("r", 1001)}, []string{"reason is 1001 characters long; the limit is 1000"}},
		{"a reason with a right-to-left override", withdraw("a", "v1", "\u202ex"), []string{"reason holds the bidirectional formatting character U+202E"}},
		{"nobody deciding", mysql.Decision{App: "a", Action: mysql.ActionRolloutEnd, By: " "}, []string{"who decided is missing"}},
		{"who on two lines", mysql.Decision{App: "a", Action: mysql.ActionRolloutEnd, By: "a\nb"}, []string{"who decided holds the control character U+000A"}},
		{"a field the action does not take", mysql.Decision{App: "a", Action: mysql.ActionMinimumClear, Tag: "v1", Percent: 3, Version: "1.0.0"}, []string{"minimum_clear takes no tag", "minimum_clear takes no percent", "minimum_clear takes no version"}},
		{"ending no rollout", mysql.Decision{App: "photocraft", Action: mysql.ActionRolloutEnd}, []string{"photocraft has no rollout to end"}},
		{"restoring a tag not withdrawn", restore("photocraft", "v0.6.0"), []string{"v0.6.0 of photocraft is not withdrawn"}},
		{"restoring another app's tag", restore("vectorcraft", "v0.5.0"), []string{"v0.5.0 of vectorcraft is not withdrawn"}},
		{"clearing no minimum", mysql.Decision{App: "photocraft", Action: mysql.ActionMinimumClear}, []string{"photocraft has no minimum version to clear"}},
		{"one withdrawal too many", withdraw("photocraft", "v0.6.0", "x"), []string{"photocraft already has 10 tags withdrawn, the most it may have: restore one first"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.d.By == "" {
				tt.d.By = "alice"
			}
			_, err := db.AddDecision(ctx, tt.d, noon)
			if err == nil {
				t.Fatalf("AddDecision(%+v) worked; want an error", tt.d)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q, want it to contain %q", err, w)
				}
			}
		})
	}
	after, err := db.DecisionLog(ctx, "")
	if err != nil || !reflect.DeepEqual(after, before) {
		t.Errorf("the log after refused input: %d rows, %v; want the %d rows before", len(after), err, len(before))
	}
	// Withdrawing a tag that is withdrawn already changes its reason, even
	// at the limit.
	decide(t, db, withdraw("photocraft", "v0.5.0", "y"), noon)
	_, err = db.AddDecision(ctx, mysql.Decision{App: "photocraft", Action: mysql.ActionRolloutEnd, By: "a"}, noon)
	if !errors.Is(err, mysql.ErrUndecided) {
		t.Errorf("ending no rollout: %v, want ErrUndecided", err)
	}
}

// TestConcurrentFirstDecisions: operators deciding about apps none of which
// has a decision yet, all at once, are each stored: InnoDB's deadlock
// between their gap locks is tried again, not returned.
func TestConcurrentFirstDecisions(t *testing.T) {
	db := migrated(t, nil)
	const operators = 40
	errs := make(chan error, operators)
	for i := range operators {
		go func() {
			_, err := db.AddDecision(context.Background(), mysql.Decision{App: fmt.Sprintf("app%d", i%4), Action: mysql.ActionMinimum,
				Version: "1.0.0", Reason: "r", By: fmt.Sprintf("op%d", i)}, noon)
			errs <- err
		}()
	}
	for range operators {
		if err := <-errs; err != nil {
			t.Errorf("AddDecision: %v", err)
		}
	}
	log, err := db.DecisionLog(context.Background(), "")
	must(t, err)
	if len(log) != operators {
		t.Errorf("%d decisions stored, want %d", len(log), operators)
	}
}

// TestLiveSaysWhenDecisionsAreCut: past MaxDecisions current decisions, the
// oldest are not published, and Live says so among the rows left out, so
// that the refresher warns rather than serve an old withdrawal again.
func TestLiveSaysWhenDecisionsAreCut(t *testing.T) {
	db, d := migratedDB(t, nil)
	var values []string
	for i := range mysql.MaxDecisions {
		values = append(values, fmt.Sprintf("('app%d', 'withdraw', 'v%d', 'r', 'op', '2026-12-01 00:00:00')", i/mysql.MaxWithdrawn, i%mysql.MaxWithdrawn))
	}
	insert := "INSERT INTO craft_release_decisions (app, action, tag, reason, decided_by, created_at) VALUES "
	if _, err := raw(t, d).Exec(insert + strings.Join(values, ", ")); err != nil {
		t.Fatal(err)
	}
	_, skipped, err := db.Live(context.Background(), noon)
	must(t, err)
	if !slices.Contains(skipped, fmt.Sprintf("decisions past the newest %d", mysql.MaxDecisions)) {
		t.Errorf("skipped %q, want the cut named", skipped)
	}
}
