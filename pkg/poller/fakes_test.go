package poller_test

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"sync"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/storytold/craft-releases/pkg/clock"
	"github.com/storytold/craft-releases/pkg/poller"
	"github.com/storytold/craft-releases/pkg/release"
	"github.com/storytold/craft-releases/pkg/schedule"
	"github.com/storytold/craft-releases/test/fakeclock"
)

// t0 is when every test starts.
var t0 = time.Date(2026, 10, 10, 12, 0, 0, 0, time.UTC)

// timing is the production timing without a token: I = 1800 s, so M = 30 s,
// C = F = R = 60 s.
var timing = schedule.Timing{
	Interval:      1800 * time.Second,
	MaxBackoff:    4 * time.Hour,
	Tick:          30 * time.Second,
	Spacing:       time.Second,
	StartupJitter: 30 * time.Second,
}

func apps(keys ...string) []release.App {
	out := make([]release.App, len(keys))
	for i, k := range keys {
		out[i] = release.App{Key: k, Name: k, Repo: "storytold/" + k}
	}
	return out
}

func fetched(tag, etag string) release.Answer {
	var rel *release.Release
	if tag != "" {
		rel = &release.Release{Tag: tag, Assets: []release.Asset{}}
	}
	return release.Answer{Outcome: release.Fetched, Release: rel, ETag: etag, Remaining: -1}
}

func notModified() release.Answer {
	return release.Answer{Outcome: release.NotModified, Remaining: -1}
}

func failed() release.Answer {
	return release.Answer{Outcome: release.Failed, Err: errors.New("HTTP 502"), Remaining: -1}
}

func rateLimited(retryAt time.Time) release.Answer {
	return release.Answer{Outcome: release.RateLimited, RetryAt: retryAt, Err: errors.New("HTTP 403"), Remaining: 0}
}

// events records, in order, what the fakes saw, for tests about sequence.
type events struct {
	mu   sync.Mutex
	list []string
}

func (e *events) add(s string) {
	if e == nil {
		return
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	e.list = append(e.list, s)
}

func (e *events) all() []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return slices.Clone(e.list)
}

// newClock returns a clock at t0 whose every wait passes at once, moving it
// forward: the code under test never sleeps.
func newClock() *fakeclock.Clock {
	c := fakeclock.New(t0)
	c.Skip(-1)
	return c
}

// setClock moves c to at, which must not be in its past.
func setClock(t testing.TB, c *fakeclock.Clock, at time.Time) {
	t.Helper()
	if now := c.Now(); at.Before(now) {
		t.Fatalf("clock set back from %v to %v", now.Sub(t0), at.Sub(t0))
	}
	c.Set(at)
}

// waits records the waits asked of a clock, and adds each to events, if set.
type waits struct {
	mu     sync.Mutex
	list   []time.Duration
	events *events
}

func (w *waits) add(d time.Duration) {
	w.mu.Lock()
	w.list = append(w.list, d)
	w.mu.Unlock()
	w.events.add(fmt.Sprintf("wait %v", d))
}

func (w *waits) take() []time.Duration {
	w.mu.Lock()
	defer w.mu.Unlock()
	l := w.list
	w.list = nil
	return l
}

// parked waits until c has n waiters, and returns how long the newest wait
// has left, with every wait ending at the same time or later.
func parked(t testing.TB, c *fakeclock.Clock, n int) time.Duration {
	t.Helper()
	deadline := time.After(20 * time.Second)
	for c.Waiters() < n {
		select {
		case <-c.Parked():
		case <-deadline:
			t.Fatalf("timed out waiting for %d waiters on the clock, have %d", n, c.Waiters())
		}
	}
	next, _ := c.Next()
	return next.Sub(c.Now())
}

// fakeSource answers from a script of one answer per app and records what it
// was asked: "app", or "app(etag)" when revalidating.
type fakeSource struct {
	mu     sync.Mutex
	clock  clock.Clock
	script map[string]release.Answer
	asked  []string
	at     []time.Time
	events *events
}

func (s *fakeSource) Latest(_ context.Context, app release.App, etag string) release.Answer {
	s.mu.Lock()
	defer s.mu.Unlock()
	call := app.Key
	if etag != "" {
		call += "(" + etag + ")"
	}
	s.asked = append(s.asked, call)
	s.at = append(s.at, s.clock.Now())
	s.events.add("ask " + call)
	a, ok := s.script[app.Key]
	if !ok {
		return release.Answer{Outcome: release.Failed, Err: errors.New("unscripted request"), Remaining: -1}
	}
	delete(s.script, app.Key)
	return a
}

