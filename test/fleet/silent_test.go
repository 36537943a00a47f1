package fleet_test

import (
	"context"
	"errors"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/storytold/craft-releases/test/fakeredis"
	"github.com/storytold/craft-releases/test/testkit"
)

// goroutinesIn returns the stacks of the goroutines that run code of any of
// the packages (import paths).
func goroutinesIn(pkgs ...string) []string {
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			buf = buf[:n]
			break
		}
		buf = make([]byte, 2*len(buf))
	}
	var out []string
	for _, g := range strings.Split(string(buf), "\n\n") {
		for _, p := range pkgs {
			if strings.Contains(g, p) {
				out = append(out, g)
				break
			}
		}
	}
	return out
}

// TestSilentRedis runs a coordinated poller against a Redis that completes
// the handshake and never answers, with a short call timeout on both the
// client and the Store: every read and write fails with its deadline (and
// the simulation never waits on a hung call), the poller carries on
// standalone (GitHub asked, the sink fed, one warning), and after Close no
// goroutine of the Redis client or the poller is left and every connection
// is closed.
func TestSilentRedis(t *testing.T) {
	redisCode := []string{"github.com/redis/rueidis", "craft-releases/pkg/redis/store", "craft-releases/pkg/poller"}
	// Clients of earlier tests end in the background after their Close:
	// wait for them, so that they are not counted as this test's.
	testkit.Within(10*time.Second, func() bool { return len(goroutinesIn(redisCode...)) == 0 })
	before := len(goroutinesIn(redisCode...))
	silent := fakeredis.StartSilent(t)
	s := newSim(t, outageTiming, defaultApps())
	m := s.add("poller-1", memberConfig{redisURL: withTimeout(silent.URL()), coordinate: true, seed: 1})
	s.runFor(2 * s.timing.Interval)

	perApp := byApp(s.reqs.where(func(request) bool { return true }))
	for _, app := range s.apps {
		if n := perApp[app.Key]; n < 2 {
			t.Errorf("%s: asked %d times in 2 intervals, want at least 2", app.Key, n)
		}
		if e, ok := m.sink.get(app.Key); !ok || e.Release == nil || e.Release.Tag != "v1.0.0" {
			t.Errorf("%s: the sink holds %+v, want release v1.0.0", app.Key, e)
		}
	}
	if got := m.count("redis unavailable"); got != 1 {
		t.Errorf("%d \"redis unavailable\" warnings, want 1", got)
	}
	ctx := context.Background()
	calls := []struct {
		name string
		call func() error
	}{
		{"load", func() error { _, _, err := m.store.Load(ctx, keys(s.apps)); return err }},
		{"claim", func() error { _, err := m.store.Claim(ctx, "photocraft", s.clock.Now(), time.Minute); return err }},
	}
	for _, c := range calls {
		if err := c.call(); !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("%s on a silent Redis: %v, want the call's deadline", c.name, err)
		}
	}
	if silent.Accepted() == 0 {
		t.Fatal("the poller never connected to the silent Redis")
	}

	if running := len(goroutinesIn(redisCode...)); running <= before {
		t.Fatalf("%d goroutines of the Redis client or the poller while they run, %d before: the leak check sees none", running, before)
	}
	s.stop()
	if !testkit.Within(10*time.Second, func() bool { return silent.Conns() == 0 }) {
		t.Errorf("%d connections still open after Close", silent.Conns())
	}
	var left []string
	if !testkit.Within(10*time.Second, func() bool { left = goroutinesIn(redisCode...); return len(left) <= before }) {
		t.Errorf("%d goroutines of the Redis client or the poller after Close, %d before:\n%s",
			len(left), before, strings.Join(left, "\n\n"))
	}
}
