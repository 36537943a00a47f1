package main

import (
	"bytes"
	"context"
	"io"
	"os"
	"reflect"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/storytold/craft-releases/pkg/redis"
	"github.com/storytold/craft-releases/pkg/redis/store"
	"github.com/storytold/craft-releases/pkg/release"
	"github.com/storytold/craft-releases/test/fakegithub"
	"github.com/storytold/craft-releases/test/mariadbtest"
	"github.com/storytold/craft-releases/test/redistest"
	"github.com/storytold/craft-releases/test/testkit"
)

// The MySQL tests share one MariaDB server, each with a database of its own.
func TestMain(m *testing.M) {
	os.Exit(testkit.IntegrationMain(func() int { return redistest.Main(func() int { return mariadbtest.Main(m) }) }))
}

// mustCommand runs `poller args…` through run with vars and returns what it
// printed, failing the test on an error.
func mustCommand(t testing.TB, vars map[string]string, args ...string) string {
	t.Helper()
	var out bytes.Buffer
	if err := run(context.Background(), args, func(k string) string { return vars[k] }, &out, io.Discard); err != nil {
		t.Fatalf("poller %s: %v", strings.Join(args, " "), err)
	}
	return out.String()
}

// TestSubcommands runs each operator command line of docs/operations.md and
// the README through run, as the binary does: main hands them on to package
// admin, whose own tests go through every case.
func TestSubcommands(t *testing.T) {
	t.Parallel()
	rs := redistest.Start(t)
	vars := map[string]string{"MYSQL_DSN": mariadbtest.Shared(t).NewDatabase(t).DSN(), "REDIS_URL": rs.URL(), "USER": "alice"}
	steps := []struct {
		args []string
		want string // in the output
	}{
		{[]string{"migrate"}, "schema at version 1"},
		{[]string{"notices", "add", "--kind", "alert", "--title", "Maintenance"}, "added alert/1 (live)"},
		{[]string{"notices", "list", "--all"}, `"Maintenance"`},
		{[]string{"notices", "end", "alert/1"}, "ended alert/1"},
		{[]string{"renames", "add", "--kind", "app", "--old", "PdfCraft", "--new", "DocuCraft"}, "added app/1 (live)"},
		{[]string{"renames", "list"}, `"DocuCraft"`},
		{[]string{"renames", "end", "app/1"}, "ended app/1"},
		{[]string{"status"}, "fleet backoff: none"},
		{[]string{"backoff"}, "fleet backoff: none"},
		{[]string{"backoff", "clear", "--by", "alice"}, "nothing to clear"},
	}
	for _, st := range steps {
		if out := mustCommand(t, vars, st.args...); !strings.Contains(out, st.want) {
			t.Errorf("poller %s printed:\n%s\nwant %q", strings.Join(st.args, " "), out, st.want)
		}
	}
	if err := run(context.Background(), []string{"bogus"}, func(string) string { return "" }, io.Discard, io.Discard); err == nil || !strings.Contains(err.Error(), `unknown argument "bogus"`) {
		t.Errorf("poller bogus: %v, want an unknown argument", err)
	}
}

func TestHelpListsMetaCommands(t *testing.T) {
	t.Parallel()
	out := mustCommand(t, nil, "--help")
	for _, want := range []string{"migrate", "notices", "renames", "MYSQL_DSN", "CRAFT_APPS_META_REFRESH_SECS", "title 200 characters"} {
		if !strings.Contains(out, want) {
			t.Errorf("--help does not mention %q", want)
		}
	}
}

// TestPollerPublishesMeta runs the poller with MySQL: it logs its pool once
// without the password, checks the statement cap, and publishes the live
// notices to Redis while it polls GitHub.
func TestPollerPublishesMeta(t *testing.T) {
	t.Parallel()
	d := mariadbtest.Shared(t).NewDatabase(t)
	mysql := map[string]string{"MYSQL_DSN": d.DSN()}
	mustCommand(t, mysql, "migrate")
	mustCommand(t, mysql, "notices", "add", "--kind", "alert", "--title", "Hello from MySQL")

	gh := fakegithub.New(t)
	gh.Publish("storytold/photocraft", fakegithub.NewRelease("storytold/photocraft", "v0.5.0"))
	rs := redistest.Start(t)
	vars := env(gh, rs.URL())
	vars["MYSQL_DSN"] = d.DSN()
	vars["CRAFT_APPS_META_REFRESH_SECS"] = "1"
	_, logs, stop := startPoller(t, vars)

	testkit.Eventually(t, "the alert is in Redis", func() bool {
		return strings.Contains(hget(t, rs, store.MetaKey, "alerts"), `"title":"Hello from MySQL"`)
	})
	testkit.Eventually(t, "photocraft is in Redis", func() bool {
		n, err := rs.Do("EXISTS", store.AppKey("photocraft"))
		return err == nil && n == "1"
	})
	if err := stop(); err != nil {
		t.Fatalf("run: %v", err)
	}
	out := logs.String()
	for _, want := range []string{`"msg":"mysql pool"`, `"max_connections":4`, `"max_lifetime":600`, `"interpolate_params":true`,
		`"msg":"prepared statements within the server's cap"`, `"max_prepared_stmt_count":16382`, `"fleet_worst_case":12`} {
		if !strings.Contains(out, want) {
			t.Errorf("logs lack %s:\n%s", want, out)
		}
	}
	if n := strings.Count(out, `"msg":"mysql pool"`); n != 1 {
		t.Errorf("%d pool lines, want 1", n)
	}
	if strings.Contains(out, d.Password) {
		t.Errorf("the logs hold the MySQL password:\n%s", out)
	}
}

