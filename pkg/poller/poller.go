// Package poller runs the tick loop that asks GitHub about every configured
// app when it is due (poller.md, "One tick"). It keeps every app's state in
// memory and, when given a Fleet, coordinates with the other pollers through
// it: it reads the fleet's state, claims apps, shares what it learns and
// honours the fleet backoff. Without a Fleet, or while the Fleet fails, the
// same rules run from memory alone.
package poller

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"reflect"
	"slices"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/storytold/craft-releases/pkg/clock"
	"github.com/storytold/craft-releases/pkg/outage"
	"github.com/storytold/craft-releases/pkg/release"
	"github.com/storytold/craft-releases/pkg/schedule"
)

// Source asks GitHub about one app.
type Source interface {
	// Latest asks GitHub for app's latest release, revalidating etag when non-empty.
	Latest(ctx context.Context, app release.App, etag string) release.Answer
}

// Fleet is the state the pollers share (redis.md). Every method may fail with
// a Redis error; a refused guarded write is not an error but false.
type Fleet interface {
	// Load reads every listed app's shared entry and the fleet backoff in one pipeline.
	Load(ctx context.Context, apps []string) (map[string]release.Entry, schedule.Backoff, error)
	// LoadApp re-reads one app's entry and the backoff.
	LoadApp(ctx context.Context, app string) (release.Entry, schedule.Backoff, error)
	// Claim is the guarded write on claimed_ms with gap window; false when refused.
	Claim(ctx context.Context, app string, at time.Time, window time.Duration) (bool, error)
	// PutFetch shares a fetch (guarded on fetched_ms, gap 0).
	PutFetch(ctx context.Context, app string, e release.Entry) (bool, error)
	// PublishFetch is PutFetch that also reports whether the write changed
	// the release served (the shared entry had another release, or no
	// fetch): of all the writers of one release, one is told so.
	PublishFetch(ctx context.Context, app string, e release.Entry) (written, changed bool, err error)
	// PutNotModified shares a 304 (guarded on fetched_ms and e.ETag); when refused because
	// the shared entry has no readable fetch, it republishes e whole as a fetch.
	PutNotModified(ctx context.Context, app string, e release.Entry) (bool, error)
	// PutFailure shares a failure (guarded on failed_ms).
	PutFailure(ctx context.Context, app string, e release.Entry) (bool, error)
	// PutBackoff writes the backoff b (1-day TTL); b.Until is never zero.
	PutBackoff(ctx context.Context, b schedule.Backoff) error
	// ClearBackoff deletes the shared backoff only if it is still read, the
	// backoff this poller read last; false when refused (another poller
	// recorded a backoff meanwhile, which stands).
	ClearBackoff(ctx context.Context, read schedule.Backoff) (bool, error)
	// ClockOffset measures how far the poller's clock (the Fleet's, when
	// they share a clock.Corrected) runs ahead of Redis's.
	ClockOffset(ctx context.Context) (time.Duration, error)
}

// Sink receives every change of an app's entry, such as the API's snapshot
// when the poller runs inside the API process.
type Sink interface {
	// Set records app's entry. It is called from the poller's loop, one call
	// at a time, and must not block for long.
	Set(app string, e release.Entry)
}

// Config is what a Poller needs. Source and a positive Timing.Interval and
// Timing.Tick are required; the rest may be left zero.
type Config struct {
	Apps   []release.App   // polled in this order; keys must be distinct
	Timing schedule.Timing // Interval and Tick must be positive
	Source Source

	// Fleet is the shared state; nil runs standalone, with no Redis at all.
	Fleet Fleet
	// Coordinate makes the poller read the fleet's state, claim apps and
	// share the backoff. With a Fleet and Coordinate false the pollers run
	// uncoordinated: nothing is read from the Fleet, but every result is still
	// shared with the guarded writes.
	Coordinate bool

	// QuotaPerHour is GitHub's hourly quota for the token, or 0 when unknown
	// (another API than GitHub's own): with what GitHub's answers say is
	// left, it paces the schedule (schedule.Pace).
	QuotaPerHour float64

	Sink Sink // may be nil
	// Changes, when not nil, is called with app, the release served before
	// and the one served now (either may be nil), each time this poller's
	// own fetch changed the release that is served: with a Fleet, when its
	// write was the one that replaced the shared release (Fleet.PublishFetch),
	// so that the whole fleet calls it once per change; standalone, when the
	// release differs from memory's. A fetch that moves only the fetch time,
	// a 304, a failure, an entry read from the Fleet or written back from
	// memory changes nothing. It is called from the poller's loop, after the
	// Sink, and must not block.
	Changes  func(app string, old, new *release.Release)
	Observer Observer    // nil: none
	Logger   *zap.Logger // nil: no logging
	// Clock is the poller's time (nil: clock.System). A clock.Corrected,
	// shared with the Fleet, is set to Redis's time whenever the two differ
	// by more than release.MaxSkew (measured before every load).
	Clock clock.Clock
	Rand  func() float64 // uniform draws in [0, 1); nil: math/rand/v2
}

