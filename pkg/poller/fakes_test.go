package poller_test

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/storytold/craft-releases/pkg/clock"
	"github.com/storytold/craft-releases/pkg/minisign"
	"github.com/storytold/craft-releases/pkg/poller"
	"github.com/storytold/craft-releases/pkg/release"
	"github.com/storytold/craft-releases/pkg/schedule"
	"github.com/storytold/craft-releases/test/fakeclock"
)

var t0 = time.Date(2026, 10, 10, 12, 0, 0, 0, time.UTC)

// timing is the production timing without a token: I = 1800 s, so M = 30 s,
// C = F = R = 60 s.
var timing = schedule.Timing{Interval: 1800 * s, MaxBackoff: 4 * time.Hour, Tick: 30 * s, Spacing: s, StartupJitter: 30 * s}

const s = time.Second

// thirteen are 13 app keys, as many as the default app list.
var thirteen = []string{"a", "b", "c", "d", "e", "f", "g", "h", "i", "j", "k", "l", "m"}

func apps(keys ...string) []release.App {
	out := make([]release.App, len(keys))
	for i, k := range keys {
		out[i] = release.App{Key: k, Name: k, Repo: "storytold/" + k}
	}
	return out
}

// numbered returns n keys: prefix followed by i, zero-padded to width.
func numbered(prefix string, n, width int) []string {
	keys := make([]string, n)
	for i := range keys {
		keys[i] = fmt.Sprintf("%s%0*d", prefix, width, i)
	}
	return keys
}

func at(d time.Duration) time.Time    { return t0.Add(d) }
func rel(tag string) *release.Release { return &release.Release{Tag: tag} }

func fetched(tag, etag string) release.Answer {
	var r *release.Release
	if tag != "" {
		r = &release.Release{Tag: tag, Assets: []release.Asset{}}
	}
	return release.Answer{Outcome: release.Fetched, Release: r, ETag: etag, Remaining: -1}
}

func notModified() release.Answer { return release.Answer{Outcome: release.NotModified, Remaining: -1} }

func failed() release.Answer {
	return release.Answer{Outcome: release.Failed, Err: errors.New("HTTP 502"), Remaining: -1}
}

func notFound() release.Answer {
	return release.Answer{Outcome: release.NotFound, Err: errors.New("latest release o/a: HTTP 404"), Remaining: -1}
}

func rateLimited(retryAt time.Time) release.Answer {
	return release.Answer{Outcome: release.RateLimited, RetryAt: retryAt, Err: errors.New("HTTP 403"), Remaining: 0}
}

func all(keys []string, a func() release.Answer) map[string]release.Answer {
	m := make(map[string]release.Answer, len(keys))
	for _, k := range keys {
		m[k] = a()
	}
	return m
}

// recorder is a list of what a fake saw, in order, that a test takes; a nil
// recorder keeps nothing.
type recorder struct {
	mu   sync.Mutex
	list []string
}

func (r *recorder) add(s string) {
	if r != nil {
		r.mu.Lock()
		defer r.mu.Unlock()
		r.list = append(r.list, s)
	}
}

func (r *recorder) take() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := r.list
	r.list = nil
	return out
}