func (s *fakeSource) take() (asked []string, at []time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	asked, at = s.asked, s.at
	s.asked, s.at = nil, nil
	return asked, at
}

// fakeFleet is the shared state in memory, with docs/redis.md's guarded writes in
// their simplest form: a time more than release.MaxSkew ahead of the writer's
// reads as absent. It records every call as "Op" or "Op app".
type fakeFleet struct {
	mu      sync.Mutex
	entries map[string]release.Entry
	backoff schedule.Backoff
	errs    map[string]error // by operation: the error that call returns
	calls   []string
	events  *events
	// during, if set, runs after a call is recorded and before it acts: the
	// moment another pod may write.
	during func(f *fakeFleet, op, arg string)
	// redis is Redis's clock, for ClockOffset: nil, the poller's own.
	redis interface{ Now() time.Time }
	// of is the poller's clock, against which ClockOffset measures.
	of interface{ Now() time.Time }
}

// ClockOffset tells how far of runs ahead of redis, unrecorded: every
// coordinated load asks, and the tests of calls are about the rest.
func (f *fakeFleet) ClockOffset(context.Context) (time.Duration, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.errs["ClockOffset"]; err != nil {
		return 0, err
	}
	if f.redis == nil || f.of == nil {
		return 0, nil
	}
	return f.of.Now().Sub(f.redis.Now()), nil
}

func newFleet() *fakeFleet {
	return &fakeFleet{entries: map[string]release.Entry{}, errs: map[string]error{}}
}

func (f *fakeFleet) call(op, arg string) error {
	f.mu.Lock()
	name := op
	if arg != "" {
		name += " " + arg
	}
	f.calls = append(f.calls, name)
	err, during := f.errs[op], f.during
	f.mu.Unlock()
	f.events.add(name)
	if during != nil {
		during(f, op, arg)
	}
	return err
}

func (f *fakeFleet) set(app string, e release.Entry) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.entries[app] = e
}

func (f *fakeFleet) setBackoff(b schedule.Backoff) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.backoff = b
}

func (f *fakeFleet) setErr(op string, err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.errs[op] = err
}

func (f *fakeFleet) entry(app string) release.Entry {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.entries[app]
}

func (f *fakeFleet) takeCalls() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	c := f.calls
	f.calls = nil
	return c
}