// Mode is how a round works, as logged and as told to an Observer.
type Mode string

// The modes of a round.
const (
	Coordinated   Mode = "coordinated"   // reads and writes the Fleet
	Standalone    Mode = "standalone"    // memory only
	Uncoordinated Mode = "uncoordinated" // memory, and writes to the Fleet
)

// Op names a Fleet call, as told to an Observer.
type Op string

// The Fleet calls.
const (
	OpLoad           Op = "load"
	OpLoadApp        Op = "load_app"
	OpClaim          Op = "claim"
	OpPutFetch       Op = "put_fetch"
	OpPutNotModified Op = "put_not_modified"
	OpPutFailure     Op = "put_failure"
	OpPutBackoff     Op = "put_backoff" // writing or clearing the backoff
)

// Observer is told what the poller does, for metrics. Its methods are called
// from the poller's loop, one call at a time, and must not block.
type Observer interface {
	// Answer reports GitHub's answer about app, as the poller classified it,
	// with the quota the answer announced. An answer cut short by
	// cancellation is not reported.
	Answer(app string, a release.Answer)
	// Fetched reports that the last fetch or 304 the poller knows of for app,
	// its own or one read from the Fleet, moved to at.
	Fetched(app string, at time.Time)
	// Claim reports a claim the Fleet took (won) or refused.
	Claim(won bool)
	// WriteRefused reports a guarded write (OpPutFetch, OpPutNotModified or
	// OpPutFailure) that the Fleet refused because it held something newer.
	WriteRefused(op Op)
	// RedisError reports a Fleet call that failed. Errors caused by the
	// cancellation of the poller's context are not reported.
	RedisError(op Op)
	// Round reports the end of a tick not cut short by cancellation: how it
	// ran, how long it took by the poller's Clock, and the backoff the poller
	// holds after it (zero Until: none), whether or not the tick asked GitHub.
	// A round of refreshes (Refresh) that asked GitHub is reported too.
	Round(m Mode, took time.Duration, b schedule.Backoff)
	// Refreshed reports that this poller's fetch satisfied a refresh request
	// for app (schedule.Refreshed), took after the request was made.
	Refreshed(app string, took time.Duration)
	// ClockOffset reports how far the poller's clock ran ahead of the
	// Fleet's (Redis's TIME) when last measured, once a coordinated tick.
	ClockOffset(d time.Duration)
	// Paced reports the effective interval whenever it changes, and once at
	// the start: the configured one, or longer when the quota paces it.
	Paced(interval time.Duration)
	// RefreshesDeferred reports n refresh requests that did not cost a
	// GitHub request at once, and why (Coalesced, AppBudget, FleetBudget).
	RefreshesDeferred(why string, n int)
	// Entry reports app's entry as the poller now holds it, whenever its
	// fetch or its failure changed (the changes a Sink is told of): its own
	// answers and those of other pollers read from the Fleet, so that
	// failures in a row and a lost release are seen per app.
	Entry(app string, e release.Entry)
}