func setClock(t testing.TB, c *fakeclock.Clock, at time.Time) {
	t.Helper()
	if now := c.Now(); at.Before(now) {
		t.Fatalf("clock set back from %v to %v", now.Sub(t0), at.Sub(t0))
	}
	c.Set(at)
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

// fakeSource answers from a script of one answer per app, then from
// otherwise (nil: a failure), and records what it was asked: "app", or
// "app(etag)" when revalidating. Its companions answer from sigs by asset id,
// each request taking the next answer.
type fakeSource struct {
	mu        sync.Mutex
	clock     clock.Clock
	script    map[string]release.Answer
	otherwise func(app release.App, etag string, now time.Time) release.Answer
	asked     []string
	at        []time.Time
	events    *recorder
	sigs      map[int64][]companionAnswer
	sigAsked  recorder
}

type companionAnswer struct {
	body []byte
	a    release.Answer
}

func bytesOf(text string) companionAnswer {
	return companionAnswer{body: []byte(text), a: release.Answer{Outcome: release.Fetched, Remaining: 4000}}
}

var companionFailure = companionAnswer{a: failed()}

// etag is the ETag of the one release, v1.0.0, that steady serves.
const etag = `"e1"`

// steady answers every entry a 200 the first time, a 304 after: v2 and v1
// for a history, app's v1.0.0 as the store takes it for a release.
func steady(app release.App, sent string, _ time.Time) release.Answer {
	switch {
	case sent != "":
		return notModified()
	case app.Channel == release.HistoryChannel:
		return historyAnswer(`"h1"`, datedAt("v2", 1), datedAt("v1", 2))
	}
	a := fetched("v1.0.0", etag)
	a.Release.Version, a.Release.Name = "1.0.0", app.Name+" v1.0.0"
	a.Release.PublishedAt = release.NewTime(t0)
	a.Release.HTMLURL = "https://github.com/" + app.Repo + "/releases/tag/v1.0.0"
	return a
}

func (s *fakeSource) Latest(_ context.Context, app release.App, etag string) release.Answer {
	s.mu.Lock()
	defer s.mu.Unlock()
	call := app.Key
	if etag != "" {
		call += "(" + etag + ")"
	}
	now := s.clock.Now()
	s.asked = append(s.asked, call)
	s.at = append(s.at, now)
	s.events.add("ask " + call)
	if a, ok := s.script[app.Key]; ok {
		delete(s.script, app.Key)
		return a
	}
	if s.otherwise != nil {
		return s.otherwise(app, etag, now)
	}
	return release.Answer{Outcome: release.Failed, Err: errors.New("unscripted request"), Remaining: -1}
}

func (s *fakeSource) Companion(_ context.Context, _ release.App, ref release.AssetRef, limit int64) ([]byte, release.Answer) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.sigAsked.add(strconv.FormatInt(ref.ID, 10))
	q := s.sigs[ref.ID]
	if len(q) == 0 || limit != minisign.MaxSignatureText {
		return nil, release.Answer{Outcome: release.Failed, Err: errors.New("unscripted companion"), Remaining: -1}
	}
	s.sigs[ref.ID] = q[1:]
	return q[0].body, q[0].a
}

func (s *fakeSource) answer(id int64, answers ...companionAnswer) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.sigs == nil {
		s.sigs = map[int64][]companionAnswer{}
	}
	s.sigs[id] = append(s.sigs[id], answers...)
}

func (s *fakeSource) take() (asked []string, at []time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	asked, at = s.asked, s.at
	s.asked, s.at = nil, nil
	return asked, at
}

func (s *fakeSource) takeAsked() []string { asked, _ := s.take(); return asked }

// fakeFleet is the shared state in memory, with docs/redis.md's guarded writes in
// their simplest form: a time more than release.MaxSkew ahead of the writer's
// reads as absent, and a fetch's signatures merged as the store merges them.
// It records every call as "Op" or "Op app".
type fakeFleet struct {
	mu      sync.Mutex
	entries map[string]release.Entry
	backoff schedule.Backoff
	errs    map[string]error // by operation: the error that call returns
	calls   recorder
	events  *recorder
	// during, if set, runs after a call is recorded and before it acts: the
	// moment another pod may write.
	during func(f *fakeFleet, op, arg string)
	// redis is Redis's clock and of the poller's, for ClockOffset; nil: no offset.
	redis, of interface{ Now() time.Time }
}

func newFleet() *fakeFleet {
	return &fakeFleet{entries: map[string]release.Entry{}, errs: map[string]error{}}
}

// ClockOffset is unrecorded: every coordinated load asks.
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

