package fleet_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/storytold/craft-releases/pkg/release"
	"github.com/storytold/craft-releases/test/fakegithub"
	"github.com/storytold/craft-releases/test/redistest"
)

// TestRateLimitPausesEveryPoller answers one request of a 3-poller fleet
// with GitHub's primary rate limit, its reset 5 minutes away: no poller
// asks GitHub anything until the fleet backoff ends (the reset plus R, less
// the jitter), and the fleet asks about every app again after it. The
// uncoordinated fleet is the same measurement on pollers that never read
// the fleet backoff: they keep asking, which shows the check sees it.
func TestRateLimitPausesEveryPoller(t *testing.T) {
	t.Parallel()
	timing := shortTiming
	timing.Spacing = 0
	tests := []struct {
		name       string
		coordinate bool
		wantQuiet  bool
	}{
		{name: "coordinated", coordinate: true, wantQuiet: true},
		{name: "uncoordinated", coordinate: false, wantQuiet: false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			srv := redistest.Start(t)
			s := newSim(t, timing, defaultApps())
			for i := range 3 {
				s.add(fmt.Sprintf("poller-%d", i+1), memberConfig{redisURL: srv.URL(), coordinate: tt.coordinate, seed: uint64(10 + i)})
			}
			s.runFor(3 * timing.Interval)
			reset := s.clock.Now().Add(5 * time.Minute).Truncate(time.Second)
			s.gh.Queue(fakegithub.AnyRepo, fakegithub.RateLimit(reset))
			end := reset.Add(5 * time.Minute)
			s.runUntil(end)

			limited := s.reqs.where(func(r request) bool { return r.outcome == release.RateLimited })
			if len(limited) != 1 {
				t.Fatalf("%d rate-limited answers, want 1: %v", len(limited), outcomes(limited))
			}
			hit := limited[0]
			// The backoff is jittered(wait + R, 0.1): at least 0.9 of it.
			full := reset.Sub(hit.at) + timing.ResetMargin()
			quietUntil := hit.at.Add(full * 9 / 10)
			if quietUntil.Before(reset) {
				t.Fatalf("the shortest backoff ends at %v, before the reset %v: the test's reset is too far away", quietUntil, reset)
			}
			t.Logf("%s rate limited at %v, reset %v, quiet until at least %v", hit.poller,
				hit.at.Format(time.TimeOnly), reset.Format(time.TimeOnly), quietUntil.Format(time.TimeOnly))
			during := s.reqs.where(func(r request) bool { return r.at.After(hit.at) && r.at.Before(quietUntil) })
			if !tt.wantQuiet {
				t.Logf("%d requests during the backoff", len(during))
				if len(during) == 0 {
					t.Fatal("pollers that ignore the fleet backoff made no request during it: the check cannot fail")
				}
				return
			}
			if len(during) > 0 {
				t.Fatalf("after %s was rate limited, %d requests before %v: %v",
					hit.poller, len(during), quietUntil.Format(time.TimeOnly), outcomes(during))
			}

			after := s.reqs.between(quietUntil, end)
			if len(after) == 0 {
				t.Fatal("no request after the backoff")
			}
			// The next tick after the longest backoff, at the latest.
			resumeBy := hit.at.Add(full * 11 / 10).Add(timing.TickDelay(1))
			t.Logf("first request after the backoff: %v", after[0])
			if first := after[0]; first.at.After(resumeBy) {
				t.Errorf("first request after the backoff at %v, want by %v", first.at.Format(time.TimeOnly), resumeBy.Format(time.TimeOnly))
			}
			perApp := byApp(after)
			for _, app := range s.apps {
				if perApp[app.Key] == 0 {
					t.Errorf("%s: not asked again after the backoff", app.Key)
				}
			}
			if _, b, err := adminStore(t, srv.URL()).Load(context.Background(), nil); err != nil || !b.Until.IsZero() {
				t.Errorf("fleet backoff after a good round = %+v, %v; want none", b, err)
			}
		})
	}
}

// TestRateLimitStopsRoundsUnderWay rate-limits a poller while another is in
// the middle of its round, waiting REQUEST_SPACING before its next request:
// that request must not go out, since the fleet is now backing off. Poller
// B starts its round at t0 (13 apps due, 1 s apart) and poller A ticks at
// t0 + 0.5 s; the first request A makes is answered with a rate limit.
func TestRateLimitStopsRoundsUnderWay(t *testing.T) {
	t.Parallel()
	timing := shortTiming
	timing.StartupJitter = 0
	srv := redistest.Start(t)
	s := newSim(t, timing, defaultApps())
	t0 := s.clock.Now()
	s.add("poller-b", memberConfig{redisURL: srv.URL(), coordinate: true, seed: 1})
	if got := s.reqs.where(func(request) bool { return true }); len(got) != 1 {
		t.Fatalf("poller-b's round began with %d requests, want 1: %v", len(got), outcomes(got))
	}
	s.gh.Queue(fakegithub.AnyRepo, fakegithub.RateLimit(t0.Add(5*time.Minute).Truncate(time.Second)))
	s.runUntil(t0.Add(500 * time.Millisecond))
	s.add("poller-a", memberConfig{redisURL: srv.URL(), coordinate: true, seed: 2})
	s.runUntil(t0.Add(5 * time.Minute))

	limited := s.reqs.where(func(r request) bool { return r.outcome == release.RateLimited })
	if len(limited) != 1 || limited[0].poller != "poller-a" {
		t.Fatalf("rate-limited answers %v, want one to poller-a", outcomes(limited))
	}
	hit := limited[0]
	if after := s.reqs.where(func(r request) bool { return r.at.After(hit.at) }); len(after) > 0 {
		t.Errorf("requests after the rate limit at %v, during the fleet backoff: %v",
			hit.at.Format(time.TimeOnly), outcomes(after))
	}
}