// Poller is the tick loop of one poller process. Create it with New.
type Poller struct {
	apps    []release.App
	keys    []string
	timing  schedule.Timing
	source  Source
	fleet   Fleet
	mode    Mode
	sink    Sink
	changes func(app string, old, new *release.Release)
	obs     Observer
	log     *zap.Logger
	clock   clock.Clock
	rand    func() float64

	loaded     chan struct{}
	loadedOnce sync.Once
	wake       chan struct{} // one pending signal: a refresh was asked for

	// rmu guards refreshes, apart from mu, so that Refresh never waits on a tick.
	rmu       sync.Mutex
	refreshes map[string]release.Refresh // app key → its newest pending request
	coalesced int                        // requests replaced before their fetch, not yet reported

	// mu serialises ticks and guards what follows.
	mu      sync.Mutex
	entries map[string]release.Entry
	backoff schedule.Backoff
	redis   outage.Tracker
	// redisWorked and redisFailed say whether a Redis call of this tick
	// worked, or failed: Redis is back only after a whole tick without an
	// error, so that writes refused while reads work (READONLY after a
	// failover) are one outage, not a warning and a recovery every tick.
	redisWorked, redisFailed bool
	skewed                   bool // the clock was off Redis's by more than release.MaxSkew at the last measure
	quota                    schedule.Quota
	interval                 time.Duration // the effective interval: timing.Interval, or longer when paced
	budgets                  budgets
}

// New returns a Poller for c. It fails when c has no Source, a non-positive
// Interval or Tick, or an app key listed twice.
func New(c Config) (*Poller, error) {
	switch {
	case c.Source == nil:
		return nil, errors.New("new poller: no source")
	case c.Timing.Interval <= 0:
		return nil, fmt.Errorf("new poller: interval %v: must be positive", c.Timing.Interval)
	case c.Timing.Tick <= 0:
		return nil, fmt.Errorf("new poller: tick %v: must be positive", c.Timing.Tick)
	}
	p := &Poller{
		apps:      slices.Clone(c.Apps),
		keys:      make([]string, len(c.Apps)),
		timing:    c.Timing,
		source:    c.Source,
		fleet:     c.Fleet,
		mode:      Standalone,
		sink:      c.Sink,
		changes:   c.Changes,
		obs:       c.Observer,
		log:       c.Logger,
		clock:     clock.Or(c.Clock),
		rand:      c.Rand,
		loaded:    make(chan struct{}),
		wake:      make(chan struct{}, 1),
		refreshes: make(map[string]release.Refresh),
		entries:   make(map[string]release.Entry, len(c.Apps)),
		quota:     schedule.Quota{PerHour: c.QuotaPerHour, Remaining: -1},
		interval:  c.Timing.Interval,
		budgets:   newBudgets(),
	}
	for i, app := range c.Apps {
		if _, dup := p.entries[app.Key]; dup {
			return nil, fmt.Errorf("new poller: app %q listed twice", app.Key)
		}
		p.entries[app.Key] = release.Entry{}
		p.keys[i] = app.Key
	}
	switch {
	case c.Fleet != nil && c.Coordinate:
		p.mode = Coordinated
	case c.Fleet != nil:
		p.mode = Uncoordinated
	}
	if p.log == nil {
		p.log = zap.NewNop()
	}
	if p.obs == nil {
		p.obs = nopObserver{}
	}
	if p.rand == nil {
		p.rand = rand.Float64
	}
	if p.mode != Coordinated {
		p.markLoaded()
	}
	p.repace(p.clock.Now())
	p.obs.Paced(p.interval)
	return p, nil
}

// Loaded returns a channel that is closed once the start-up load from the
// Fleet was tried, whether it worked or not. It is closed from the start when
// the poller does not coordinate, since there is nothing to load.
func (p *Poller) Loaded() <-chan struct{} { return p.loaded }

func (p *Poller) markLoaded() { p.loadedOnce.Do(func() { close(p.loaded) }) }

// Run polls until ctx is cancelled, then returns nil. It first loads the
// fleet's state (when coordinating), waits the start-up jitter, and then ticks
// every Tick ±10 %. While it waits it makes the fetches that refresh
// requests ask for (Refresh), the start-up jitter included.
// GitHub and Redis trouble is logged and retried, never returned. Run starts
// no goroutine; call it once.
func (p *Poller) Run(ctx context.Context) error {
	p.log.Info("poller starting", zap.String("mode", string(p.mode)), zap.Int("apps", len(p.apps)))
	if p.mode == Coordinated {
		p.mu.Lock()
		p.load(ctx)
		p.mu.Unlock()
		p.markLoaded()
	}
	if !p.idle(ctx, p.timing.StartupDelay(p.rand())) {
		return nil
	}
	for {
		start := p.clock.Now()
		p.tick(ctx)
		// Ticks are TICK ±10 % apart from start to start: a round's spacing,
		// GitHub's answers and Redis timeouts do not stretch the period.
		if !p.idle(ctx, max(0, p.timing.TickDelay(p.rand())-p.clock.Now().Sub(start))) {
			return nil
		}
	}
}

