package fleet_test

import (
	"fmt"
	"testing"

	"github.com/storytold/craft-releases/pkg/redis/store"
	"github.com/storytold/craft-releases/test/fakegithub"
	"github.com/storytold/craft-releases/test/redistest"
)

// noScriptURL creates a Redis user that may do anything but run scripts,
// and returns the URL that logs in as it.
func noScriptURL(t testing.TB, srv *redistest.Server) string {
	t.Helper()
	srv.MustDo("ACL", "SETUSER", "poller", "on", ">pw", "~*", "&*", "+@all", "-@scripting")
	return "redis://poller:pw@" + srv.Addr
}

// TestRequestsPerAppPerInterval runs fleets of the 13 default apps for 30
// intervals (I = 60 s, ticks of 30 s ±10 %) and counts GitHub requests per
// app per interval. A coordinated fleet asks about each app about once per
// interval, whatever its size, whether its guarded writes go through the
// script or WATCH/MULTI/EXEC, and even when its pollers tick at the same
// instants; the uncoordinated fleet is the same measurement on pollers that
// read nothing from Redis (about 3 × one poller's), and shows that the bound
// fails without claims and freshness checks.
func TestRequestsPerAppPerInterval(t *testing.T) {
	t.Parallel()
	const intervals = 30
	tests := []struct {
		name       string
		pollers    int
		coordinate bool
		noScripts  bool // the pollers' Redis user lacks @scripting
		// lockstep gives every poller the same random draws and no
		// spacing, so they all tick at the same instants, concurrently,
		// and only the claims keep them from asking about the same apps.
		lockstep bool
		lo, hi   float64
	}{
		// One poller asks a little less than once per interval: a round of
		// 13 requests 1 s apart delays its next tick.
		{name: "one poller", pollers: 1, coordinate: true, lo: 0.8, hi: 1.1},
		{name: "three coordinated", pollers: 3, coordinate: true, lo: 0.8, hi: 1.3},
		{name: "three coordinated scripts refused", pollers: 3, coordinate: true, noScripts: true, lo: 0.8, hi: 1.3},
		{name: "three coordinated in lockstep", pollers: 3, coordinate: true, lockstep: true, lo: 0.8, hi: 1.3},
		{name: "three uncoordinated", pollers: 3, coordinate: false, lo: 2.3, hi: 3.3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			srv := redistest.Start(t)
			url := srv.URL()
			if tt.noScripts {
				url = noScriptURL(t, srv)
			}
			timing := shortTiming
			if tt.lockstep {
				timing.Spacing = 0
			}
			s := newSim(t, timing, defaultApps())
			start := s.clock.Now()
			for i := range tt.pollers {
				seed := uint64(i + 1)
				if tt.lockstep {
					seed = 1
				}
				s.add(fmt.Sprintf("poller-%d", i+1), memberConfig{redisURL: url, coordinate: tt.coordinate, seed: seed})
			}
			span := intervals * s.timing.Interval
			s.runUntil(start.Add(span))

			reqs := s.reqs.between(start, start.Add(span))
			if got, want := len(reqs), s.gh.Count(fakegithub.AnyRepo); got != want {
				t.Fatalf("the pollers made %d requests, the fake GitHub received %d", got, want)
			}
			got := s.perAppPerInterval(reqs, span)
			t.Logf("%d pollers: %.3f requests per app per interval", tt.pollers, got)
			if got < tt.lo || got > tt.hi {
				t.Errorf("requests per app per interval = %.3f, want %.1f…%.1f", got, tt.lo, tt.hi)
			}
			perApp := byApp(reqs)
			for _, app := range s.apps {
				if n := float64(perApp[app.Key]) / intervals; n < tt.lo || n > tt.hi {
					t.Errorf("%s: %.3f requests per interval, want %.1f…%.1f", app.Key, n, tt.lo, tt.hi)
				}
			}
			if tt.coordinate {
				want := store.ModeScript
				if tt.noScripts {
					want = store.ModeWatch
				}
				for _, m := range s.members {
					if got := m.store.Mode(); got != want {
						t.Errorf("%s: store mode %v, want %v", m.name, got, want)
					}
				}
			}
			for _, m := range s.members {
				if n := m.count("redis unavailable"); n != 0 {
					t.Errorf("%s: %d redis warnings, want none", m.name, n)
				}
			}
		})
	}
}
