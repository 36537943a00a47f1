package fleet_test

import (
	"context"
	"testing"
	"time"

	"github.com/storytold/craft-releases/pkg/release"
	"github.com/storytold/craft-releases/pkg/schedule"
	"github.com/storytold/craft-releases/pkg/store"
	"github.com/storytold/craft-releases/test/redistest"
)

// callTimeout bounds each Redis call of the pollers in the outage tests.
// rueidis retries a read of a Redis that is down until the call's deadline,
// so every tick of an outage costs this much wall time; it is still far
// above what a call to a working Redis takes on a loaded CI machine, where
// one late answer would count as an outage of its own.
const callTimeout = 500 * time.Millisecond

// outageTiming is the timing of the outage tests: ticks of a minute, so
// that an outage of minutes costs few calls that wait for their deadline.
var outageTiming = schedule.Timing{
	Interval:      2 * time.Minute,
	MaxBackoff:    time.Hour,
	Tick:          time.Minute,
	Spacing:       time.Second,
	StartupJitter: 30 * time.Second,
}

// checkShared fails the test unless Redis holds, for every app, a readable
// fetch of the release the fake GitHub serves, at or after since. It returns
// the shared entries.
func (s *sim) checkShared(url string, since time.Time) map[string]release.Entry {
	s.t.Helper()
	shared, _, err := adminStore(s.t, url).Load(context.Background(), keys(s.apps))
	if err != nil {
		s.t.Fatalf("read the shared state: %v", err)
	}
	for _, app := range s.apps {
		e := shared[app.Key]
		switch {
		case !e.Fetched():
			s.t.Errorf("%s: Redis holds no fetch", app.Key)
		case e.FetchedAt.Before(since):
			s.t.Errorf("%s: Redis holds a fetch of %v, want one at or after %v", app.Key,
				e.FetchedAt.Format(time.TimeOnly), since.Format(time.TimeOnly))
		case e.ETag != s.gh.ETag(app.Repo) || e.Release == nil || e.Release.Tag != "v1.0.0":
			s.t.Errorf("%s: Redis holds etag %s and release %+v, want etag %s and v1.0.0", app.Key, e.ETag, e.Release, s.gh.ETag(app.Repo))
		}
	}
	return shared
}

// TestRedisStoppedAndRestarted stops Redis under a coordinated poller for 9
// simulated minutes and starts it again empty. During the outage the poller
// keeps asking GitHub about every app from memory (304s for the ETags it
// holds) and warns once; after it, it says Redis is back, republishes every
// entry with its next 304s, and a second poller that starts then takes the
// shared fetches and asks nothing while they are fresh.
func TestRedisStoppedAndRestarted(t *testing.T) {
	srv := redistest.Start(t)
	s := newSim(t, outageTiming, defaultApps())
	interval := s.timing.Interval
	opts := []store.Option{store.WithTimeout(callTimeout)}
	first := s.add("poller-1", memberConfig{redisURL: srv.URL(), coordinate: true, seed: 1, opts: opts})
	s.runFor(2 * interval)

	down := s.clock.Now()
	srv.Stop()
	const outage = 9 * time.Minute
	s.runFor(outage)
	perApp := byApp(s.reqs.between(down, down.Add(outage)))
	for _, app := range s.apps {
		// About once per interval, from memory: its ETag and 304s.
		if n, want := perApp[app.Key], int(outage/interval)-1; n < want {
			t.Errorf("%s: asked %d times during the outage, want at least %d", app.Key, n, want)
		}
	}
	if odd := s.reqs.where(func(r request) bool {
		return !r.at.Before(down) && (r.etag == "" || r.outcome != release.NotModified)
	}); len(odd) > 0 {
		t.Errorf("requests during the outage without the ETag held in memory, or not 304: %v", outcomes(odd))
	}
	if got := first.count("redis unavailable"); got != 1 {
		t.Errorf("%d \"redis unavailable\" warnings in %v of outage, want 1", got, outage)
	}
	if got := first.count("redis is back"); got != 0 {
		t.Errorf("%d \"redis is back\" while Redis is down, want 0", got)
	}

	up := s.clock.Now()
	srv.Restart()
	s.runFor(interval + s.timing.TickDelay(1))
	if got := first.count("redis is back"); got != 1 {
		t.Errorf("%d \"redis is back\" after the restart, want 1", got)
	}
	if got := first.count("redis unavailable"); got != 1 {
		t.Errorf("%d \"redis unavailable\" warnings in all, want 1", got)
	}
	shared := s.checkShared(srv.URL(), up)
	if t.Failed() {
		t.FailNow()
	}

	second := s.add("poller-2", memberConfig{redisURL: srv.URL(), coordinate: true, seed: 2, opts: opts})
	for _, app := range s.apps {
		if e, ok := second.sink.get(app.Key); !ok || !e.FetchedAt.Equal(shared[app.Key].FetchedAt) {
			t.Errorf("%s: poller-2 started with %+v, want the shared fetch of %v", app.Key, e, shared[app.Key].FetchedAt.Format(time.TimeOnly))
		}
	}
	s.runFor(2 * interval)
	fresh := interval - s.timing.SkewMargin()
	for _, r := range s.reqs.where(func(r request) bool { return r.poller == "poller-2" }) {
		if r.at.Before(shared[r.app].FetchedAt.Add(fresh)) {
			t.Errorf("poller-2 asked about %s at %v, while the shared fetch of %v was fresh", r.app,
				r.at.Format(time.TimeOnly), shared[r.app].FetchedAt.Format(time.TimeOnly))
		}
	}
}

// TestRedisFlushed empties Redis under a coordinated fleet of two: neither
// poller refetches anything (their memory is fresh), and the next 304 of
// each app republishes its whole entry from memory (redis.md,
// "Republishing after a loss"), so Redis holds every release again within
// an interval, without a single 200.
func TestRedisFlushed(t *testing.T) {
	srv := redistest.Start(t)
	s := newSim(t, shortTiming, defaultApps())
	interval := s.timing.Interval
	s.add("poller-1", memberConfig{redisURL: srv.URL(), coordinate: true, seed: 1})
	s.add("poller-2", memberConfig{redisURL: srv.URL(), coordinate: true, seed: 2})
	s.runFor(3 * interval)

	flushed := s.clock.Now()
	srv.MustDo("FLUSHALL")
	s.runFor(interval + s.timing.TickDelay(1))
	s.checkShared(srv.URL(), flushed)

	after := s.reqs.between(flushed, s.clock.Now())
	seen := make(map[string]bool)
	for _, r := range after {
		if seen[r.app] {
			continue
		}
		seen[r.app] = true
		if r.outcome != release.NotModified || r.etag != s.gh.ETag(s.repo(r.app)) {
			t.Errorf("first request after the flush: %v with etag %s, want a 304 for the ETag held", r, r.etag)
		}
	}
	for app, n := range byApp(after) {
		if n > 2 {
			t.Errorf("%s: asked %d times in the interval after the flush, want at most 2", app, n)
		}
	}
}