// idle waits d, running a round of refreshes whenever one is asked for or
// falls due meanwhile, and reports false when ctx was cancelled first.
func (p *Poller) idle(ctx context.Context, d time.Duration) bool {
	end := p.clock.Now().Add(d)
	var next time.Time // the next refresh attempt; zero: none known
	if p.pendingRefreshes() {
		next = p.clock.Now()
	}
	for {
		if ctx.Err() != nil {
			return false
		}
		wait, refresh := end.Sub(p.clock.Now()), false
		if !next.IsZero() {
			if until := next.Sub(p.clock.Now()); until < wait {
				wait, refresh = max(0, until), true
			}
		}
		select {
		case <-ctx.Done():
			return false
		case <-p.wake:
			refresh = true
		case <-p.clock.After(wait):
		}
		if ctx.Err() != nil {
			return false
		}
		if !refresh {
			return true
		}
		next = p.refreshRound(ctx)
	}
}

// Refresh asks the poller to fetch app soon whatever its freshness, as r
// says (schedule.RefreshAt): a GitHub webhook said its releases changed. A
// request older than the one pending for app, or for an app not configured,
// is ignored. It never blocks, and is safe to call from any goroutine,
// before or while Run runs.
func (p *Poller) Refresh(app string, r release.Refresh) {
	if !slices.Contains(p.keys, app) || r.At.IsZero() {
		return
	}
	p.rmu.Lock()
	if old, ok := p.refreshes[app]; !ok || r.At.After(old.At) {
		if ok {
			p.coalesced++
		}
		p.refreshes[app] = r
	}
	p.rmu.Unlock()
	select {
	case p.wake <- struct{}{}:
	default:
	}
}

func (p *Poller) pendingRefreshes() bool {
	p.rmu.Lock()
	defer p.rmu.Unlock()
	return len(p.refreshes) > 0
}

func (p *Poller) pendingRefresh(app string) (release.Refresh, bool) {
	p.rmu.Lock()
	defer p.rmu.Unlock()
	r, ok := p.refreshes[app]
	return r, ok
}

// dropRefresh forgets app's request r, unless a newer one replaced it.
func (p *Poller) dropRefresh(app string, r release.Refresh) {
	p.rmu.Lock()
	defer p.rmu.Unlock()
	if p.refreshes[app] == r {
		delete(p.refreshes, app)
	}
}

// refreshRound asks GitHub about every app whose refresh request is due
// now (schedule.RefreshAt), in configured order, as a tick asks about due
// apps: re-checked, claimed (a claim made since the attempt's point keeps
// other pollers off), spaced, shared, and under the fleet backoff. It
// forgets the requests that need nothing more, and returns when the next
// pending one falls due (zero: none). Run calls it while it waits.
func (p *Poller) refreshRound(ctx context.Context) (next time.Time) {
	p.mu.Lock()
	defer p.mu.Unlock()

	p.reportCoalesced()
	start := p.clock.Now()
	r := round{mode: p.mode, sum: schedule.Round{Apps: len(p.apps)}, refresh: true}
	stopped := false // by a rate limit or a fleet backoff
	for _, app := range p.apps {
		req, ok := p.pendingRefresh(app.Key)
		if !ok || stopped || p.backoff.Active(p.clock.Now()) || !p.refreshDue(app.Key, req, p.clock.Now()) {
			continue
		}
		r.fetchedAt = time.Time{}
		stopped = p.visit(ctx, app, &r)
		if ctx.Err() != nil {
			return time.Time{}
		}
		if schedule.Refreshed(req, p.entries[app.Key]) && p.entries[app.Key].FetchedAt.Equal(r.fetchedAt) {
			p.obs.Refreshed(app.Key, r.fetchedAt.Sub(req.At))
		}
	}
	if r.asked > 0 {
		p.finish(ctx, start, &r)
	}
	for _, app := range p.apps {
		req, ok := p.pendingRefresh(app.Key)
		if !ok {
			continue
		}
		at, _, held, ok := p.refreshAt(app.Key, req, p.clock.Now())
		if !ok {
			p.dropRefresh(app.Key, req)
			p.unhold(app.Key)
			continue
		}
		if held != "" {
			p.hold(app.Key, req, held, at)
		}
		if p.backoff.Active(at) {
			at = p.backoff.Until
		}
		if next.IsZero() || at.Before(next) {
			next = at
		}
	}
	return next
}