// TestPollerPollsWithMySQLDown: with a MySQL that hangs up on every
// connection the poller still polls GitHub and shares what it fetches, and
// warns once however many refreshes fail.
func TestPollerPollsWithMySQLDown(t *testing.T) {
	t.Parallel()
	gh := fakegithub.New(t)
	gh.Publish("storytold/photocraft", fakegithub.NewRelease("storytold/photocraft", "v0.5.0"))
	rs := redistest.Start(t)
	down := hangUp(t)
	vars := env(gh, rs.URL())
	vars["MYSQL_DSN"] = "craft:secretpw@tcp(" + down.addr + ")/craft"
	vars["MYSQL_QUERY_TIMEOUT_SECS"] = "1"
	vars["CRAFT_APPS_META_REFRESH_SECS"] = "1"
	_, logs, stop := startPoller(t, vars)

	testkit.Eventually(t, "both apps are in Redis", func() bool {
		n, err := rs.Do("EXISTS", store.AppKey("photocraft"), store.AppKey("vectorcraft"))
		return err == nil && n == "2"
	})
	// The start-up check and three refreshes at least.
	testkit.Eventually(t, "four attempts to reach MySQL", func() bool { return down.accepted.Load() >= 4 })
	if err := stop(); err != nil {
		t.Fatalf("run: %v", err)
	}
	out := logs.String()
	if n := strings.Count(out, `"msg":"mysql read failed, serving the last published meta"`); n != 1 {
		t.Errorf("%d warnings about MySQL, want 1 (at most one every 10 minutes):\n%s", n, out)
	}
	if !strings.Contains(out, `"msg":"could not check max_prepared_stmt_count"`) {
		t.Errorf("no warning about the unchecked statement cap:\n%s", out)
	}
	if strings.Contains(out, "secretpw") {
		t.Errorf("the logs hold the MySQL password:\n%s", out)
	}
	if exists := rs.MustDo("EXISTS", store.MetaKey); exists != "0" {
		t.Errorf("a meta hash was written without MySQL")
	}
}

// hget reads one field of a hash through a client of its own: redistest's
// Do returns only a reply's first line.
func hget(t testing.TB, rs *redistest.Server, key, field string) string {
	t.Helper()
	conn, err := redis.OpenURL(rs.URL())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	c, err := conn.Client(ctx)
	if err != nil {
		t.Fatal(err)
	}
	v, err := c.Do(ctx, c.B().Hget().Key(key).Field(field).Build()).ToString()
	if err != nil {
		return ""
	}
	return v
}

// downMySQL accepts connections and closes them at once, counting them: a
// MySQL that is down, as its clients see it.
type downMySQL struct {
	addr     string
	accepted atomic.Int64
}

func hangUp(t testing.TB) *downMySQL {
	t.Helper()
	l := testkit.Listen(t)
	d := &downMySQL{addr: l.Addr().String()}
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			d.accepted.Add(1)
			c.Close()
		}
	}()
	return d
}

// recordingPublisher records the Bulletins published.
type recordingPublisher struct{ got []release.Bulletin }

func (r *recordingPublisher) PutMeta(_ context.Context, m release.Bulletin, _ time.Time) (bool, error) {
	r.got = append(r.got, m)
	return true, nil
}

// TestDeciding: each Bulletin the refresher publishes tells the poller the
// apps that have decisions (an empty one counts as none), and is published
// as it was.
func TestDeciding(t *testing.T) {
	pub := &recordingPublisher{}
	var decided [][]string
	d := deciding{pub, func(apps []string) { decided = append(decided, slices.Sorted(slices.Values(apps))) }}
	m := release.Bulletin{Decisions: map[string]release.Decisions{
		"artcraft":   {Rollout: &release.Rollout{Tag: "v2", Percent: 10}},
		"photocraft": {Minimum: &release.Minimum{Version: "1.0.0", Reason: "r"}},
		"pdfcraft":   {},
	}}
	for _, b := range []release.Bulletin{m, {}} {
		if ok, err := d.PutMeta(context.Background(), b, time.Now()); !ok || err != nil {
			t.Fatalf("PutMeta: %v %v", ok, err)
		}
	}
	if want := [][]string{{"artcraft", "photocraft"}, nil}; !reflect.DeepEqual(decided, want) {
		t.Errorf("decided: got %q, want %q", decided, want)
	}
	if len(pub.got) != 2 || !reflect.DeepEqual(pub.got[0], m) {
		t.Errorf("published %+v, want the Bulletins as given", pub.got)
	}
}
