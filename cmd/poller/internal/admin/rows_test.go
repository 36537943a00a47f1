package admin

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/storytold/craft-releases/pkg/mysql"
	"github.com/storytold/craft-releases/test/fakeclock"
	"github.com/storytold/craft-releases/test/mariadbtest"
	"github.com/storytold/craft-releases/test/redistest"
)

// The MySQL tests share one MariaDB server, each with a database of its own.
func TestMain(m *testing.M) {
	os.Exit(redistest.Main(func() int { return mariadbtest.Main(m) }))
}

// clockAt is the clock of the subcommands in these tests.
var clockAt = time.Date(2026, 10, 10, 12, 0, 0, 0, time.UTC)

// command runs `poller args…` with vars and returns what it printed.
func command(t testing.TB, vars map[string]string, args ...string) (string, error) {
	t.Helper()
	var out bytes.Buffer
	getenv := func(k string) string { return vars[k] }
	err := Run(context.Background(), args, getenv, &out, io.Discard, fakeclock.New(clockAt))
	return out.String(), err
}

func mustCommand(t testing.TB, vars map[string]string, args ...string) string {
	t.Helper()
	out, err := command(t, vars, args...)
	if err != nil {
		t.Fatalf("poller %s: %v", strings.Join(args, " "), err)
	}
	return out
}

// checkOutput checks that out holds each of want, in order, and none of not.
func checkOutput(t testing.TB, args []string, out string, want, not []string) {
	t.Helper()
	rest := out
	for _, w := range want {
		i := strings.Index(rest, w)
		if i < 0 {
			t.Errorf("poller %s printed:\n%s\nwant %q (in order)", strings.Join(args, " "), out, w)
			break
		}
		rest = rest[i+len(w):]
	}
	for _, n := range not {
		if strings.Contains(out, n) {
			t.Errorf("poller %s printed:\n%s\nwant no %q", strings.Join(args, " "), out, n)
		}
	}
}