// refreshDue reports whether app's request r asks for a fetch at now, and
// the budgets have room for it.
func (p *Poller) refreshDue(app string, r release.Refresh, now time.Time) bool {
	at, _, _, ok := p.refreshAt(app, r, now)
	return ok && !at.After(now)
}

// tick runs one tick: it reads the fleet's state when coordinating, and unless
// a backoff is active asks GitHub about every due app, shares the results and
// works out the backoff. A cancelled ctx ends the tick early and discards the
// answer in flight.
func (p *Poller) tick(ctx context.Context) {
	p.mu.Lock()
	defer p.mu.Unlock()

	start := p.clock.Now()
	p.redisWorked, p.redisFailed = false, false
	r := round{mode: p.mode, sum: schedule.Round{Apps: len(p.apps)}}
	if r.mode == Coordinated {
		if shared, ok := p.load(ctx); ok {
			p.repair(ctx, shared, &r)
		} else {
			r.mode = Standalone
		}
	}
	p.repace(p.clock.Now())
	if p.backoff.Active(p.clock.Now()) {
		p.log.Debug("backoff active", zap.Time("until", p.backoff.Until))
		if ctx.Err() == nil {
			p.endTick(r.mode, start)
		}
		return
	}
	for _, app := range p.apps {
		if ctx.Err() != nil {
			return
		}
		if p.visit(ctx, app, &r) {
			break
		}
	}
	if ctx.Err() != nil {
		p.logFailures(&r)
		return
	}
	p.finish(ctx, start, &r)
}

// finish ends a round that started at start: it works out the backoff,
// shares it when it changed, logs the round and reports it.
func (p *Poller) finish(ctx context.Context, start time.Time, r *round) {
	now := p.clock.Now()
	// A backoff that another poller set during our round stands: our
	// own round's results must not clear or shorten it.
	if !r.held {
		next := schedule.Next(p.timing, p.backoff, r.sum, now, p.rand())
		if next.Trouble != p.backoff.Trouble || !next.Until.Equal(p.backoff.Until) {
			read := p.backoff
			p.backoff = next
			if r.mode == Coordinated {
				p.shareBackoff(ctx, read, next, r)
			}
		}
	}
	p.logFailures(r)
	p.log.Info("poll round",
		zap.String("mode", string(r.mode)),
		zap.Bool("refresh", r.refresh),
		zap.Int("fetched", r.sum.Fetched),
		zap.Int("unchanged", r.sum.Unchanged),
		zap.Int("failed", r.sum.Failed),
		zap.Bool("rate_limited", r.sum.RateLimited),
		zap.Duration("backoff", max(0, p.backoff.Until.Sub(now))),
		zap.Int("trouble", p.backoff.Trouble),
	)
	p.endTick(r.mode, start)
}

// endTick ends a tick not cut short by cancellation: an outage of Redis ends
// once a whole tick used Redis without an error, and the Observer hears of
// the round.
func (p *Poller) endTick(m Mode, start time.Time) {
	if p.redisWorked && !p.redisFailed {
		p.redis.Up(p.log, p.clock.Now(), "redis is back")
	}
	p.obs.Round(m, p.clock.Now().Sub(start), p.backoff)
}

// shareBackoff shares the backoff next that follows a round, replacing read,
// the one this poller read from the fleet. Clearing is guarded: a backoff
// that another poller wrote since our read stands.
func (p *Poller) shareBackoff(ctx context.Context, read, next schedule.Backoff, r *round) {
	start := p.clock.Now()
	var err error
	if next.Until.IsZero() {
		var cleared bool
		if cleared, err = p.fleet.ClearBackoff(ctx, read); err == nil && !cleared {
			p.log.Debug("shared backoff changed since read, left standing")
		}
	} else {
		err = p.fleet.PutBackoff(ctx, next)
	}
	if err != nil {
		p.redisDown(ctx, OpPutBackoff, err, start)
		r.mode = Standalone
		return
	}
	p.redisUp()
}

