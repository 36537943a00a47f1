package fleet_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/storytold/craft-releases/pkg/config"
	"github.com/storytold/craft-releases/pkg/github"
	"github.com/storytold/craft-releases/pkg/poller"
	"github.com/storytold/craft-releases/pkg/redis"
	"github.com/storytold/craft-releases/pkg/redis/store"
	"github.com/storytold/craft-releases/pkg/release"
	"github.com/storytold/craft-releases/pkg/schedule"
	"github.com/storytold/craft-releases/test/fakeclock"
	"github.com/storytold/craft-releases/test/fakegithub"
)

// settleWait bounds how long, in wall time, the simulation waits for every
// poller to park on the clock. It is a guard against a hang (a Redis call
// without a deadline, say), not a performance figure: a settled step takes
// milliseconds.
const settleWait = 30 * time.Second

// epoch is where a simulation's clock starts: a day before the wall clock.
// go-github remembers a spent rate limit against the wall clock and sends
// nothing before its reset; the resets the tests program are computed from
// the simulated clock, and lie in the wall clock's past, so that only the
// fleet backoff, the behaviour under test, holds the pollers back.
func epoch() time.Time { return time.Now().Add(-24 * time.Hour).Truncate(time.Second) }

// shortTiming is the timing of most tests: I = 60 s, so M = 15 s, C = 30 s
// and F = R = 60 s; ticks and spacing as in production.
var shortTiming = schedule.Timing{
	Interval:      time.Minute,
	MaxBackoff:    time.Hour,
	Tick:          30 * time.Second,
	Spacing:       time.Second,
	StartupJitter: 30 * time.Second,
}

// productionTiming is docs/config.md's default timing for interval.
func productionTiming(interval time.Duration) schedule.Timing {
	return schedule.Timing{
		Interval:      interval,
		MaxBackoff:    4 * time.Hour,
		Tick:          30 * time.Second,
		Spacing:       time.Second,
		StartupJitter: 30 * time.Second,
	}
}

// request is one GitHub request of the simulation, as a poller made it.
type request struct {
	poller  string
	app     string
	at      time.Time // simulated
	etag    string    // the If-None-Match sent
	outcome release.Outcome
}

func (r request) String() string {
	return fmt.Sprintf("%s %s at %v: %v", r.poller, r.app, r.at.Format(time.TimeOnly), r.outcome)
}

// requestLog records every GitHub request of a simulation.
type requestLog struct {
	mu   sync.Mutex
	list []request
}

func (l *requestLog) add(r request) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.list = append(l.list, r)
}

// where returns the requests for which keep is true, oldest first.
func (l *requestLog) where(keep func(request) bool) []request {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []request
	for _, r := range l.list {
		if keep(r) {
			out = append(out, r)
		}
	}
	return out
}

// between returns the requests made in [from, to).
func (l *requestLog) between(from, to time.Time) []request {
	return l.where(func(r request) bool { return !r.at.Before(from) && r.at.Before(to) })
}

// recorder is the poller's Source: the real GitHub client, with every
// request written down with the simulated time and the poller's name.
type recorder struct {
	name  string
	src   poller.Source
	clock *fakeclock.Clock
	log   *requestLog
}

func (r recorder) Latest(ctx context.Context, app release.App, etag string) release.Answer {
	at := r.clock.Now()
	a := r.src.Latest(ctx, app, etag)
	r.log.add(request{poller: r.name, app: app.Key, at: at, etag: etag, outcome: a.Outcome})
	return a
}

// sink records the last entry a poller passed on for each app.
type sink struct {
	mu      sync.Mutex
	entries map[string]release.Entry
}

func (s *sink) Set(app string, e release.Entry) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.entries[app] = e
}

func (s *sink) get(app string) (release.Entry, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	e, ok := s.entries[app]
	return e, ok
}