func (f *fakeFleet) call(op, arg string) error {
	f.mu.Lock()
	name := op
	if arg != "" {
		name += " " + arg
	}
	f.calls.add(name)
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

func (f *fakeFleet) setBackoff(b schedule.Backoff) { f.mu.Lock(); defer f.mu.Unlock(); f.backoff = b }

func (f *fakeFleet) setErr(err error, ops ...string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, op := range ops {
		f.errs[op] = err
	}
}

func (f *fakeFleet) entry(app string) release.Entry {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.entries[app]
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
	if release.SameFetch(e, n) { // a write of the same fetch adds its signatures to those shared
		n.Companions = e.Companions.Union(n.Companions)
	}
	changed = changed || !maps.Equal(e.Companions.Map(), n.Companions.Map())
	e.FetchedAt, e.ETag, e.Release, e.History, e.Companions = n.FetchedAt, n.ETag, n.Release, n.History, n.Companions
	f.entries[app] = e
	return true, changed, nil
}

// shareSignature adds the signature text of name to those shared for app,
// as another poller's write of the same fetch does.
func (f *fakeFleet) shareSignature(app, name, text string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	e := f.entries[app]
	e.Companions = e.Companions.Union(release.NewCompanions(map[string]string{name: text}))
	f.entries[app] = e
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
	f.setBackoff(b)
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

type fakeSink struct {
	mu   sync.Mutex
	sets recorder
	last map[string]release.Entry
}

func (s *fakeSink) Set(app string, e release.Entry) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.sets.add(app)
	if s.last == nil {
		s.last = map[string]release.Entry{}
	}
	s.last[app] = e
}

func (s *fakeSink) entry(app string) release.Entry {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.last[app]
}

// fakeObserver records every Observer call, with times as offsets from t0:
// "answer app outcome remaining reset", "fetched app at", "claim won|lost",
// "refused op", "redis_error op", "round mode took until trouble",
// "refreshed app took"; and apart, as every tick or request makes them,
// "offset d", "paced d", "deferred why n", "entry app tag|none|never
// ok|failing n" and "companion outcome".
type fakeObserver struct {
	mu    sync.Mutex
	calls []string
}

// apart are the kinds of call that take("") leaves.
var apart = []string{"offset", "paced", "deferred", "entry", "companion"}

func (o *fakeObserver) add(format string, args ...any) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.calls = append(o.calls, fmt.Sprintf(format, args...))
}

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
	o.add("claim %s", map[bool]string{true: "won", false: "lost"}[won])
}
func (o *fakeObserver) WriteRefused(op poller.Op) { o.add("refused %s", op) }
func (o *fakeObserver) RedisError(op poller.Op)   { o.add("redis_error %s", op) }
func (o *fakeObserver) Round(m poller.Mode, took time.Duration, b schedule.Backoff) {
	o.add("round %s %v %s %d", m, took, since(b.Until), b.Trouble)
}
func (o *fakeObserver) Refreshed(app string, took time.Duration)      { o.add("refreshed %s %v", app, took) }
func (o *fakeObserver) ClockOffset(d time.Duration)                   { o.add("offset %v", d) }
func (o *fakeObserver) Paced(d time.Duration)                         { o.add("paced %v", d) }
func (o *fakeObserver) RefreshesDeferred(why string, n int)           { o.add("deferred %s %d", why, n) }
func (o *fakeObserver) Companion(_, outcome string, _ release.Answer) { o.add("companion %s", outcome) }

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
	o.add("entry %s %s %s", app, tag, state)
}

// take removes and returns the calls of kind, without it; "" takes those
// not kept apart.
func (o *fakeObserver) take(kind string) []string {
	o.mu.Lock()
	defer o.mu.Unlock()
	var taken, left []string
	for _, c := range o.calls {
		k, rest, _ := strings.Cut(c, " ")
		switch {
		case kind == "" && !slices.Contains(apart, k):
			taken = append(taken, c)
		case k == kind:
			taken = append(taken, rest)
		default:
			left = append(left, c)
		}
	}
	o.calls = left
	return taken
}

func (o *fakeObserver) durations(t testing.TB, kind string) []time.Duration {
	t.Helper()
	var out []time.Duration
	for _, c := range o.take(kind) {
		d, err := time.ParseDuration(c)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, d)
	}
	return out
}

func (o *fakeObserver) deferredBy(why string) (n int) {
	o.mu.Lock()
	defer o.mu.Unlock()
	for _, c := range o.calls {
		var k int
		if _, err := fmt.Sscanf(c, "deferred "+why+" %d", &k); err == nil {
			n += k
		}
	}
	return n
}

// harness is a Poller wired to fakes: a fake clock at t0 whose every wait
// passes at once (the code under test never sleeps), the production timing,
// draws of 0.5 (no jitter), and everything the poller does recorded.
type harness struct {
	p      *poller.Poller
	apps   []string
	clock  *fakeclock.Clock
	waits  []time.Duration // every wait asked of the clock
	events *recorder       // the waits, the requests and the fleet's calls, when set
	// afterWait, if set, is called after each wait with the clock's time.
	afterWait func(now time.Time)
	source    *fakeSource
	fleet     *fakeFleet // nil: standalone
	sink      *fakeSink
	obs       *fakeObserver
	logs      *observer.ObservedLogs
	changes   []string // Config.Changes calls, as "app old→new"
}

func tagOf(r *release.Release) string {
	if r == nil {
		return "none"
	}
	return r.Tag
}