// repair writes back from memory, guarded as usual and without asking
// GitHub, every app whose shared entry, as just read, has no fetch or an
// older one than memory holds: Redis was flushed, a key expired, or a write
// was lost in a failover (redis.md, "Republishing after a loss"). Each entry
// keeps its own fetch time, so nothing looks fresher than it is. A Redis
// error stops the repair and makes the round standalone.
func (p *Poller) repair(ctx context.Context, shared map[string]release.Entry, r *round) {
	repaired := 0
	for _, key := range p.keys {
		mine := p.entries[key]
		// In milliseconds, as Redis keeps times: our own fetch, read back,
		// is not older than memory.
		if !mine.Fetched() || shared[key].Fetched() && shared[key].FetchedAt.UnixMilli() >= mine.FetchedAt.UnixMilli() {
			continue
		}
		written, ok := p.put(ctx, OpPutFetch, p.fleet.PutFetch, key, mine, r)
		if !ok {
			break
		}
		if written {
			repaired++
		}
	}
	if repaired > 0 {
		p.log.Info("redis entries written back from memory", zap.Int("apps", repaired))
	}
}

// round is the state of one tick's round of requests.
type round struct {
	mode   Mode
	sum    schedule.Round
	asked  int  // requests made so far
	spaced bool // the spacing after the last request was waited already
	held   bool // stopped by a fleet backoff that appeared mid-round

	failures []failure // the failed requests, logged at the end of the round

	refresh   bool      // a round of refresh requests: RefreshAt decides, not Due
	fetchedAt time.Time // the fetch time of the last fetch or 304 of the round
}

// failure is one failed GitHub request of a round.
type failure struct {
	app release.App
	n   int // failures in a row
	err error
}

// logFailures logs the round's failed requests: one warning each, with the
// app and its repository; but when every request of a round that asked
// several apps failed (GitHub down or unreachable, such as on a first run
// without network), one line that says so, with the first error, how many
// apps have no release yet and when the poller retries, instead of a wall
// of warnings that differ only by app.
func (p *Poller) logFailures(r *round) {
	all := len(r.failures) >= 2 && r.sum.Fetched == 0 && r.sum.Unchanged == 0 && !r.sum.RateLimited
	if !all {
		for _, f := range r.failures {
			p.log.Warn("github request failed", zap.String("app", f.app.Key), zap.String("repo", f.app.Repo),
				zap.Int("failures", f.n), zap.NamedError("err", f.err))
		}
		r.failures = nil
		return
	}
	none := 0
	for _, e := range p.entries {
		if !e.Fetched() {
			none++
		}
	}
	msg := "every github request failed, serving the last releases fetched"
	if none == len(p.entries) {
		msg = "every github request failed, no app has a release yet"
	}
	p.log.Warn(msg, zap.Int("failed", len(r.failures)), zap.Int("no_release_yet", none),
		zap.NamedError("err", r.failures[0].err), zap.Duration("retry_in", max(0, p.backoff.Until.Sub(p.clock.Now()))))
	r.failures = nil
}

// visit asks GitHub about app if it is due, and records what happened.
// It reports whether the round must stop.
func (p *Poller) visit(ctx context.Context, app release.App, r *round) (stop bool) {
	if !p.wanted(app.Key, r, p.clock.Now()) {
		return false
	}
	// The spacing comes before the re-check, so that a backoff another poller
	// wrote meanwhile is seen and the claim is stamped when the request starts.
	if r.asked > 0 && !r.spaced {
		if !p.sleep(ctx, p.timing.Spacing) {
			return true
		}
		r.spaced = true
	}
	if r.mode == Coordinated {
		ask, stop := p.recheck(ctx, app.Key, r)
		if !ask {
			return stop
		}
	}
	r.asked++
	r.spaced = false
	if r.refresh {
		p.spend(app.Key, p.clock.Now())
		p.unhold(app.Key)
	}

	e := p.entries[app.Key]
	start := p.clock.Now()
	a := p.source.Latest(ctx, app, e.ETag)
	if ctx.Err() != nil {
		// An answer cut short by shutdown says nothing about GitHub.
		return true
	}
	now := p.clock.Now()
	p.log.Debug("github answer", zap.String("app", app.Key), zap.String("status", a.Outcome.String()),
		zap.Duration("took", now.Sub(start)))

	missing := a.Outcome == release.NotFound
	if missing {
		a = p.notFound(app, e, a, now)
	}
	if a.Outcome == release.NotModified && e.ETag == "" {
		// We sent no If-None-Match, so this 304 confirms nothing we hold.
		// The quota it announced stays true.
		a.Outcome, a.Err = release.Failed, errors.New("not modified without an etag")
	}
	p.obs.Answer(app.Key, a)
	p.learnQuota(a, now)
	next := e
	switch a.Outcome {
	case release.Fetched:
		r.sum.Fetched++
		next.FetchedAt, next.ETag, next.Release = now, a.ETag, a.Release
		r.fetchedAt = now
	case release.NotModified:
		r.sum.Unchanged++
		next.FetchedAt = now
		r.fetchedAt = now
	case release.RateLimited:
		r.sum.RateLimited, r.sum.RetryAt = true, a.RetryAt
		p.logFailures(r)
		p.log.Warn("github rate limit", zap.String("app", app.Key), zap.String("repo", app.Repo),
			zap.Time("retry_at", a.RetryAt), zap.NamedError("err", a.Err))
		return true
	default:
		r.sum.Failed++
		n := 1
		if e.Failing() {
			n = max(e.Failures, 1)
			if n < math.MaxInt {
				n++
			}
		}
		next.FailedAt, next.Failures = now, n
		next.NotFoundSince, next.NotFound = notFoundRun(e, missing, now)
		r.failures = append(r.failures, failure{app: app, n: n, err: a.Err})
	}
	changed := p.share(ctx, app.Key, a.Outcome, next, r)
	if p.fleet == nil && a.Outcome == release.Fetched {
		changed = !e.Fetched() || !reflect.DeepEqual(e.Release, a.Release)
	}
	// Kept even when the shared write lost: memory is merged, not replaced.
	p.merge(app.Key, next)
	if changed && p.changes != nil {
		p.changes(app.Key, e.Release, a.Release)
	}
	return false
}