// member is one poller of the simulated fleet.
type member struct {
	name   string
	p      *poller.Poller
	client *redis.Conn  // nil when the poller has no Redis
	store  *store.Store // nil when the poller has no Redis
	logs   *observer.ObservedLogs
	sink   *sink
}

// count returns how many of the member's log entries have message msg.
func (m *member) count(msg string) int { return m.logs.FilterMessage(msg).Len() }

// memberConfig is how one poller of the simulation is set up.
type memberConfig struct {
	redisURL   string // "" runs the poller standalone, with no Fleet at all
	coordinate bool
	seed       uint64 // of the poller's random draws
}

// sim is a fleet of pollers on one simulated clock, against one fake GitHub
// that publishes a release for every app. Each poller runs its real Run loop
// in its own goroutine; the simulation moves the clock only when every
// poller is parked on it (waiting for its next tick, its start-up jitter or
// the spacing between two requests), to the earliest deadline among them.
// Pollers whose deadlines coincide resume together and run concurrently.
type sim struct {
	t      testing.TB
	clock  *fakeclock.Clock
	gh     *fakegithub.Server
	apps   []release.App
	timing schedule.Timing
	reqs   *requestLog

	ctx     context.Context
	cancel  context.CancelFunc
	wg      sync.WaitGroup
	members []*member
	stopped bool
}

// newSim returns a simulation of apps with timing and no poller yet,
// stopped by t.Cleanup (before whatever the test started earlier).
func newSim(t testing.TB, timing schedule.Timing, apps []release.App) *sim {
	t.Helper()
	s := &sim{
		t:      t,
		clock:  fakeclock.New(epoch()),
		gh:     fakegithub.New(t),
		apps:   apps,
		timing: timing,
		reqs:   &requestLog{},
	}
	for _, app := range apps {
		s.gh.Publish(app.Repo, fakegithub.NewRelease(app.Repo, "v1.0.0"))
	}
	// No x-ratelimit headers: the fake's quota and reset are of the real
	// clock, not the simulation's, and would pace the schedule under test
	// (the pacing has tests of its own, in pkg/poller).
	s.gh.SetQuota(fakegithub.Quota{})
	s.ctx, s.cancel = context.WithCancel(context.Background())
	t.Cleanup(s.stop)
	return s
}

// add starts a poller named name and waits until it is parked on the clock.
func (s *sim) add(name string, mc memberConfig) *member {
	s.t.Helper()
	src, err := github.New(github.Options{BaseURL: s.gh.URL(), Clock: s.clock})
	if err != nil {
		s.t.Fatalf("github.New: %v", err)
	}
	core, logs := observer.New(zapcore.InfoLevel)
	m := &member{name: name, logs: logs, sink: &sink{entries: make(map[string]release.Entry)}}
	rng := rand.New(rand.NewPCG(mc.seed, 0x5eed))
	cfg := poller.Config{
		Apps:       s.apps,
		Timing:     s.timing,
		Source:     recorder{name: name, src: src, clock: s.clock, log: s.reqs},
		Coordinate: mc.coordinate,
		Sink:       m.sink,
		Logger:     zap.New(core).With(zap.String("poller", name)),
		Clock:      s.clock,
		Rand:       rng.Float64,
	}
	if mc.redisURL != "" {
		client, err := redis.OpenURL(mc.redisURL)
		if err != nil {
			s.t.Fatalf("redis.OpenURL: %v", err)
		}
		m.client = client
		m.store = store.New(client, name, s.apps)
		cfg.Fleet, cfg.ReadTimeout = m.store, client.Timeout()
	}
	m.p, err = poller.New(cfg)
	if err != nil {
		s.t.Fatalf("poller.New: %v", err)
	}
	s.members = append(s.members, m)
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		if err := m.p.Run(s.ctx); err != nil {
			s.t.Errorf("%s: Run: %v", name, err)
		}
	}()
	s.settle()
	return m
}