// newHarness returns a poller over the apps keys, standalone when fleet is
// nil; opts change its Config before New.
func newHarness(t testing.TB, keys []string, fleet *fakeFleet, coordinate bool, opts ...func(*poller.Config)) *harness {
	t.Helper()
	core, logs := observer.New(zapcore.DebugLevel)
	h := &harness{apps: keys, clock: fakeclock.New(t0), fleet: fleet, sink: &fakeSink{}, obs: &fakeObserver{}, logs: logs}
	h.clock.Skip(-1)
	var mu sync.Mutex
	h.clock.OnAfter(func(d time.Duration, now time.Time) {
		mu.Lock()
		h.waits = append(h.waits, d)
		mu.Unlock()
		h.events.add(fmt.Sprintf("wait %v", d))
		if h.afterWait != nil {
			h.afterWait(now)
		}
	})
	h.source = &fakeSource{clock: h.clock}
	c := poller.Config{
		Apps: apps(keys...), Timing: timing, Source: h.source, Coordinate: coordinate, Sink: h.sink,
		Changes: func(app string, old, new *release.Release) {
			h.changes = append(h.changes, app+" "+tagOf(old)+"→"+tagOf(new))
		},
		Observer: h.obs, Logger: zap.New(core), Clock: h.clock, Rand: func() float64 { return 0.5 },
	}
	if fleet != nil {
		c.Fleet = fleet
	}
	for _, o := range opts {
		o(&c)
	}
	p, err := poller.New(c)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	h.p = p
	return h
}

// withHistory polls the history entry of every app too (release.Entries).
func withHistory(c *poller.Config) { c.Apps = release.Entries(c.Apps) }

func (h *harness) tick(t testing.TB, d time.Duration, answers map[string]release.Answer) {
	t.Helper()
	setClock(t, h.clock, at(d))
	h.source.script = maps.Clone(answers)
	h.p.Tick(context.Background())
}

// ticks ticks every Tick from from to until, GitHub answering answer(d) for
// every app, and calls each(d) after every tick.
func (h *harness) ticks(t testing.TB, from, until time.Duration, answer func(time.Duration) release.Answer, each func(time.Duration)) {
	t.Helper()
	for d := from; d < until; d += timing.Tick {
		setClock(t, h.clock, at(d))
		h.source.script = nil
		if answer != nil {
			a := answer(d)
			h.source.script = all(h.apps, func() release.Answer { return a })
		}
		h.p.Tick(context.Background())
		if each != nil {
			each(d)
		}
	}
}

// roundLine is what a tick's "poll round" log line says, each field of its
// type: mode, fetched, unchanged, failed, rate_limited, backoff, trouble.
type roundLine [7]any

// tickLogs splits the log entries since the last call into the round lines
// and the messages of the warnings.
func (h *harness) tickLogs(t testing.TB) (rounds []roundLine, warns []string, all []observer.LoggedEntry) {
	t.Helper()
	all = h.logs.TakeAll()
	for _, e := range all {
		switch {
		case e.Message == "poll round":
			m := e.ContextMap()
			rounds = append(rounds, roundLine{m["mode"], m["fetched"], m["unchanged"], m["failed"], m["rate_limited"], m["backoff"], m["trouble"]})
		case e.Level == zapcore.WarnLevel:
			warns = append(warns, e.Message)
		}
	}
	return rounds, warns, all
}

func (h *harness) logged(msg string) int { return h.logs.FilterMessage(msg).Len() }

func fields(logs []observer.LoggedEntry, msg string) map[string]any {
	for _, e := range logs {
		if e.Message == msg {
			return e.ContextMap()
		}
	}
	return nil
}

func wantFields(t testing.TB, what string, got, want map[string]any) {
	t.Helper()
	for k, w := range want {
		g, ok := got[k]
		if wt, isTime := w.(time.Time); isTime {
			if gt, _ := g.(time.Time); !gt.Equal(wt) {
				t.Errorf("%s: field %s = %v, want %v", what, k, g, w)
			}
			continue
		}
		if !ok || g != w {
			t.Errorf("%s: field %s = %v, want %v", what, k, g, w)
		}
	}
}

// wantList fails the test, and goes on, unless got is want.
func wantList(t testing.TB, what string, got, want []string) {
	t.Helper()
	if !slices.Equal(got, want) {
		t.Errorf("%s %q, want %q", what, got, want)
	}
}

// wantEq fails the test, and goes on, unless got is want.
func wantEq[T comparable](t testing.TB, what string, got, want T) {
	t.Helper()
	if got != want {
		t.Errorf("%s: got %v, want %v", what, got, want)
	}
}

func mentions(calls []string, s string) []string {
	var out []string
	for _, c := range calls {
		if strings.Contains(c, s) {
			out = append(out, c)
		}
	}
	return out
}