// recheck re-reads app and the backoff from the fleet and claims app. It
// reports whether to ask GitHub about app, and whether the round must stop.
// A Redis error makes the rest of the round standalone, and app is still asked.
func (p *Poller) recheck(ctx context.Context, key string, r *round) (ask, stop bool) {
	start := p.clock.Now()
	shared, b, err := p.fleet.LoadApp(ctx, key)
	if err != nil {
		p.redisDown(ctx, OpLoadApp, err, start)
		r.mode = Standalone
		return true, false
	}
	p.redisUp()
	p.mergeShared(key, shared)
	p.backoff = b
	now := p.clock.Now()
	if b.Active(now) {
		r.held = true
		return false, true
	}
	if !p.wanted(key, r, now) {
		return false, false
	}
	window := p.timing.ClaimWindow()
	if r.refresh {
		// Only a claim made since the attempt's point keeps us off: one made
		// before it asked GitHub too early to answer the request.
		req, _ := p.pendingRefresh(key)
		_, point, _, _ := p.refreshAt(key, req, now)
		window = min(window, now.Sub(point)+time.Millisecond)
	}
	won, err := p.fleet.Claim(ctx, key, now, window)
	if err != nil {
		p.redisDown(ctx, OpClaim, err, now)
		r.mode = Standalone
		return true, false
	}
	p.redisUp()
	p.obs.Claim(won)
	if !won {
		p.log.Debug("claim refused", zap.String("app", key))
		if r.refresh {
			// Another poller asks for this attempt; wait for its claim to lapse
			// (or its fetch to arrive) before asking ourselves. Its claim,
			// which the read before ours missed, counts against the budgets.
			p.spend(key, now)
			p.merge(key, release.Entry{ClaimedAt: now})
		}
	}
	return won, false
}

// wanted reports whether to ask GitHub about app in round r at now: when it
// is due or, in a round of refreshes, when its request asks for it.
func (p *Poller) wanted(key string, r *round, now time.Time) bool {
	if !r.refresh {
		return schedule.Due(p.paced(), p.entries[key], now)
	}
	req, ok := p.pendingRefresh(key)
	return ok && p.refreshDue(key, req, now)
}

// share writes an answer's outcome to the fleet, unless the round is
// standalone, and reports whether its fetch changed the shared release
// (Fleet.PublishFetch).
func (p *Poller) share(ctx context.Context, key string, o release.Outcome, e release.Entry, r *round) (changed bool) {
	if r.mode == Standalone {
		return false
	}
	put, op := p.fleet.PutFailure, OpPutFailure
	switch o {
	case release.Fetched:
		put, op = func(ctx context.Context, key string, e release.Entry) (written bool, err error) {
			written, changed, err = p.fleet.PublishFetch(ctx, key, e)
			return written, err
		}, OpPutFetch
	case release.NotModified:
		put, op = p.fleet.PutNotModified, OpPutNotModified
	}
	if written, ok := p.put(ctx, op, put, key, e, r); ok && !written {
		p.log.Debug("shared write refused", zap.String("app", key), zap.String("status", o.String()))
	}
	return changed
}