// settle waits until every running poller is parked on the clock.
func (s *sim) settle() {
	s.t.Helper()
	guard := time.NewTimer(settleWait)
	defer guard.Stop()
	for {
		n := s.clock.Waiters()
		if n == len(s.members) {
			return
		}
		if n > len(s.members) {
			s.t.Fatalf("%d waiters on the clock for %d pollers", n, len(s.members))
		}
		select {
		case <-s.clock.Parked():
		case <-guard.C:
			s.t.Fatalf("after %v of wall time, only %d of %d pollers are parked on the clock", settleWait, n, len(s.members))
		}
	}
}

// runUntil moves the simulation to end, one deadline at a time, and returns
// with every poller parked and the clock at end.
func (s *sim) runUntil(end time.Time) {
	s.t.Helper()
	for {
		next, ok := s.clock.Next()
		if !ok {
			s.t.Fatal("no poller is waiting on the clock")
		}
		if next.After(end) {
			s.clock.Set(end)
			return
		}
		s.clock.Set(next)
		s.settle()
	}
}

// runWhile moves the simulation one deadline at a time while more is true,
// for at most d, and reports whether more turned false. more is first asked
// before the clock moves.
func (s *sim) runWhile(d time.Duration, more func() bool) bool {
	s.t.Helper()
	end := s.clock.Now().Add(d)
	for more() {
		next, ok := s.clock.Next()
		if !ok {
			s.t.Fatal("no poller is waiting on the clock")
		}
		if next.After(end) {
			s.clock.Set(end)
			return false
		}
		s.clock.Set(next)
		s.settle()
	}
	return true
}

// runFor runs the simulation for d from now.
func (s *sim) runFor(d time.Duration) { s.runUntil(s.clock.Now().Add(d)) }

// stop cancels every poller, waits for their Run to return and closes their
// Redis clients. It fails the test when a Run is still busy after
// settleWait of wall time. It may be called more than once.
func (s *sim) stop() {
	if s.stopped {
		return
	}
	s.stopped = true
	s.cancel()
	done := make(chan struct{})
	go func() {
		s.wg.Wait()
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(settleWait):
		s.t.Errorf("a poller's Run did not return within %v of wall time after its context was cancelled:\n%s",
			settleWait, strings.Join(goroutinesIn("craft-releases/pkg/poller"), "\n\n"))
	}
	for _, m := range s.members {
		if m.client != nil {
			m.client.Close()
		}
	}
}

// perAppPerInterval returns how many requests of reqs there were per app
// and per interval over span.
func (s *sim) perAppPerInterval(reqs []request, span time.Duration) float64 {
	return float64(len(reqs)) / float64(len(s.apps)) / (float64(span) / float64(s.timing.Interval))
}

// byApp counts reqs per app.
func byApp(reqs []request) map[string]int {
	n := make(map[string]int)
	for _, r := range reqs {
		n[r.app]++
	}
	return n
}

// defaultApps are the 13 apps of docs/config.md.
func defaultApps() []release.App { return config.DefaultApps() }

// keys returns the apps' keys in order.
func keys(apps []release.App) []string {
	out := make([]string, len(apps))
	for i, a := range apps {
		out[i] = a.Key
	}
	return out
}

// outcomes lists the first few of reqs, for failure messages.
func outcomes(reqs []request) string {
	const shown = 5
	var b strings.Builder
	for i, r := range reqs {
		if i == shown {
			fmt.Fprintf(&b, "; and %d more", len(reqs)-shown)
			break
		}
		if i > 0 {
			b.WriteString("; ")
		}
		b.WriteString(r.String())
	}
	return b.String()
}

// adminStore returns a Store of its own on url, to read what the fleet
// shares; its client is closed by t.Cleanup.
func adminStore(t testing.TB, url string) *store.Store {
	t.Helper()
	c, err := redis.OpenURL(url)
	if err != nil {
		t.Fatalf("redis.OpenURL: %v", err)
	}
	t.Cleanup(c.Close)
	return store.New(c, "admin", defaultApps())
}

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