// TestMetaCommands runs migrate, notices and renames as an operator would,
// one command line at a time: each prints what it did, or is refused with
// a message naming what is wrong and leaves the tables as they were. The
// rules on the rows themselves are pkg/mysql's (TestNoticeValidate,
// TestRenameValidate); one refusal of each verb shows they apply here.
func TestMetaCommands(t *testing.T) {
	dsn := mariadbtest.Shared(t).NewDatabase(t).DSN()
	vars := map[string]string{"MYSQL_DSN": dsn}
	db, err := mysql.Open(dsn, mysql.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	held := func() string {
		n, err1 := db.Notices(context.Background())
		r, err2 := db.Renames(context.Background())
		return fmt.Sprintf("%+v %+v %v %v", n, r, err1, err2)
	}
	alert := func(more ...string) []string {
		return append([]string{"notices", "add", "--kind", "alert", "--title", "T"}, more...)
	}
	steps := []struct {
		args []string
		want []string // in the output, in order
		not  []string // not in the output
		err  string   // in the refusal
	}{
		{args: []string{"migrate"}, want: []string{"applied 00001_renames_and_notices.sql", "applied 00002_release_decisions.sql", "schema at version 2"}},
		{args: []string{"migrate"}, want: []string{"schema already at version 2"}, not: []string{"applied"}},
		{args: []string{"migrate", "down"}, err: `migrate: unexpected argument "down"`},
		{args: []string{"notices", "add", "--kind", "alert", "--title", " Maintenance tonight ", "--body", "22:00 UTC.",
			"--link", "https://status.example.com/1", "--end", "2026-10-11T00:00:00Z"}, want: []string{"added alert/1 (live)"}},
		{args: []string{"notices", "add", "--kind", "announcement", "--title", "Soon", "--start", "2026-10-12T00:00:00+02:00"},
			want: []string{"added announcement/1 (scheduled)"}},
		{args: []string{"notices", "add", "--kind", "alert", "--body", "B"}, err: "notices add: title is missing"},
		{args: []string{"notices", "add", "--title", "T"}, err: "notices add: --kind is missing (announcement or alert)"},
		{args: alert("--end", "tomorrow"), err: `notices add: --end "tomorrow" is not an RFC 3339 time such as 2026-10-10T22:00:00Z`},
		{args: alert("--start", "0001-01-01T00:00:00Z"), err: `notices add: --start "0001-01-01T00:00:00Z" is the zero time, which means none: leave --start out instead`},
		{args: alert("--colour", "red"), err: "flag provided but not defined: -colour"},
		{args: alert("extra"), err: `unexpected argument "extra"`},
		{args: alert("-h"), err: "the flags are listed by poller --help"},
		{args: []string{"notices"}, err: "notices: say list, add or end"},
		{args: []string{"notices", "delete"}, err: `notices: unknown command "delete" (list, add or end)`},
		{args: []string{"notices", "list"}, want: []string{"ID", "STATE", "announcement/1", "scheduled", "2026-10-11T22:00:00Z",
			`"Soon"`, "alert/1", "live", "2026-10-11T00:00:00Z", `"Maintenance tonight"`, "https://status.example.com/1"}},
		{args: []string{"notices", "end", "alert/1"}, want: []string{"ended alert/1"}},
		{args: []string{"notices", "end", "alert/1"}, want: []string{"alert/1 had already ended"}},
		{args: []string{"notices", "end"}, err: "want one KIND/ID"},
		{args: []string{"notices", "end", "alert-3"}, err: `"alert-3" is not KIND/ID`},
		{args: []string{"notices", "end", "alert/99"}, err: "there is no alert/99"},
		{args: []string{"notices", "end", "banner/1"}, err: `kind "banner" is not announcement or alert`},
		{args: []string{"notices", "list"}, want: []string{"announcement/1"}, not: []string{"alert/1"}},
		{args: []string{"notices", "list", "--all"}, want: []string{"announcement/1", "alert/1", "ended"}},
		{args: []string{"renames", "add", "--kind", "app", "--old", "PdfCraft", "--new", "DocuCraft", "--description", "Same app.",
			"--renamed-at", "2026-10-01T00:00:00Z"}, want: []string{"added app/1 (live)"}},
		{args: []string{"renames", "add", "--kind", "repo", "--old", "storytold/pdfcraft", "--new", "storytold/docucraft"},
			want: []string{"added repo/1 (live)"}},
		{args: []string{"renames", "add", "--kind", "app", "--old", "A", "--new", "A"}, err: `renames add: old and new names are both "A"`},
		{args: []string{"renames", "add", "--old", "A", "--new", "B"}, err: "--kind is missing (app or repo)"},
		{args: []string{"renames", "add", "--kind", "app", "--old", "A", "--new", "B", "--renamed-at", "0001-01-01T00:00:00Z"},
			err: `renames add: --renamed-at "0001-01-01T00:00:00Z" is the zero time`},
		{args: []string{"renames", "list"}, want: []string{"app/1", `"PdfCraft"`, `"DocuCraft"`, "2026-10-01T00:00:00Z", "repo/1", `"storytold/docucraft"`, "2026-10-10T12:00:00Z"}},
		{args: []string{"renames", "end", "repo/1"}, want: []string{"ended repo/1"}},
		{args: []string{"renames", "list"}, want: []string{"app/1"}, not: []string{"repo/1"}},
	}
	for _, st := range steps {
		before := held()
		out, err := command(t, vars, st.args...)
		switch {
		case st.err == "" && err != nil:
			t.Errorf("poller %s: %v", strings.Join(st.args, " "), err)
		case st.err != "" && (err == nil || !strings.Contains(err.Error(), st.err)):
			t.Errorf("poller %s: %v, want an error containing %q", strings.Join(st.args, " "), err, st.err)
		case st.err != "" && held() != before:
			t.Errorf("poller %s was refused but changed the tables:\n%s\nwant\n%s", strings.Join(st.args, " "), held(), before)
		}
		checkOutput(t, st.args, out, st.want, st.not)
	}
}

// TestCommandsNeedMySQL: the decisions verbs load the poller's
// configuration, which needs REDIS_URL first, and then say the same.
func TestCommandsNeedMySQL(t *testing.T) {
	for _, args := range [][]string{{"migrate"}, {"notices", "list"}, {"renames", "add"},
		{"rollout", "list"}, {"withdraw", "photocraft", "--tag", "v1", "--reason", "x"}, {"minimum", "list"}} {
		_, err := command(t, map[string]string{"REDIS_URL": "redis://127.0.0.1:1"}, args...)
		if err == nil || err.Error() != "MYSQL_DSN: unset, and so is MYSQL_URL: set one to reach the database" {
			t.Errorf("poller %s without MySQL: %v, want an error naming MYSQL_DSN", strings.Join(args, " "), err)
		}
	}
}

// TestUsage: the table of verbs writes --help's subcommands as operators
// know them.
func TestUsage(t *testing.T) {
	var out bytes.Buffer
	Usage(&out)
	want := `
Subcommands:
  status    print every app's shared entry and the fleet backoff, then exit
  backoff   print the fleet backoff, then exit; backoff clear [--by NAME] ends it (after
            fixing the token, say), logged with who ran it: NAME, else $USER or the account
  migrate   apply the MySQL schema's migrations (MYSQL_DSN or MYSQL_URL), then exit
  notices   list [--all] | add --kind announcement|alert --title T [--body B] [--link https://…]
            [--start TIME] [--end TIME] | end KIND/ID
  renames   list [--all] | add --kind app|repo --old NAME --new NAME [--description D]
            [--renamed-at TIME] [--start TIME] [--end TIME] | end KIND/ID
  rollout   APP --tag T --percent P [--reason R] [--by NAME] stages release T: P % of installs
            (0 halts it, 100 completes it) | APP --end [--by NAME] | list [--all]
  withdraw  APP --tag T --reason R [--by NAME] serves release T to nobody
            | APP --tag T --restore [--reason R] [--by NAME] | list [--all]
  minimum   APP --version V --reason R [--by NAME] offers clients below V the update
            whatever a rollout says | APP --clear [--by NAME] | list [--all]
            TIME is RFC 3339 (2026-10-10T22:00:00Z); without --start a row is live at once,
            without --end until it is ended. Limits: title 200 characters, body 4000, link 2000,
            app name 100, description 1000, repository org/project of at most 140.
            rollout, withdraw and minimum check APP against CRAFT_APPS_RELEASE_APPS and a new T
            against GitHub, log who (--by, else $USER or the account), when and why, and publish
            to Redis at once; list shows what is decided, list --all the whole log. V is SemVer
            (1.2.0); a reason is at most 1000 characters.
`
	if got := out.String(); got != want {
		t.Errorf("Usage wrote:\n%s\nwant:\n%s", got, want)
	}
}

func TestUnknownVerb(t *testing.T) {
	for _, args := range [][]string{{"bogus"}, {"clear"}, {"list"}} {
		_, err := command(t, nil, args...)
		if want := `unknown argument "` + args[0] + `" (try --help)`; err == nil || err.Error() != want {
			t.Errorf("poller %s: %v, want %s", args[0], err, want)
		}
	}
}