// put shares app's entry e with the guarded write put, op for the Observer.
// It reports whether the write went through, and ok false for a Redis
// error, which makes the rest of the round standalone.
func (p *Poller) put(ctx context.Context, op Op, put func(context.Context, string, release.Entry) (bool, error),
	key string, e release.Entry, r *round) (written, ok bool) {
	start := p.clock.Now()
	written, err := put(ctx, key, e)
	if err != nil {
		p.redisDown(ctx, op, err, start)
		r.mode = Standalone
		return false, false
	}
	p.redisUp()
	if !written {
		p.obs.WriteRefused(op)
	}
	return written, true
}

// load merges every app's shared entry into memory and takes the fleet's
// backoff as ours. It returns the shared entries as read, and whether the
// read worked.
func (p *Poller) load(ctx context.Context) (map[string]release.Entry, bool) {
	p.tellTime(ctx)
	start := p.clock.Now()
	shared, b, err := p.fleet.Load(ctx, p.keys)
	if err != nil {
		p.redisDown(ctx, OpLoad, err, start)
		return nil, false
	}
	p.redisUp()
	for _, key := range p.keys {
		if e, ok := shared[key]; ok {
			p.mergeShared(key, e)
		}
	}
	p.backoff = b
	return shared, true
}

// merge merges e, an answer of GitHub's or an entry read from the Fleet, into
// app's entry in memory, and passes the result to the Sink when the fetch or
// the failure changed. It is the poller's one application of the merge law
// (release.Entry.Merge), and it must stay one: memory outlives what Redis
// loses (repair writes it back), and standalone it is the only state there
// is. The guarded writes apply the same law to what Redis holds, and the
// snapshot to what is served.
func (p *Poller) merge(key string, e release.Entry) {
	old := p.entries[key]
	merged := old.Merge(e)
	p.entries[key] = merged
	// Merge replaces each part only along with its time, so comparing the
	// times is enough to see a change.
	fetched := !merged.FetchedAt.Equal(old.FetchedAt)
	if fetched {
		p.obs.Fetched(key, merged.FetchedAt)
	}
	if !fetched && merged.FailedAt.Equal(old.FailedAt) {
		return
	}
	p.obs.Entry(key, merged)
	if p.sink != nil {
		p.sink.Set(key, merged)
	}
}

// redisDown notes a Redis failure of op, a call that started at start (see
// outage.Tracker). Errors caused by our own cancellation are not an outage.
func (p *Poller) redisDown(ctx context.Context, op Op, err error, start time.Time) {
	if ctx.Err() != nil {
		return
	}
	p.obs.RedisError(op)
	p.redisFailed = true
	p.redis.Down(p.log, start, p.clock.Now(), "redis unavailable", zap.NamedError("err", err))
}

// redisUp notes that a Redis call worked; the outage, if any, ends with
// the tick (endTick).
func (p *Poller) redisUp() { p.redisWorked = true }

// sleep waits d, and reports false when ctx was cancelled first.
func (p *Poller) sleep(ctx context.Context, d time.Duration) bool {
	if ctx.Err() != nil {
		return false
	}
	select {
	case <-ctx.Done():
		return false
	case <-p.clock.After(d):
		// Both may be ready at once; shutdown wins.
		return ctx.Err() == nil
	}
}

// nopObserver is the Observer of a Config that has none.
type nopObserver struct{}

func (nopObserver) Answer(string, release.Answer)               {}
func (nopObserver) Fetched(string, time.Time)                   {}
func (nopObserver) Claim(bool)                                  {}
func (nopObserver) WriteRefused(Op)                             {}
func (nopObserver) RedisError(Op)                               {}
func (nopObserver) Round(Mode, time.Duration, schedule.Backoff) {}
func (nopObserver) Refreshed(string, time.Duration)             {}
func (nopObserver) ClockOffset(time.Duration)                   {}
func (nopObserver) Paced(time.Duration)                         {}
func (nopObserver) RefreshesDeferred(string, int)               {}
func (nopObserver) Entry(string, release.Entry)                 {}
