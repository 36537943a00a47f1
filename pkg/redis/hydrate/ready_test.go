package hydrate_test

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/zap/zapcore"

	"github.com/storytold/craft-releases/pkg/redis/hydrate"
	"github.com/storytold/craft-releases/test/fakeclock"
	"github.com/storytold/craft-releases/test/fakeredis"
	"github.com/storytold/craft-releases/test/redistest"
	"github.com/storytold/craft-releases/test/testkit"
)

// hydrateTimeout stands for CRAFT_APPS_HYDRATE_TIMEOUT_SECS: short, since
// every case but the first load waits it out, and long enough for the first
// exchange with Redis to have failed by then on a loaded machine.
const hydrateTimeout = time.Second

// readiness runs hs's Ready with the given hydrate timeout and reports how
// often it called open.
func readiness(t testing.TB, hs *harness, hydrateTimeout time.Duration) *atomic.Int32 {
	t.Helper()
	var opened atomic.Int32
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		hs.h.Ready(ctx, hydrateTimeout, func() { opened.Add(1) })
	}()
	t.Cleanup(func() { cancel(); <-done })
	return &opened
}

// refusedLines returns the error lines that say the pod stays unready.
func refusedLines(hs *harness) []string {
	var out []string
	for _, e := range hs.logs.FilterMessage("redis refuses this pod, staying unready").All() {
		if e.Level == zapcore.ErrorLevel {
			out = append(out, e.ContextMap()["err"].(string))
		}
	}
	return out
}

// TestReadyWhenRedisRefusesThePod: a pod that never loaded and that Redis
// refuses for its configuration stays unready past the hydrate timeout and
// says why once, so that a rollout with a wrong password or user stalls with
// the old pods serving; once the configuration is fixed it loads and opens.
func TestReadyWhenRedisRefusesThePod(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		url     func(srv *redistest.Server) string
		wantErr string
		fix     func(srv *redistest.Server)
	}{
		// The fix of the first is the rotation: the user accepts the new password too.
		{"a wrong password (WRONGPASS)", func(srv *redistest.Server) string { apiUser(srv, "old"); return "redis://api:new@" + srv.Addr }, "WRONGPASS", func(srv *redistest.Server) { srv.MustDo("ACL", "SETUSER", "api", ">new") }},
		{"no password where one is required (NOAUTH)", func(srv *redistest.Server) string {
			srv.MustDo("CONFIG", "SET", "requirepass", "right")
			return "redis://" + srv.Addr
		}, "NOAUTH", nil},
		{"requirepass and the wrong one", func(srv *redistest.Server) string {
			srv.MustDo("CONFIG", "SET", "requirepass", "right")
			return "redis://:wrong@" + srv.Addr
		}, "WRONGPASS", nil},
		{"a user who may not read (NOPERM)", func(srv *redistest.Server) string { return apiUser(srv, "pw", "-hstrlen") }, "NOPERM", func(srv *redistest.Server) { srv.MustDo("ACL", "SETUSER", "api", "+hstrlen") }},
		{"a user without the keys (NOPERM)", func(srv *redistest.Server) string { return apiUser(srv, "pw", "resetkeys", "~other:*") }, "NOPERM", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := redistest.Start(t)
			clk := fakeclock.New(base)
			hs := start(t, tt.url(srv), quiet, hydrate.WithClock(clk))
			opened := readiness(t, hs, hydrateTimeout)
			// The first attempt does not wait on the clock.
			testkit.Eventually(t, "the refusal", func() bool { return hs.h.Refusal() != nil })
			advanceUntil(t, clk, 100*time.Millisecond, "the error line", func() bool { return len(refusedLines(hs)) > 0 })
			if took := clk.Now().Sub(base); took < hydrateTimeout {
				t.Errorf("the error line after %v, want it at the hydrate timeout, %v", took, hydrateTimeout)
			}
			if n := opened.Load(); n != 0 {
				t.Fatalf("opened %d times past the hydrate timeout, want unready", n)
			}
			if got := refusedLines(hs); len(got) != 1 || !strings.Contains(got[0], tt.wantErr) {
				t.Errorf("error lines %q, want one with %s", got, tt.wantErr)
			}
			hs.wantLogged(t, "ready without a load from redis", 0)
			if tt.fix == nil {
				return
			}
			tt.fix(srv)
			advanceUntil(t, clk, 100*time.Millisecond, "ready after the first load", func() bool { return opened.Load() == 1 })
			hs.wantLogged(t, "ready", 1)
		})
	}
}

// TestReadyRefusedThenAnOutage: Redis refuses the pod, then goes away
// before the hydrate timeout (restarted during a bad rollout): the refusal
// is not forgotten, and at the timeout the pod stays unready rather than
// opening empty as after an outage, until its first load.
func TestReadyRefusedThenAnOutage(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	apiUser(srv, "old")
	hs := start(t, "redis://api:new@"+srv.Addr, quiet)
	testkit.Eventually(t, "the refusal", func() bool { return hs.h.Refusal() != nil })
	failures := hs.h.Counts().Failures
	srv.Stop()
	testkit.Eventually(t, "a failed attempt of the outage", func() bool { return hs.h.Counts().Failures > failures+1 })
	opened := readiness(t, hs, 200*time.Millisecond)
	testkit.Eventually(t, "the error line", func() bool {
		return len(refusedLines(hs)) > 0 || hs.logs.FilterMessage("ready without a load from redis").Len() > 0
	})
	if n := opened.Load(); n != 0 {
		t.Fatalf("opened %d times at the timeout after a refusal and an outage, want unready", n)
	}
	if hs.h.Refusal() == nil {
		t.Errorf("Refusal() = nil during the outage that followed it, want the refusal")
	}
	srv.Restart()
	apiUser(srv, "new")
	testkit.Eventually(t, "ready after the first load", func() bool { return opened.Load() == 1 })
}

// TestReadyDuringAnOutage: a pod that cannot reach Redis (refused
// connections, a Redis that stopped, a silent one) is ready after the
// hydrate timeout with what it has, as before: an outage must never take
// every pod out of the Service.
func TestReadyDuringAnOutage(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		url  func(t *testing.T) string
	}{
		{"connection refused", func(t *testing.T) string { srv := redistest.Start(t); srv.Stop(); return srv.URL() }},
		{"a silent Redis (timeouts)", func(t *testing.T) string { return fakeredis.StartSilent(t).URL() }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clk := fakeclock.New(base)
			hs := start(t, tt.url(t), quiet, hydrate.WithClock(clk))
			opened := readiness(t, hs, hydrateTimeout)
			advanceUntil(t, clk, 100*time.Millisecond, "ready without a load", func() bool { return opened.Load() == 1 })
			if took := clk.Now().Sub(base); took < hydrateTimeout {
				t.Errorf("ready after %v, want the hydrate timeout, %v", took, hydrateTimeout)
			}
			hs.wantLogged(t, "ready without a load from redis", 1)
			if got := refusedLines(hs); len(got) != 0 {
				t.Errorf("error lines %q for an outage, want none", got)
			}
		})
	}
}

// TestReadyAfterFirstLoad: a pod that loads is ready at once.
func TestReadyAfterFirstLoad(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	hs := start(t, srv.URL(), quiet)
	opened := readiness(t, hs, hydrateTimeout)
	hs.waitLoaded(t)
	testkit.Eventually(t, "ready", func() bool { return opened.Load() == 1 })
	hs.wantLogged(t, "ready", 1)
}
