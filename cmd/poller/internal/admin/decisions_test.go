package admin

import (
	"context"
	"encoding/json"
	"maps"
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

// TestDecisionCommands: against a migrated database, a redis-server and a
// fake GitHub where photocraft has v0.6.0 (latest), v0.5.0, the pre-release
// v0.7.0-beta.1 and the draft v0.8.0, an operator starts a release at 5 %,
// raises it, halts it, withdraws it, requires a minimum version and undoes
// each, one command at a time; each is logged in MySQL and reaches Redis at
// once, and the listings show it. Bad input is refused naming the argument,
// and nothing is written. The rules on a decision itself are pkg/mysql's
// (TestAddDecisionRefuses); one refusal of each verb shows they apply here.
func TestDecisionCommands(t *testing.T) {
	gh := fakegithub.New(t)
	gh.Publish(photocraft, fakegithub.NewRelease(photocraft, "v0.6.0"))
	beta := fakegithub.NewRelease(photocraft, "v0.7.0-beta.1")
	beta.Prerelease = true
	draft := fakegithub.NewRelease(photocraft, "v0.8.0")
	draft.Draft = true
	gh.SetList(photocraft, draft, beta, fakegithub.NewRelease(photocraft, "v0.6.0"), fakegithub.NewRelease(photocraft, "v0.5.0"))
	rs := redistest.Start(t)
	dsn := mariadbtest.Shared(t).NewDatabase(t).DSN()
	vars := map[string]string{"MYSQL_DSN": dsn, "REDIS_URL": rs.URL(), "CRAFT_APPS_RELEASE_GITHUB_API_URL": gh.URL(), "USER": "alice"}
	mustCommand(t, vars, "migrate")
	db, err := mysql.Open(dsn, mysql.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	client, err := redis.OpenURL(rs.URL())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(client.Close)
	ctx := context.Background()
	meta := func() release.Bulletin { // what Redis holds
		c, err := client.Client(ctx)
		if err != nil {
			t.Fatal(err)
		}
		h, err := c.Do(ctx, c.B().Hgetall().Key(store.MetaKey).Build()).AsStrMap()
		if err != nil {
			t.Fatal(err)
		}
		m, _ := store.DecodeMeta(h)
		return m
	}
	shared := store.New(client, "test", release.Entries([]release.App{{Key: "photocraft", Repo: photocraft}}))
	historyRefresh := func() release.Refresh { // the refresh request Redis holds for photocraft's history
		r, err := shared.Refreshes(ctx, []string{"photocraft:history"})
		if err != nil {
			t.Fatal(err)
		}
		return r["photocraft:history"]
	}
	const (
		staged5  = `{"photocraft":{"rollout":{"tag":"v0.6.0","percent":5}}}`
		crashes  = `{"tag":"v0.6.0","reason":"crashes at start"}`
		badSig   = `{"tag":"v0.7.0-beta.1","reason":"bad signature"}`
		onlyBeta = `{"photocraft":{"withdrawn":[` + badSig + `]}`
	)
	steps := []struct {
		args      []string
		want      []string // in the output, in order
		err       string   // in the refusal
		decisions string   // what Redis then holds, as JSON; "" for unchecked
		asks      int      // requests to GitHub for a tag
		before    func()
		redisDown bool
	}{
		{args: []string{"rollout"}, err: "rollout: say list, or the app first"},
		{args: []string{"rollout", "--tag", "v0.6.0"}, err: "say list, or the app first"},
		{args: []string{"rollout", "photokraft", "--tag", "v0.6.0", "--percent", "5"},
			err: `rollout: unknown app "photokraft" (CRAFT_APPS_RELEASE_APPS has photocraft, `},
		{args: []string{"rollout", "photocraft", "--percent", "5"}, err: "rollout: --tag is missing"},
		{args: []string{"rollout", "photocraft", "--tag", "v0.6.0"}, err: "rollout: --percent is missing"},
		{args: []string{"rollout", "photocraft", "--tag", "v0.6.0", "--percent", "101"},
			err: `rollout: --percent "101" is not a whole number from 0 to 100`},
		{args: []string{"rollout", "photocraft", "--tag", "v0.6.0", "--percent", "2.5"}, err: `--percent "2.5" is not`},
		{args: []string{"rollout", "photocraft", "--end", "--tag", "v0.6.0"}, err: "rollout: --end takes no --tag or --percent"},
		{args: []string{"rollout", "photocraft", "--end"}, err: "rollout: photocraft has no rollout to end: nothing to undo; nothing written"},
		{args: []string{"rollout", "photocraft", "--tag", "v9.9.9", "--percent", "5"},
			err: `rollout: --tag "v9.9.9": photocraft has no published release or draft v9.9.9 on GitHub (storytold/photocraft)`},
		{args: []string{"withdraw", "photocraft", "--tag", "v0.8.0", "--reason", "x"}, err: "has no published release v0.8.0"},
		{args: []string{"rollout", "photocraft", "--tag", "v0.7.0-beta.1", "--percent", "5"},
			err: `rollout: --tag "v0.7.0-beta.1" is a pre-release: a rollout stages a stable release`},
		{args: []string{"rollout", "photocraft", "--tag", "v0..6", "--percent", "5"}, err: `rollout: --tag "v0..6" is not a git tag`},
		{args: []string{"withdraw", "photocraft", "--tag", "v0.6.0", "--reason", "  "}, err: "withdraw: --reason is missing"},
		{args: []string{"withdraw", "photocraft", "--tag", "v0.6.0", "--reason", strings.Repeat("r", 1001)},
			err: "withdraw: --reason is 1001 characters long; the limit is 1000"},
		{args: []string{"withdraw", "photocraft", "--tag", "v0.6.0", "--reason", "x"},
			before: func() { gh.Queue(fakegithub.TagOf(photocraft, "v0.6.0"), fakegithub.ServerError()) },
			err:    `withdraw: --tag "v0.6.0": could not check it on GitHub, nothing written (try again): release v0.6.0 of storytold/photocraft: HTTP 500`},
		{args: []string{"withdraw", "list", "photocraft"}, err: `withdraw list: unexpected argument "photocraft"`},
		{args: []string{"minimum", "photocraft", "--version", "v0.5", "--reason", "x"},
			err: `minimum: --version "v0.5" is not a SemVer version such as 1.2.0 (no leading v)`},
		{args: []string{"minimum", "photocraft", "--reason", "x"}, err: "minimum: --version is missing"},
		{args: []string{"minimum", "photocraft", "--version", "0.5.0"}, err: "minimum: --reason is missing"},
		{args: []string{"minimum", "photocraft", "--clear", "--version", "0.5.0"}, err: "minimum: --clear takes no --version"},

		{args: []string{"rollout", "photocraft", "--tag", "v0.6.0", "--percent", "5", "--reason", "first installs"},
			want: []string{"rollout: v0.6.0 of photocraft at 5 % by alice (decision/1)", "published to Redis"}, decisions: staged5, asks: 1},
		{args: []string{"rollout", "photocraft", "--tag", "v0.6.0", "--percent", "50", "--by", "bob"},
			want: []string{"rollout: v0.6.0 of photocraft at 50 % by bob (decision/2)"}, decisions: `{"photocraft":{"rollout":{"tag":"v0.6.0","percent":50}}}`},
		{args: []string{"rollout", "photocraft", "--tag", "v0.6.0", "--percent", "0", "--reason", "crash reports"},
			want: []string{"rollout halted: v0.6.0 of photocraft at 0 %"}, decisions: `{"photocraft":{"rollout":{"tag":"v0.6.0","percent":0}}}`},
		{args: []string{"rollout", "list"}, want: []string{"APP", "TAG", "PERCENT", "photocraft", "v0.6.0", "0 %", "2026-10-10T12:00:00Z", "alice", `"crash reports"`}},
		{args: []string{"withdraw", "photocraft", "--tag", "v0.6.0", "--reason", "crashes at start"},
			want:      []string{"withdrawn: v0.6.0 of photocraft (served to nobody) by alice (decision/4)"},
			decisions: `{"photocraft":{"rollout":{"tag":"v0.6.0","percent":0},"withdrawn":[` + crashes + `]}}`, asks: 0}, // the staged tag: no need to ask GitHub
		{args: []string{"rollout", "photocraft", "--end"}, want: []string{"rollout of photocraft ended"},
			decisions: `{"photocraft":{"withdrawn":[` + crashes + `]}}`},
		{args: []string{"withdraw", "photocraft", "--tag", "v0.7.0-beta.1", "--reason", "bad signature"}, want: []string{"withdrawn: v0.7.0-beta.1"},
			decisions: `{"photocraft":{"withdrawn":[` + crashes + `,` + badSig + `]}}`, asks: 1},
		{args: []string{"withdraw", "list"}, want: []string{"photocraft", "v0.6.0", `"crashes at start"`, "photocraft", "v0.7.0-beta.1", `"bad signature"`}},
		{args: []string{"withdraw", "photocraft", "--tag", "v0.6.0", "--restore"}, want: []string{"restored: v0.6.0 of photocraft"},
			decisions: onlyBeta + `}`},
		{args: []string{"minimum", "wordcraft", "--version", "0.5.0", "--reason", "the old format is gone"}, want: []string{"minimum version of wordcraft: 0.5.0"},
			decisions: onlyBeta + `,"wordcraft":{"minimum":{"version":"0.5.0","reason":"the old format is gone"}}}`},
		{args: []string{"minimum", "list"}, want: []string{"APP", "VERSION", "wordcraft", "0.5.0", `"the old format is gone"`}},
		{args: []string{"minimum", "wordcraft", "--clear"}, want: []string{"minimum version of wordcraft cleared"}, decisions: onlyBeta + `}`},
		{args: []string{"rollout", "list", "--all"}, want: []string{"ID", "WHEN", "decision/1", "rollout", "v0.6.0", "5 %", "alice", `"first installs"`,
			"decision/2", "50 %", "bob", "-", "decision/3", "0 %", "decision/5", "rollout_end"}},
		// With Redis down the decision is stored, and the verb says that
		// the pollers will publish it.
		{args: []string{"minimum", "photocraft", "--version", "0.5.0", "--reason", "x"}, redisDown: true,
			want: []string{"minimum version of photocraft: 0.5.0 by alice (decision/10)", "stored, but not published now (",
				"the pollers publish it within 1m0s"}, decisions: onlyBeta + `}`},
	}
	for _, st := range steps {
		args := strings.Join(st.args, " ")
		if st.before != nil {
			st.before()
		}
		stepVars := vars
		if st.redisDown {
			stepVars = maps.Clone(vars)
			stepVars["REDIS_URL"] = "redis://127.0.0.1:1"
		}
		logBefore, err := db.DecisionLog(ctx, "")
		if err != nil {
			t.Fatal(err)
		}
		redisBefore, asksBefore, start := meta().Decisions, gh.Count(fakegithub.AnyRepo), time.Now()
		out, err := command(t, stepVars, st.args...)
		took := time.Since(start)
		switch {
		case st.err == "" && err != nil:
			t.Errorf("poller %s: %v", args, err)
		case st.err != "" && (err == nil || !strings.Contains(err.Error(), st.err)):
			t.Errorf("poller %s: %v, want an error containing %q", args, err, st.err)
		}
		checkOutput(t, st.args, out, st.want, nil)
		logAfter, err := db.DecisionLog(ctx, "")
		wrote := 0
		if st.err == "" && st.args[1] != "list" {
			wrote = 1
		}
		if err != nil || len(logAfter) != len(logBefore)+wrote {
			t.Errorf("after poller %s, the log holds %d rows (%v), want %d", args, len(logAfter), err, len(logBefore)+wrote)
		}
		if st.err != "" {
			if got := meta().Decisions; !reflect.DeepEqual(got, redisBefore) {
				t.Errorf("poller %s was refused but Redis now holds %+v, want %+v", args, got, redisBefore)
			}
			continue
		}
		if st.decisions != "" {
			var want map[string]release.Decisions
			if err := json.Unmarshal([]byte(st.decisions), &want); err != nil {
				t.Fatal(err)
			}
			if got := meta().Decisions; !reflect.DeepEqual(got, want) {
				t.Errorf("after poller %s, Redis holds %+v, want %+v", args, got, want)
			}
		}
		if len(logAfter) > 0 && historyRefresh().At.IsZero() {
			t.Errorf("after poller %s, no refresh request for photocraft's history", args)
		}
		if got := gh.Count(fakegithub.AnyRepo) - asksBefore; got != st.asks {
			t.Errorf("poller %s made %d requests to GitHub, want %d", args, got, st.asks)
		}
		if st.redisDown && took > 10*time.Second {
			t.Errorf("poller %s took %v with Redis down", args, took)
		}
	}
	if out := mustCommand(t, vars, "withdraw", "list", "--all"); strings.Contains(out, "rollout") || strings.Count(out, "\n") != 4 {
		t.Errorf("withdraw list --all printed:\n%s\nwant the three withdraw and restore rows", out)
	}
	// A draft may be staged before it is published.
	if out := mustCommand(t, vars, "rollout", "photocraft", "--tag", "v0.8.0", "--percent", "5"); !strings.Contains(out, "v0.8.0 is a draft") {
		t.Errorf("rollout of a draft printed:\n%s\nwant it staged, a draft", out)
	}
}
