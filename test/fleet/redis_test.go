package fleet_test

import (
	"context"
	"testing"
	"time"

	"github.com/storytold/craft-releases/pkg/release"
	"github.com/storytold/craft-releases/pkg/schedule"
	"github.com/storytold/craft-releases/test/redistest"
)

// callTimeout bounds each Redis call of the pollers in the outage tests, and
// a tick's reads together (poller.Config.ReadTimeout). rueidis retries a
// read of a Redis that is down until the call's deadline, so every tick of
// an outage costs this much wall time; it is still far above what a tick's
// reads from a working Redis take on a loaded CI machine, where one late
// answer would count as an outage of its own.
const callTimeout = time.Second

// withTimeout returns url with every call limited to callTimeout.
func withTimeout(url string) string { return url + "?write_timeout=" + callTimeout.String() }

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
// holds) and warns once; after it, it says Redis is back, writes every entry
// back from memory at its first tick, and a second poller that starts then
// takes the shared fetches and asks nothing while they are fresh.
func TestRedisStoppedAndRestarted(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	s := newSim(t, outageTiming, defaultApps())
	interval := s.timing.Interval
	first := s.add("poller-1", memberConfig{redisURL: withTimeout(srv.URL()), coordinate: true, seed: 1})
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
	s.runFor(s.timing.TickDelay(1))
	// From memory: the 304s of the outage's last interval.
	s.checkShared(srv.URL(), up.Add(-interval))
	s.runFor(interval)
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

	second := s.add("poller-2", memberConfig{redisURL: withTimeout(srv.URL()), coordinate: true, seed: 2})
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

// TestRedisFlushed empties Redis under a coordinated fleet of two at the
// production timing (I = 30 min) once every app was fetched: at the next
// tick the pollers write every entry back from memory (docs/operations.md,
// "Redis flushed"), each with its own fetch time, without a single GitHub
// request, and an entry read back as written (in ms) is never written again.
func TestRedisFlushed(t *testing.T) {
	t.Parallel()
	timing := productionTiming(30 * time.Minute)
	srv := redistest.Start(t)
	s := newSim(t, timing, defaultApps())
	s.add("poller-1", memberConfig{redisURL: srv.URL(), coordinate: true, seed: 1})
	s.add("poller-2", memberConfig{redisURL: srv.URL(), coordinate: true, seed: 2})
	s.runFor(timing.Interval)

	admin := adminStore(t, srv.URL())
	flushed := s.clock.Now()
	srv.MustDo("FLUSHALL")
	if !s.runWhile(timing.Interval, func() bool {
		shared, _, err := admin.Load(context.Background(), keys(s.apps))
		if err != nil {
			t.Fatalf("read the shared state: %v", err)
		}
		for _, app := range s.apps {
			if !shared[app.Key].Fetched() {
				return true
			}
		}
		return false
	}) {
		t.Fatalf("Redis still lacks an app %v after the flush", timing.Interval)
	}
	if took, limit := s.clock.Now().Sub(flushed), timing.TickDelay(1); took > limit {
		t.Errorf("Redis was repaired %v after the flush, want within a tick (%v)", took, limit)
	}
	shared := s.checkShared(srv.URL(), flushed.Add(-timing.Interval))
	if reqs := s.reqs.between(flushed, s.clock.Now().Add(time.Nanosecond)); len(reqs) > 0 {
		t.Errorf("GitHub requests during the repair: %s", outcomes(reqs))
	}
	for _, m := range s.members {
		for _, app := range s.apps {
			mine, _ := m.sink.get(app.Key)
			if e := shared[app.Key]; e.FetchedAt.UnixMilli() != mine.FetchedAt.UnixMilli() {
				t.Errorf("%s: written back with fetch time %v, want %s's own %v", app.Key,
					e.FetchedAt.Format(time.TimeOnly), m.name, mine.FetchedAt.Format(time.TimeOnly))
			}
		}
	}
	const line = "redis entries written back from memory"
	before := s.members[0].count(line) + s.members[1].count(line)
	s.runFor(2 * timing.Interval)
	if got := s.members[0].count(line) + s.members[1].count(line); before == 0 || got != before {
		t.Errorf("%d write-back lines at the repair, %d after two more intervals, want at least 1 and no more", before, got)
	}
}
