package admin

import (
	"bytes"
	"context"
	"io"
	"os"
	"strings"
	"testing"
	"time"

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

func mysqlVars(t testing.TB) map[string]string {
	t.Helper()
	return map[string]string{"MYSQL_DSN": mariadbtest.Shared(t).NewDatabase(t).DSN()}
}

func TestMetaCommands(t *testing.T) {
	vars := mysqlVars(t)
	steps := []struct {
		args []string
		want []string // in the output, in order
		not  []string // not in the output
	}{
		{[]string{"migrate"}, []string{"applied 00001_renames_and_notices.sql", "applied 00002_release_decisions.sql", "schema at version 2"}, nil},
		{[]string{"migrate"}, []string{"schema already at version 2"}, []string{"applied"}},
		{[]string{"notices", "add", "--kind", "alert", "--title", " Maintenance tonight ", "--body", "22:00 UTC.",
			"--link", "https://status.example.com/1", "--end", "2026-10-11T00:00:00Z"}, []string{"added alert/1 (live)"}, nil},
		{[]string{"notices", "add", "--kind", "announcement", "--title", "Soon", "--start", "2026-10-12T00:00:00+02:00"},
			[]string{"added announcement/1 (scheduled)"}, nil},
		{[]string{"notices", "list"}, []string{"ID", "STATE", "announcement/1", "scheduled", "2026-10-11T22:00:00Z",
			`"Soon"`, "alert/1", "live", "2026-10-11T00:00:00Z", `"Maintenance tonight"`, "https://status.example.com/1"}, nil},
		{[]string{"notices", "end", "alert/1"}, []string{"ended alert/1"}, nil},
		{[]string{"notices", "end", "alert/1"}, []string{"alert/1 had already ended"}, nil},
		{[]string{"notices", "list"}, []string{"announcement/1"}, []string{"alert/1"}},
		{[]string{"notices", "list", "--all"}, []string{"announcement/1", "alert/1", "ended"}, nil},
		{[]string{"renames", "add", "--kind", "app", "--old", "PdfCraft", "--new", "DocuCraft", "--description", "Same app.",
			"--renamed-at", "2026-10-01T00:00:00Z"}, []string{"added app/1 (live)"}, nil},
		{[]string{"renames", "add", "--kind", "repo", "--old", "storytold/pdfcraft", "--new", "storytold/docucraft"},
			[]string{"added repo/1 (live)"}, nil},
		{[]string{"renames", "list"}, []string{"app/1", `"PdfCraft"`, `"DocuCraft"`, "2026-10-01T00:00:00Z",
			"repo/1", `"storytold/docucraft"`, "2026-10-10T12:00:00Z"}, nil},
		{[]string{"renames", "end", "repo/1"}, []string{"ended repo/1"}, nil},
		{[]string{"renames", "list"}, []string{"app/1"}, []string{"repo/1"}},
	}
	for _, st := range steps {
		out := mustCommand(t, vars, st.args...)
		rest := out
		for _, w := range st.want {
			i := strings.Index(rest, w)
			if i < 0 {
				t.Errorf("poller %s printed:\n%s\nwant %q (in order)", strings.Join(st.args, " "), out, w)
				break
			}
			rest = rest[i+len(w):]
		}
		for _, n := range st.not {
			if strings.Contains(out, n) {
				t.Errorf("poller %s printed:\n%s\nwant no %q", strings.Join(st.args, " "), out, n)
			}
		}
	}
}

// TestMetaCommandsRefuseBadInput: every bad input is refused with a message
// that says what is wrong, and nothing is stored.
func TestMetaCommandsRefuseBadInput(t *testing.T) {
	vars := mysqlVars(t)
	mustCommand(t, vars, "migrate")
	alert := []string{"notices", "add", "--kind", "alert", "--title", "T"}
	with := func(base []string, more ...string) []string { return append(append([]string(nil), base...), more...) }
	tests := []struct {
		name string
		args []string
		want []string
	}{
		{"a notice without a title", []string{"notices", "add", "--kind", "alert", "--body", "B"}, []string{"notices add: title is missing"}},
		{"a notice with a blank title", []string{"notices", "add", "--kind", "alert", "--title", "  "}, []string{"title is missing"}},
		{"a link that is not https", with(alert, "--link", "http://status.example.com"),
			[]string{`link "http://status.example.com" is not an https:// URL`}},
		{"a link that is no URL at all", with(alert, "--link", "status.example.com"), []string{"is not an https:// URL"}},
		{"an announcement with a link", []string{"notices", "add", "--kind", "announcement", "--title", "T", "--link", "https://a.example"},
			[]string{"announcements have no link"}},
		{"an end before the start", with(alert, "--start", "2026-10-12T00:00:00Z", "--end", "2026-10-11T00:00:00Z"),
			[]string{"end 2026-10-11T00:00:00Z is not after the start 2026-10-12T00:00:00Z"}},
		{"an end in the past", with(alert, "--end", "2026-10-10T11:00:00Z"), []string{"is not in the future"}},
		{"a title over the limit", []string{"notices", "add", "--kind", "alert", "--title", strings.Repeat("t", 201)},
			[]string{"title is 201 characters long; the limit is 200"}},
		{"a body over the limit", with(alert, "--body", strings.Repeat("b", 4001)), []string{"body is 4001 characters long; the limit is 4000"}},
		{"a link over the limit", with(alert, "--link", "https://a.example/"+strings.Repeat("l", 2000)),
			[]string{"link is 2018 characters long; the limit is 2000"}},
		{"several problems at once", []string{"notices", "add", "--kind", "alert", "--link", "ftp://x"},
			[]string{"title is missing", "is not an https:// URL"}},
		{"a time that is not RFC 3339", with(alert, "--end", "tomorrow"),
			[]string{`notices add: --end "tomorrow" is not an RFC 3339 time such as 2026-10-10T22:00:00Z`}},
		{"the zero time as a start", with(alert, "--start", "0001-01-01T00:00:00Z"),
			[]string{`notices add: --start "0001-01-01T00:00:00Z" is the zero time, which means none: leave --start out instead`}},
		{"the zero time as a rename's time", []string{"renames", "add", "--kind", "app", "--old", "A", "--new", "B", "--renamed-at", "0001-01-01T00:00:00Z"},
			[]string{`renames add: --renamed-at "0001-01-01T00:00:00Z" is the zero time`}},
		{"a bad rename end", []string{"renames", "add", "--kind", "app", "--old", "A", "--new", "B", "--end", "2026-13-01T00:00:00Z"},
			[]string{`renames add: --end "2026-13-01T00:00:00Z" is not an RFC 3339 time`}},
		{"a title with a right-to-left override", with([]string{"notices", "add", "--kind", "alert", "--title", "Get \u202eexe.msi"}),
			[]string{"title holds the bidirectional formatting character U+202E"}},
		{"no kind", []string{"notices", "add", "--title", "T"}, []string{"--kind is missing (announcement or alert)"}},
		{"an unknown kind", []string{"notices", "add", "--kind", "banner", "--title", "T"}, []string{`kind "banner" is not announcement or alert`}},
		{"an unknown flag", with(alert, "--colour", "red"), []string{"flag provided but not defined: -colour"}},
		{"a stray argument", with(alert, "extra"), []string{`unexpected argument "extra"`}},
		{"help inside a command", with(alert, "-h"), []string{"the flags are listed by poller --help"}},
		{"no verb", []string{"notices"}, []string{"notices: say list, add or end"}},
		{"an unknown verb", []string{"notices", "delete"}, []string{`notices: unknown command "delete" (list, add or end)`}},
		{"end without a ref", []string{"notices", "end"}, []string{"want one KIND/ID"}},
		{"end of a bad ref", []string{"notices", "end", "alert-3"}, []string{`"alert-3" is not KIND/ID`}},
		{"end of nothing", []string{"notices", "end", "alert/99"}, []string{"there is no alert/99"}},
		{"end of an unknown kind", []string{"notices", "end", "banner/1"}, []string{`kind "banner" is not announcement or alert`}},
		{"a rename without names", []string{"renames", "add", "--kind", "app"}, []string{"old name is missing", "new name is missing"}},
		{"a rename to the same name", []string{"renames", "add", "--kind", "app", "--old", "A", "--new", "A"}, []string{`old and new names are both "A"`}},
		{"a repo rename that is not org/project", []string{"renames", "add", "--kind", "repo", "--old", "pdfcraft", "--new", "storytold/x"},
			[]string{`old name "pdfcraft" is not org/project`}},
		{"an app name over the limit", []string{"renames", "add", "--kind", "app", "--old", "A", "--new", strings.Repeat("n", 101)},
			[]string{"new name is 101 characters long; the limit is 100"}},
		{"a rename with no kind", []string{"renames", "add", "--old", "A", "--new", "B"}, []string{"--kind is missing (app or repo)"}},
		{"a rename ending before it starts", []string{"renames", "add", "--kind", "app", "--old", "A", "--new", "B",
			"--start", "2026-10-12T00:00:00Z", "--end", "2026-10-11T00:00:00Z"}, []string{"is not after the start"}},
		{"end of no rename", []string{"renames", "end", "app/7"}, []string{"there is no app/7"}},
		{"migrate with an argument", []string{"migrate", "down"}, []string{`migrate: unexpected argument "down"`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := command(t, vars, tt.args...)
			if err == nil {
				t.Fatalf("poller %q worked; want an error", tt.args)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q, want it to contain %q", err, w)
				}
			}
		})
	}
	for _, list := range [][]string{{"notices", "list", "--all"}, {"renames", "list", "--all"}} {
		if out := mustCommand(t, vars, list...); strings.Count(out, "\n") != 1 {
			t.Errorf("poller %s after refused input:\n%s\nwant the header alone", strings.Join(list, " "), out)
		}
	}
}

func TestMetaCommandsNeedMySQL(t *testing.T) {
	for _, args := range [][]string{{"migrate"}, {"notices", "list"}, {"renames", "add"}} {
		_, err := command(t, map[string]string{}, args...)
		if err == nil || !strings.Contains(err.Error(), "MYSQL_DSN: unset, and so is MYSQL_URL") {
			t.Errorf("poller %s without MySQL: %v, want an error naming MYSQL_DSN", strings.Join(args, " "), err)
		}
	}
	// The decisions verbs load the poller's configuration, which needs
	// REDIS_URL first.
	for _, args := range [][]string{{"rollout", "list"}, {"withdraw", "photocraft", "--tag", "v1", "--reason", "x"}, {"minimum", "list"}} {
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
