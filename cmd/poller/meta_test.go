package main

import (
	"bytes"
	"context"
	"io"
	"os"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/storytold/craft-releases/pkg/poller"
	"github.com/storytold/craft-releases/pkg/redis"
	"github.com/storytold/craft-releases/pkg/redis/store"
	"github.com/storytold/craft-releases/pkg/release"
	"github.com/storytold/craft-releases/pkg/schedule"
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

// TestPollerPollsWithMySQLDown: with a MySQL that hangs up on every
// connection the poller still polls GitHub and shares what it fetches, and
// warns once however many refreshes fail.
func TestPollerPollsWithMySQLDown(t *testing.T) {
	t.Parallel()
	gh := fakegithub.New(t)
	gh.Publish("storytold/photocraft", fakegithub.NewRelease("storytold/photocraft", "v0.5.0"))
	rs := redistest.Start(t)
	// A MySQL that is down, as its clients see it: it closes each connection at once, counting them.
	l := testkit.Listen(t)
	var accepted atomic.Int64
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			accepted.Add(1)
			c.Close()
		}
	}()
	vars := env(gh, rs.URL())
	vars["MYSQL_DSN"] = "craft:secretpw@tcp(" + l.Addr().String() + ")/craft"
	vars["MYSQL_QUERY_TIMEOUT_SECS"] = "1"
	vars["CRAFT_APPS_META_REFRESH_SECS"] = "1"
	_, p := startPoller(t, vars)

	testkit.Eventually(t, "both apps are in Redis", func() bool {
		n, err := rs.Do("EXISTS", store.AppKey("photocraft"), store.AppKey("vectorcraft"))
		return err == nil && n == "2"
	})
	// The start-up check and three refreshes at least.
	testkit.Eventually(t, "four attempts to reach MySQL", func() bool { return accepted.Load() >= 4 })
	if err := p.Stop(); err != nil {
		t.Fatalf("run: %v", err)
	}
	out := p.Logs.String()
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

// noSource is a poller.Source never asked.
type noSource struct{}

func (noSource) Latest(context.Context, release.App, string) release.Answer { return release.Answer{} }

// idlePoller is a poller of apps that never asks GitHub.
func idlePoller(t testing.TB, apps ...release.App) *poller.Poller {
	t.Helper()
	p, err := poller.New(poller.Config{Apps: release.Entries(apps), Source: noSource{}, Timing: schedule.Timing{Interval: time.Minute, Tick: time.Second}})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// TestFollowDecisions: each Bulletin read from MySQL purges what the apps
// whose decisions changed serve, once per change, and nothing else; the
// first, at start, purges nothing.
func TestFollowDecisions(t *testing.T) {
	p := idlePoller(t, release.App{Key: "artcraft", Repo: "o/a"}, release.App{Key: "photocraft", Repo: "o/p"})
	var purged []string
	follow := followDecisions(p, func(app string, _, _ *release.Release) { purged = append(purged, app) }, zap.NewNop())
	staged := release.Decisions{Rollout: &release.Rollout{Tag: "v2", Percent: 10}}
	raised := release.Decisions{Rollout: &release.Rollout{Tag: "v2", Percent: 20}}
	minimum := release.Decisions{Minimum: &release.Minimum{Version: "1.0.0", Reason: "r"}}
	for _, step := range []struct {
		decisions map[string]release.Decisions
		want      []string
	}{
		{map[string]release.Decisions{"artcraft": staged}, nil}, // the first read, at start: the baseline
		{map[string]release.Decisions{"artcraft": staged, "photocraft": minimum}, []string{"photocraft"}},
		{map[string]release.Decisions{"artcraft": staged, "photocraft": minimum}, nil},
		{map[string]release.Decisions{"artcraft": raised, "photocraft": minimum}, []string{"artcraft"}},
		{map[string]release.Decisions{"artcraft": raised}, []string{"photocraft"}},
		{nil, []string{"artcraft"}},
	} {
		purged = nil
		follow(release.Bulletin{Decisions: step.decisions})
		if !slices.Equal(purged, step.want) {
			t.Errorf("decisions %v purged %q, want %q", step.decisions, purged, step.want)
		}
	}
}

// TestRefreshingWakesForAHistory: a new refresh request for an app's
// history entry (an operator's verb files one) wakes the meta refresher,
// once however often the watch hands it; one for the app itself (a
// webhook's) does not.
func TestRefreshingWakesForAHistory(t *testing.T) {
	p := idlePoller(t, release.App{Key: "artcraft", Repo: "o/a"})
	woken := 0
	refresh := refreshing(p, func() { woken++ })
	refresh("artcraft", release.Refresh{At: time.Now()})
	if woken != 0 {
		t.Errorf("a webhook's request woke the refresher %d times", woken)
	}
	at := time.Now()
	refresh("artcraft:history", release.Refresh{At: at})
	refresh("artcraft:history", release.Refresh{At: at}) // a rescan hands it again
	if woken != 1 {
		t.Errorf("an operator's request woke the refresher %d times, want once", woken)
	}
	refresh("artcraft:history", release.Refresh{At: at.Add(time.Second)})
	if woken != 2 {
		t.Errorf("a second operator's request: woken %d times in all, want twice", woken)
	}
	refreshing(p, nil)("artcraft:history", release.Refresh{At: time.Now()}) // without MySQL: nothing to wake
}

// TestPrevious: the release a purge names beside the latest is the newest
// of the history published before it; a tag a decision names is unfound
// when neither the latest release nor a read history holds it.
func TestPrevious(t *testing.T) {
	at := func(days int) *release.Time {
		return release.NewTime(time.Date(2026, 12, 1+days, 0, 0, 0, 0, time.UTC))
	}
	v1, v2, v3 := &release.Release{Tag: "v1", PublishedAt: at(1)}, &release.Release{Tag: "v2", PublishedAt: at(2)}, &release.Release{Tag: "v3", PublishedAt: at(3)}
	h := release.NewHistory([]*release.Release{v3, v2, v1})
	for _, tt := range []struct {
		latest, want *release.Release
	}{{v3, v2}, {v2, v1}, {v1, nil}, {nil, v3}} {
		if got := previous(h, tt.latest); got != tt.want {
			t.Errorf("previous(%v) = %v, want %v", tt.latest, got, tt.want)
		}
	}
	if got := previous(nil, v3); got != nil {
		t.Errorf("previous without a history = %v, want nil", got)
	}
	d := release.Decisions{Rollout: &release.Rollout{Tag: "v3"}, Withdrawn: []release.Withdrawal{{Tag: "v1"}, {Tag: "v9"}}}
	if got := unfound(d, v3, h); !slices.Equal(got, []string{"v9"}) {
		t.Errorf("unfound = %q, want v9", got)
	}
	if got := unfound(d, v3, nil); got != nil {
		t.Errorf("unfound before the history is read = %q, want none", got)
	}
}
