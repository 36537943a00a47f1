package admin

import (
	"context"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/storytold/craft-releases/pkg/mysql"
	"github.com/storytold/craft-releases/pkg/redis"
	"github.com/storytold/craft-releases/pkg/redis/store"
	"github.com/storytold/craft-releases/pkg/release"
	"github.com/storytold/craft-releases/test/fakegithub"
	"github.com/storytold/craft-releases/test/mariadbtest"
	"github.com/storytold/craft-releases/test/redistest"
)

const photocraft = "storytold/photocraft"

// decisionWorld is what the decision verbs talk to: a migrated MariaDB
// database, a redis-server and a fake GitHub where photocraft has v0.6.0
// (latest), v0.5.0, the pre-release v0.7.0-beta.1 and the draft v0.8.0.
type decisionWorld struct {
	vars map[string]string
	gh   *fakegithub.Server
	db   *mysql.DB
	meta func() release.Bulletin // what Redis holds
	// refresh is the refresh request Redis holds for an entry key (zero
	// for none).
	refresh func(key string) release.Refresh
}

func newDecisionWorld(t *testing.T) decisionWorld {
	t.Helper()
	gh := fakegithub.New(t)
	gh.Publish(photocraft, fakegithub.NewRelease(photocraft, "v0.6.0"))
	beta := fakegithub.NewRelease(photocraft, "v0.7.0-beta.1")
	beta.Prerelease = true
	draft := fakegithub.NewRelease(photocraft, "v0.8.0")
	draft.Draft = true
	gh.SetList(photocraft, draft, beta, fakegithub.NewRelease(photocraft, "v0.6.0"), fakegithub.NewRelease(photocraft, "v0.5.0"))
	rs := redistest.Start(t)
	dsn := mariadbtest.Shared(t).NewDatabase(t).DSN()
	w := decisionWorld{
		vars: map[string]string{"MYSQL_DSN": dsn, "REDIS_URL": rs.URL(), "CRAFT_APPS_RELEASE_GITHUB_API_URL": gh.URL(), "USER": "alice"},
		gh:   gh,
	}
	mustCommand(t, w.vars, "migrate")
	db, err := mysql.Open(dsn, mysql.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	w.db = db
	client, err := redis.OpenURL(rs.URL())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(client.Close)
	w.meta = func() release.Bulletin {
		c, err := client.Client(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		h, err := c.Do(context.Background(), c.B().Hgetall().Key(store.MetaKey).Build()).AsStrMap()
		if err != nil {
			t.Fatal(err)
		}
		m, _ := store.DecodeMeta(h)
		return m
	}
	st := store.New(client, "test", release.Entries([]release.App{{Key: "photocraft", Repo: photocraft}}))
	w.refresh = func(key string) release.Refresh {
		r, err := st.Refreshes(context.Background(), []string{key})
		if err != nil {
			t.Fatal(err)
		}
		return r[key]
	}
	return w
}

// TestDecisionCommands: an operator starts a release at 5 %, raises it,
// halts it, withdraws it, requires a minimum version and undoes each, one
// command at a time; each reaches Redis at once, and the listings show it.
func TestDecisionCommands(t *testing.T) {
	w := newDecisionWorld(t)
	rollout := func(tag string, p int) map[string]release.Decisions {
		return map[string]release.Decisions{"photocraft": {Rollout: &release.Rollout{Tag: tag, Percent: p}}}
	}
	steps := []struct {
		args      []string
		want      []string // in the output, in order
		decisions map[string]release.Decisions
		asks      int // requests to GitHub for a tag
	}{
		{[]string{"rollout", "photocraft", "--tag", "v0.6.0", "--percent", "5", "--reason", "first installs"},
			[]string{"rollout: v0.6.0 of photocraft at 5 % by alice (decision/1)", "published to Redis"}, rollout("v0.6.0", 5), 1},
		{[]string{"rollout", "photocraft", "--tag", "v0.6.0", "--percent", "50", "--by", "bob"},
			[]string{"rollout: v0.6.0 of photocraft at 50 % by bob (decision/2)"}, rollout("v0.6.0", 50), 1},
		{[]string{"rollout", "photocraft", "--tag", "v0.6.0", "--percent", "0", "--reason", "crash reports"},
			[]string{"rollout halted: v0.6.0 of photocraft at 0 %"}, rollout("v0.6.0", 0), 1},
		{[]string{"rollout", "list"}, []string{"APP", "TAG", "PERCENT", "photocraft", "v0.6.0", "0 %", "2026-10-10T12:00:00Z", "alice", `"crash reports"`}, rollout("v0.6.0", 0), 1},
		{[]string{"withdraw", "photocraft", "--tag", "v0.6.0", "--reason", "crashes at start"},
			[]string{"withdrawn: v0.6.0 of photocraft (served to nobody) by alice (decision/4)"},
			map[string]release.Decisions{"photocraft": {Rollout: &release.Rollout{Tag: "v0.6.0"}, Withdrawn: []release.Withdrawal{{Tag: "v0.6.0", Reason: "crashes at start"}}}}, 2},
		{[]string{"rollout", "photocraft", "--end"}, []string{"rollout of photocraft ended"},
			map[string]release.Decisions{"photocraft": {Withdrawn: []release.Withdrawal{{Tag: "v0.6.0", Reason: "crashes at start"}}}}, 2},
		{[]string{"withdraw", "photocraft", "--tag", "v0.7.0-beta.1", "--reason", "bad signature"}, []string{"withdrawn: v0.7.0-beta.1"},
			map[string]release.Decisions{"photocraft": {Withdrawn: []release.Withdrawal{{Tag: "v0.6.0", Reason: "crashes at start"}, {Tag: "v0.7.0-beta.1", Reason: "bad signature"}}}}, 3},
		{[]string{"withdraw", "list"}, []string{"photocraft", "v0.6.0", `"crashes at start"`, "photocraft", "v0.7.0-beta.1", `"bad signature"`},
			map[string]release.Decisions{"photocraft": {Withdrawn: []release.Withdrawal{{Tag: "v0.6.0", Reason: "crashes at start"}, {Tag: "v0.7.0-beta.1", Reason: "bad signature"}}}}, 3},
		{[]string{"withdraw", "photocraft", "--tag", "v0.6.0", "--restore"}, []string{"restored: v0.6.0 of photocraft"},
			map[string]release.Decisions{"photocraft": {Withdrawn: []release.Withdrawal{{Tag: "v0.7.0-beta.1", Reason: "bad signature"}}}}, 3},
		{[]string{"minimum", "wordcraft", "--version", "0.5.0", "--reason", "the old format is gone"}, []string{"minimum version of wordcraft: 0.5.0"},
			map[string]release.Decisions{"photocraft": {Withdrawn: []release.Withdrawal{{Tag: "v0.7.0-beta.1", Reason: "bad signature"}}},
				"wordcraft": {Minimum: &release.Minimum{Version: "0.5.0", Reason: "the old format is gone"}}}, 3},
		{[]string{"minimum", "list"}, []string{"APP", "VERSION", "wordcraft", "0.5.0", `"the old format is gone"`}, nil, 3},
		{[]string{"minimum", "wordcraft", "--clear"}, []string{"minimum version of wordcraft cleared"},
			map[string]release.Decisions{"photocraft": {Withdrawn: []release.Withdrawal{{Tag: "v0.7.0-beta.1", Reason: "bad signature"}}}}, 3},
		{[]string{"rollout", "list", "--all"}, []string{"ID", "WHEN", "decision/1", "rollout", "v0.6.0", "5 %", "alice", `"first installs"`,
			"decision/2", "50 %", "bob", "-", "decision/3", "0 %", "decision/5", "rollout_end"}, nil, 3},
	}
	for _, st := range steps {
		out := mustCommand(t, w.vars, st.args...)
		rest := out
		for _, want := range st.want {
			i := strings.Index(rest, want)
			if i < 0 {
				t.Errorf("poller %s printed:\n%s\nwant %q (in order)", strings.Join(st.args, " "), out, want)
				break
			}
			rest = rest[i+len(want):]
		}
		if st.decisions != nil {
			if got := w.meta().Decisions; !reflect.DeepEqual(got, st.decisions) {
				t.Errorf("after poller %s, Redis holds %+v, want %+v", strings.Join(st.args, " "), got, st.decisions)
			}
		}
		if st.decisions != nil && w.refresh("photocraft:history").At.IsZero() {
			t.Errorf("after poller %s, no refresh request for photocraft's history", strings.Join(st.args, " "))
		}
		if got := w.gh.Count(fakegithub.AnyRepo); got != st.asks {
			t.Errorf("after poller %s, %d requests to GitHub, want %d", strings.Join(st.args, " "), got, st.asks)
		}
	}
	if out := mustCommand(t, w.vars, "withdraw", "list", "--all"); strings.Contains(out, "rollout") || strings.Count(out, "\n") != 4 {
		t.Errorf("withdraw list --all printed:\n%s\nwant the three withdraw and restore rows", out)
	}
}

// TestDecisionCommandsRefuseBadInput: every bad input is refused with a
// message naming what is wrong, and nothing is written.
func TestDecisionCommandsRefuseBadInput(t *testing.T) {
	w := newDecisionWorld(t)
	tests := []struct {
		name string
		args []string
		want []string
	}{
		{"no app", []string{"rollout"}, []string{"rollout: say list, or the app first"}},
		{"a flag first", []string{"rollout", "--tag", "v0.6.0"}, []string{"say list, or the app first"}},
		{"an unknown app", []string{"rollout", "photokraft", "--tag", "v0.6.0", "--percent", "5"},
			[]string{`rollout: unknown app "photokraft" (CRAFT_APPS_RELEASE_APPS has photocraft, `}},
		{"no tag", []string{"rollout", "photocraft", "--percent", "5"}, []string{"rollout: --tag is missing"}},
		{"no percent", []string{"rollout", "photocraft", "--tag", "v0.6.0"}, []string{"rollout: --percent is missing"}},
		{"a percent over 100", []string{"rollout", "photocraft", "--tag", "v0.6.0", "--percent", "101"},
			[]string{`rollout: --percent "101" is not a whole number from 0 to 100`}},
		{"a negative percent", []string{"rollout", "photocraft", "--tag", "v0.6.0", "--percent", "-1"}, []string{`--percent "-1" is not`}},
		{"a percent with a sign", []string{"rollout", "photocraft", "--tag", "v0.6.0", "--percent", "10%"}, []string{`--percent "10%" is not`}},
		{"a fractional percent", []string{"rollout", "photocraft", "--tag", "v0.6.0", "--percent", "2.5"}, []string{`--percent "2.5" is not`}},
		{"end with a tag", []string{"rollout", "photocraft", "--end", "--tag", "v0.6.0"}, []string{"rollout: --end takes no --tag or --percent"}},
		{"end of no rollout", []string{"rollout", "photocraft", "--end"}, []string{"rollout: photocraft has no rollout to end: nothing to undo; nothing written"}},
		{"a tag the app never had", []string{"rollout", "photocraft", "--tag", "v9.9.9", "--percent", "5"},
			[]string{`rollout: --tag "v9.9.9": photocraft has no published release v9.9.9 on GitHub (storytold/photocraft)`}},
		{"a draft", []string{"withdraw", "photocraft", "--tag", "v0.8.0", "--reason", "x"}, []string{"has no published release v0.8.0"}},
		{"another app's tag", []string{"withdraw", "vectorcraft", "--tag", "v0.6.0", "--reason", "x"},
			[]string{"vectorcraft has no published release v0.6.0 on GitHub (storytold/vectorcraft)"}},
		{"a staged pre-release", []string{"rollout", "photocraft", "--tag", "v0.7.0-beta.1", "--percent", "5"},
			[]string{`rollout: --tag "v0.7.0-beta.1" is a pre-release: a rollout stages a stable release`}},
		{"a tag that is no git ref", []string{"rollout", "photocraft", "--tag", "v0..6", "--percent", "5"}, []string{`rollout: tag "v0..6" is not a git tag`}},
		{"a withdrawal without a reason", []string{"withdraw", "photocraft", "--tag", "v0.6.0"}, []string{"withdraw: --reason is missing"}},
		{"a blank reason", []string{"withdraw", "photocraft", "--tag", "v0.6.0", "--reason", "  "}, []string{"withdraw: --reason is missing"}},
		{"a reason over the limit", []string{"withdraw", "photocraft", "--tag", "v0.6.0", "--reason", strings.Repeat("r", 1001)},
			[]string{"withdraw: reason is 1001 characters long; the limit is 1000"}},
		{"a restore of a tag not withdrawn", []string{"withdraw", "photocraft", "--tag", "v0.6.0", "--restore"}, []string{"v0.6.0 of photocraft is not withdrawn"}},
		{"a version that is not SemVer", []string{"minimum", "photocraft", "--version", "v0.5", "--reason", "x"},
			[]string{`minimum: version "v0.5" is not a SemVer version such as 1.2.0 (no leading v)`}},
		{"no version", []string{"minimum", "photocraft", "--reason", "x"}, []string{"minimum: --version is missing"}},
		{"a minimum without a reason", []string{"minimum", "photocraft", "--version", "0.5.0"}, []string{"minimum: --reason is missing"}},
		{"clear with a version", []string{"minimum", "photocraft", "--clear", "--version", "0.5.0"}, []string{"minimum: --clear takes no --version"}},
		{"clear of no minimum", []string{"minimum", "photocraft", "--clear"}, []string{"photocraft has no minimum version to clear"}},
		{"by on two lines", []string{"minimum", "photocraft", "--version", "0.5.0", "--reason", "x", "--by", "a\nb"},
			[]string{"who decided holds the control character U+000A"}},
		{"an unknown flag", []string{"rollout", "photocraft", "--percentage", "5"}, []string{"flag provided but not defined: -percentage"}},
		{"a stray argument", []string{"rollout", "photocraft", "--tag", "v0.6.0", "--percent", "5", "now"}, []string{`unexpected argument "now"`}},
		{"list with an argument", []string{"withdraw", "list", "photocraft"}, []string{`withdraw list: unexpected argument "photocraft"`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := command(t, w.vars, tt.args...)
			if err == nil {
				t.Fatalf("poller %q worked; want an error", tt.args)
			}
			for _, want := range tt.want {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q, want it to contain %q", err, want)
				}
			}
		})
	}
	t.Run("GitHub down", func(t *testing.T) {
		w.gh.Queue(fakegithub.TagOf(photocraft, "v0.6.0"), fakegithub.ServerError())
		_, err := command(t, w.vars, "withdraw", "photocraft", "--tag", "v0.6.0", "--reason", "x")
		if err == nil || !strings.Contains(err.Error(), `withdraw: --tag "v0.6.0": could not check it on GitHub, nothing written (try again): release v0.6.0 of storytold/photocraft: HTTP 500`) {
			t.Errorf("with GitHub down: %v, want a refusal that says so", err)
		}
	})
	if log, err := w.db.DecisionLog(context.Background(), ""); err != nil || len(log) != 0 {
		t.Errorf("the log after refused input: %+v, %v; want nothing", log, err)
	}
	if out := mustCommand(t, w.vars, "rollout", "list", "--all"); strings.Count(out, "\n") != 1 {
		t.Errorf("rollout list --all after refused input:\n%s\nwant the header alone", out)
	}
}

// TestDecisionStoredWithRedisDown: the decision is stored, and the verb says
// that the pollers will publish it.
func TestDecisionStoredWithRedisDown(t *testing.T) {
	w := newDecisionWorld(t)
	vars := map[string]string{}
	for k, v := range w.vars {
		vars[k] = v
	}
	vars["REDIS_URL"] = "redis://127.0.0.1:1"
	start := time.Now()
	out := mustCommand(t, vars, "minimum", "photocraft", "--version", "0.5.0", "--reason", "x")
	if !strings.Contains(out, "minimum version of photocraft: 0.5.0 by alice (decision/1)") ||
		!strings.Contains(out, "stored, but not published now (") || !strings.Contains(out, "the pollers publish it within 1m0s") {
		t.Errorf("with Redis down printed:\n%s", out)
	}
	if took := time.Since(start); took > 10*time.Second {
		t.Errorf("took %v with Redis down", took)
	}
}