func (f *fakeFleet) Load(_ context.Context, apps []string) (map[string]release.Entry, schedule.Backoff, error) {
	if err := f.call("Load", ""); err != nil {
		return nil, schedule.Backoff{}, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	out := make(map[string]release.Entry, len(apps))
	for _, app := range apps {
		if e, ok := f.entries[app]; ok {
			out[app] = e
		}
	}
	return out, f.backoff, nil
}

func (f *fakeFleet) LoadApp(_ context.Context, app string) (release.Entry, schedule.Backoff, error) {
	if err := f.call("LoadApp", app); err != nil {
		return release.Entry{}, schedule.Backoff{}, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.entries[app], f.backoff, nil
}

func (f *fakeFleet) Claim(_ context.Context, app string, at time.Time, window time.Duration) (bool, error) {
	if err := f.call("Claim", app); err != nil {
		return false, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	e := f.entries[app]
	if !e.ClaimedAt.IsZero() && e.ClaimedAt.Add(window).After(at) && release.Believed(e.ClaimedAt, at) {
		return false, nil
	}
	e.ClaimedAt = at
	f.entries[app] = e
	return true, nil
}

func (f *fakeFleet) PutFetch(ctx context.Context, app string, n release.Entry) (bool, error) {
	written, _, err := f.PublishFetch(ctx, app, n)
	return written, err
}

func (f *fakeFleet) PublishFetch(_ context.Context, app string, n release.Entry) (written, changed bool, err error) {
	if err := f.call("PutFetch", app); err != nil {
		return false, false, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	e := f.entries[app]
	if e.FetchedAt.After(n.FetchedAt) && release.Believed(e.FetchedAt, n.FetchedAt) {
		return false, false, nil
	}
	changed = !e.Fetched() || !reflect.DeepEqual(e.Release, n.Release) || !reflect.DeepEqual(e.History.List(), n.History.List())
	e.FetchedAt, e.ETag, e.Release, e.History = n.FetchedAt, n.ETag, n.Release, n.History
	f.entries[app] = e
	return true, changed, nil
}

func (f *fakeFleet) PutNotModified(_ context.Context, app string, n release.Entry) (bool, error) {
	if err := f.call("PutNotModified", app); err != nil {
		return false, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	e := f.entries[app]
	switch {
	case n.ETag == "":
		return false, nil
	case !e.Fetched():
		e.FetchedAt, e.ETag, e.Release = n.FetchedAt, n.ETag, n.Release
	case e.ETag != n.ETag || (e.FetchedAt.After(n.FetchedAt) && release.Believed(e.FetchedAt, n.FetchedAt)):
		return false, nil
	default:
		e.FetchedAt = n.FetchedAt
	}
	f.entries[app] = e
	return true, nil
}

func (f *fakeFleet) PutFailure(_ context.Context, app string, n release.Entry) (bool, error) {
	if err := f.call("PutFailure", app); err != nil {
		return false, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	e := f.entries[app]
	if e.FailedAt.After(n.FailedAt) && release.Believed(e.FailedAt, n.FailedAt) {
		return false, nil
	}
	e.FailedAt, e.Failures = n.FailedAt, n.Failures
	f.entries[app] = e
	return true, nil
}

func (f *fakeFleet) PutBackoff(_ context.Context, b schedule.Backoff) error {
	arg := "clear"
	if !b.Until.IsZero() {
		arg = fmt.Sprintf("until %v trouble %d", b.Until.Sub(t0), b.Trouble)
	}
	if err := f.call("PutBackoff", arg); err != nil {
		return err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if b.Until.IsZero() {
		b = schedule.Backoff{}
	}
	f.backoff = b
	return nil
}

func (f *fakeFleet) ClearBackoff(_ context.Context, read schedule.Backoff) (bool, error) {
	if err := f.call("ClearBackoff", fmt.Sprintf("read %s trouble %d", since(read.Until), read.Trouble)); err != nil {
		return false, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if !f.backoff.Until.Equal(read.Until) || f.backoff.Trouble != read.Trouble {
		return false, nil
	}
	f.backoff = schedule.Backoff{}
	return true, nil
}

// fakeSink records every Set.
type fakeSink struct {
	mu   sync.Mutex
	sets []string
	last map[string]release.Entry
}

func (s *fakeSink) Set(app string, e release.Entry) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.sets = append(s.sets, app)
	if s.last == nil {
		s.last = map[string]release.Entry{}
	}
	s.last[app] = e
}

func (s *fakeSink) takeSets() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	sets := s.sets
	s.sets = nil
	return sets
}

func (s *fakeSink) entry(app string) release.Entry {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.last[app]
}

// fakeObserver records every Observer call, with times as offsets from t0:
// "answer app outcome remaining reset", "fetched app at", "claim won|lost",
// "refused op", "redis_error op", "round mode took until trouble",
// "refreshed app took". Entry's are kept apart, in entries.
type fakeObserver struct {
	mu       sync.Mutex
	offsets  []time.Duration // ClockOffset's, apart from calls: every coordinated load has one
	paced    []time.Duration // Paced's, apart from calls
	deferred map[string]int  // RefreshesDeferred's, by reason, apart from calls
	entries  []string        // Entry's, apart from calls: "app tag|none|never ok|failing n"
	calls    []string
}

func (o *fakeObserver) add(format string, args ...any) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.calls = append(o.calls, fmt.Sprintf(format, args...))
}

// since is t as an offset from t0, or "never" when zero.
func since(t time.Time) string {
	if t.IsZero() {
		return "never"
	}
	return t.Sub(t0).String()
}

func (o *fakeObserver) Answer(app string, a release.Answer) {
	o.add("answer %s %s %d %s", app, a.Outcome, a.Remaining, since(a.Reset))
}
func (o *fakeObserver) Fetched(app string, at time.Time) { o.add("fetched %s %s", app, since(at)) }
func (o *fakeObserver) Claim(won bool) {
	if won {
		o.add("claim won")
	} else {
		o.add("claim lost")
	}
}
func (o *fakeObserver) WriteRefused(op poller.Op) { o.add("refused %s", op) }
func (o *fakeObserver) RedisError(op poller.Op)   { o.add("redis_error %s", op) }
func (o *fakeObserver) Round(m poller.Mode, took time.Duration, b schedule.Backoff) {
	o.add("round %s %v %s %d", m, took, since(b.Until), b.Trouble)
}
func (o *fakeObserver) Refreshed(app string, took time.Duration) { o.add("refreshed %s %v", app, took) }
func (o *fakeObserver) Paced(d time.Duration) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.paced = append(o.paced, d)
}

func (o *fakeObserver) RefreshesDeferred(why string, n int) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.deferred == nil {
		o.deferred = map[string]int{}
	}
	o.deferred[why] += n
}

// deferredBy returns how many refresh requests were deferred for why.
func (o *fakeObserver) deferredBy(why string) int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.deferred[why]
}

func (o *fakeObserver) Entry(app string, e release.Entry) {
	tag := "never"
	switch {
	case e.Release != nil:
		tag = e.Release.Tag
	case e.Fetched():
		tag = "none"
	}
	state := "ok"
	if e.Failing() {
		state = fmt.Sprintf("failing %d", e.Failures)
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	o.entries = append(o.entries, app+" "+tag+" "+state)
}

// takeEntries returns the Entry calls since the last takeEntries.
func (o *fakeObserver) takeEntries() []string {
	o.mu.Lock()
	defer o.mu.Unlock()
	e := o.entries
	o.entries = nil
	return e
}

func (o *fakeObserver) ClockOffset(d time.Duration) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.offsets = append(o.offsets, d)
}

func (o *fakeObserver) take() []string {
	o.mu.Lock()
	defer o.mu.Unlock()
	c := o.calls
	o.calls = nil
	return c
}

// harness is a Poller wired to fakes.
type harness struct {
	p     *poller.Poller
	clock *fakeclock.Clock
	waits *waits
	// afterWait, if set, is called after each wait with the clock's time.
	afterWait func(now time.Time)
	source    *fakeSource
	fleet     *fakeFleet // nil: standalone
	sink      *fakeSink
	obs       *fakeObserver
	logs      *observer.ObservedLogs
	changes   []string // Config.Changes calls, as "app old→new"
}

// tagOf is r's tag, or "none" for no release, as the tests record
// Config.Changes calls.
func tagOf(r *release.Release) string {
	if r == nil {
		return "none"
	}
	return r.Tag
}

// newHarness returns a poller over the apps keys with a fake clock at t0 and
// draws of 0.5 (no jitter). fleet may be nil for a standalone poller.
func newHarness(t testing.TB, keys []string, fleet *fakeFleet, coordinate bool) *harness {
	t.Helper()
	core, logs := observer.New(zapcore.DebugLevel)
	h := &harness{clock: newClock(), waits: &waits{}, fleet: fleet, sink: &fakeSink{}, obs: &fakeObserver{}, logs: logs}
	h.clock.OnAfter(func(d time.Duration, now time.Time) {
		h.waits.add(d)
		if h.afterWait != nil {
			h.afterWait(now)
		}
	})
	h.source = &fakeSource{clock: h.clock}
	c := poller.Config{
		Apps:       apps(keys...),
		Timing:     timing,
		Source:     h.source,
		Coordinate: coordinate,
		Sink:       h.sink,
		Changes: func(app string, old, new *release.Release) {
			h.changes = append(h.changes, app+" "+tagOf(old)+"→"+tagOf(new))
		},
		Observer: h.obs,
		Logger:   zap.New(core),
		Clock:    h.clock,
		Rand:     func() float64 { return 0.5 },
	}
	if fleet != nil {
		c.Fleet = fleet
	}
	p, err := poller.New(c)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	h.p = p
	return h
}

// roundLine is what a tick's "poll round" log line says.
type roundLine struct {
	Mode        string
	Fetched     int64
	Unchanged   int64
	Failed      int64
	RateLimited bool
	Backoff     time.Duration
	Trouble     int64
}

func parseRound(t testing.TB, e observer.LoggedEntry) roundLine {
	t.Helper()
	m := e.ContextMap()
	var r roundLine
	var ok [7]bool
	r.Mode, ok[0] = m["mode"].(string)
	r.Fetched, ok[1] = m["fetched"].(int64)
	r.Unchanged, ok[2] = m["unchanged"].(int64)
	r.Failed, ok[3] = m["failed"].(int64)
	r.RateLimited, ok[4] = m["rate_limited"].(bool)
	r.Backoff, ok[5] = m["backoff"].(time.Duration)
	r.Trouble, ok[6] = m["trouble"].(int64)
	if slices.Contains(ok[:], false) {
		t.Fatalf("round log line fields = %v, want mode, fetched, unchanged, failed, rate_limited, backoff, trouble", m)
	}
	return r
}

// tickLogs splits the log entries since the last call into the round lines
// and the messages of the warnings.
func (h *harness) tickLogs(t testing.TB) (rounds []roundLine, warns []string, all []observer.LoggedEntry) {
	t.Helper()
	all = h.logs.TakeAll()
	for _, e := range all {
		switch {
		case e.Message == "poll round":
			rounds = append(rounds, parseRound(t, e))
		case e.Level == zapcore.WarnLevel:
			warns = append(warns, e.Message)
		}
	}
	return rounds, warns, all
}
