// Package poller runs the tick loop that asks GitHub about every configured
// app when it is due (docs/scheduling.md, "One tick"). It keeps every app's state in
// memory and, when given a Fleet, coordinates with the other pollers through
// it: it reads the fleet's state, claims apps, shares what it learns and
// honours the fleet backoff. Without a Fleet, or while the Fleet fails, the
// same rules run from memory alone.
package poller

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/storytold/craft-releases/pkg/clock"
	"github.com/storytold/craft-releases/pkg/minisign"
	"github.com/storytold/craft-releases/pkg/release"
	"github.com/storytold/craft-releases/pkg/schedule"
)

// Source asks GitHub about one app.
type Source interface {
	// Latest asks GitHub for app's latest release, revalidating etag when non-empty.
	Latest(ctx context.Context, app release.App, etag string) release.Answer
}

// Shared is the state the pollers share (docs/redis.md). Every method may fail with
// a Redis error; a refused guarded write is not an error but false.
type Shared interface {
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
	// fetch) or its companions: of all the writers of one release, or of
	// one companion, one is told so.
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
	Fleet Shared
	// Coordinate makes the poller read the fleet's state, claim apps and
	// share the backoff. With a Fleet and Coordinate false the pollers run
	// uncoordinated: nothing is read from the Fleet, but every result is still
	// shared with the guarded writes.
	Coordinate bool
	// ReadTimeout, when positive, bounds each read of the fleet's state as
	// a whole: the clock's measure and the load share one deadline, so that
	// a Redis gone silent costs a tick one timeout, not one a call. It is
	// the Fleet's call timeout (docs/redis.md, "Clients and timeouts").
	ReadTimeout time.Duration

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
	// release differs from memory's. It is also called, with the release
	// served as both, when the companions this poller fetched for it change
	// what is served: with a Fleet, when its write added them
	// (Fleet.PublishFetch); standalone, whenever it keeps one. A fetch that
	// moves only the fetch time, a 304, a failure, an entry read from the
	// Fleet or written back from memory changes nothing. It is called from
	// the poller's loop, after the Sink, and must not block.
	Changes  func(app string, old, new *release.Release)
	Observer Observer    // nil: none
	Logger   *zap.Logger // nil: no logging
	// Clock is the poller's time (nil: clock.System). A clock.Corrected,
	// shared with the Fleet, is set to Redis's time whenever the two differ
	// by more than release.MaxSkew (measured before every load).
	Clock clock.Clock
	Rand  func() float64 // uniform draws in [0, 1); nil: math/rand/v2

	// Companions, when not nil, lists the companion assets of a release to
	// fetch and keep with it (companion.Names), each bounded and checked by
	// pkg/updates/companion; the Source must then be a CompanionSource too.
	// nil: none.
	Companions func(*release.Release) []string
	// PublicKeys are the apps' minisign public keys, by app key: a
	// signature by another key is refused (CRAFT_APPS_RELEASE_TAURI_PUBKEYS).
	// An app without one keeps any well-formed signature.
	PublicKeys map[string]minisign.PublicKey
}

// Poller is the tick loop of one poller process. Create it with New.
type Poller struct {
	apps    []release.App
	keys    []string
	timing  schedule.Timing
	source  Source
	fleet   Shared
	reads   time.Duration // Config.ReadTimeout
	mode    Mode
	sink    Sink
	changes func(app string, old, new *release.Release)
	obs     Observer
	log     *zap.Logger
	clock   clock.Clock // the fleet's time, which entries are stamped and judged by
	timer   clock.Clock // clock.Base(clock): what waits and elapsed times are measured on
	rand    func() float64

	companionsOf func(*release.Release) []string
	csrc         CompanionSource
	pubkeys      map[string]minisign.PublicKey

	loaded     chan struct{}
	loadedOnce sync.Once
	refreshes  *refreshes // its own lock: Refresh never waits on a round
	decided    decided    // its own lock too (SetDecided)
	merged     sync.Map   // entry key → release.Entry as merge last left it, for Entry

	// mu serialises rounds and guards what follows.
	mu      sync.Mutex
	entries map[string]release.Entry
	refs    map[string]companionRefs // by app: the asset ids of its last 200's release
	// histRefs are, by history entry, the asset ids of the releases of its
	// last 200, by tag.
	histRefs map[string]map[string]companionRefs
	backoff  schedule.Backoff
	redis    redisHealth
	skewed   bool // the clock was off Redis's by more than release.MaxSkew at the last measure
	pace     pace
	budgets  *budgets
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
		reads:     c.ReadTimeout,
		mode:      Standalone,
		sink:      c.Sink,
		changes:   c.Changes,
		obs:       c.Observer,
		log:       c.Logger,
		clock:     clock.Or(c.Clock),
		timer:     clock.Base(c.Clock),
		rand:      c.Rand,
		loaded:    make(chan struct{}),
		refreshes: newRefreshes(),
		entries:   make(map[string]release.Entry, len(c.Apps)),
		refs:      make(map[string]companionRefs),
		histRefs:  make(map[string]map[string]companionRefs),

		companionsOf: c.Companions,
		pubkeys:      c.PublicKeys,
	}
	if c.Companions != nil {
		csrc, ok := c.Source.(CompanionSource)
		if !ok {
			return nil, errNoCompanionSource
		}
		p.csrc = csrc
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
	p.redis = redisHealth{log: p.log, obs: p.obs, timer: p.timer}
	p.budgets = newBudgets(p.timing, p.log, p.obs)
	polled, _ := p.polledApps()
	p.pace = pace{timing: p.timing, apps: len(polled), quota: schedule.Quota{PerHour: c.QuotaPerHour, Remaining: -1},
		interval: p.timing.Interval, log: p.log, obs: p.obs}
	p.pace.update(p.clock.Now())
	p.obs.Paced(p.pace.interval)
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
		_, keys := p.polledApps()
		p.load(ctx, keys)
		p.mu.Unlock()
		p.markLoaded()
	}
	if !p.idle(ctx, p.timing.StartupDelay(p.rand())) {
		return nil
	}
	for {
		start := p.timer.Now()
		p.tick(ctx)
		// Ticks are TICK ±10 % apart from start to start: a round's spacing,
		// GitHub's answers and Redis timeouts do not stretch the period,
		// and a correction of the fleet's clock during the tick does not
		// move it.
		if !p.idle(ctx, max(0, p.timing.TickDelay(p.rand())-p.timer.Now().Sub(start))) {
			return nil
		}
	}
}

// idle waits d, running a round of refreshes whenever one is asked for or
// falls due meanwhile, and reports false when ctx was cancelled first.
func (p *Poller) idle(ctx context.Context, d time.Duration) bool {
	end := p.timer.Now().Add(d)
	var next time.Time // the next refresh attempt, by the fleet's clock; zero: none known
	if p.refreshes.any() {
		next = p.clock.Now()
	}
	for {
		if ctx.Err() != nil {
			return false
		}
		wait, refresh := end.Sub(p.timer.Now()), false
		if !next.IsZero() {
			if until := next.Sub(p.clock.Now()); until < wait {
				wait, refresh = max(0, until), true
			}
		}
		select {
		case <-ctx.Done():
			return false
		case <-p.refreshes.wake:
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

// load merges the shared entry of every app of keys (those polled) into
// memory and takes the fleet's backoff as ours. It returns the shared
// entries as read, and whether the read worked. The clock's measure and the load end by one deadline,
// Config.ReadTimeout from now.
func (p *Poller) load(ctx context.Context, keys []string) (map[string]release.Entry, bool) {
	reads, cancel := ctx, context.CancelFunc(func() {})
	if p.reads > 0 {
		reads, cancel = context.WithTimeout(ctx, p.reads)
	}
	defer cancel()
	start := p.timer.Now()
	p.tellTime(reads)
	shared, b, err := p.fleet.Load(reads, keys)
	if err != nil {
		p.redis.down(ctx, OpLoad, err, start)
		return nil, false
	}
	p.redis.up()
	for _, key := range keys {
		if e, ok := shared[key]; ok {
			p.mergeShared(key, e)
		}
	}
	p.backoff = b
	return shared, true
}

// Entry returns the entry of key (release.Entries) as this poller knows it
// now; the zero Entry for a key it never merged. It never waits on a round,
// and is safe to call from any goroutine.
func (p *Poller) Entry(key string) release.Entry {
	e, _ := p.merged.Load(key)
	entry, _ := e.(release.Entry)
	return entry
}

// merge merges e, an answer of GitHub's or an entry read from the Fleet, into
// app's entry in memory, judged at the fleet's time, and passes the result to
// the Sink when the fetch or the failure changed. It is the poller's one application of the merge law
// (release.Entry.Merge), and it must stay one: memory outlives what Redis
// loses (repair writes it back), and standalone it is the only state there
// is. The guarded writes apply the same law to what Redis holds, and the
// snapshot to what is served.
func (p *Poller) merge(key string, e release.Entry) {
	old := p.entries[key]
	merged := old.Merge(e, p.clock.Now())
	p.entries[key] = merged
	p.merged.Store(key, merged)
	// Merge replaces each part only along with its time, or adds to the
	// companions of the same fetch, so comparing the times and the
	// companions is enough to see a change.
	fetched := !merged.FetchedAt.Equal(old.FetchedAt)
	if fetched {
		p.obs.Fetched(key, merged.FetchedAt)
	}
	if !fetched && merged.FailedAt.Equal(old.FailedAt) && merged.Companions == old.Companions && merged.History == old.History {
		return
	}
	p.obs.Entry(key, merged)
	if p.sink != nil {
		p.sink.Set(key, merged)
	}
}

// mergeShared merges e, app's entry as read from the Fleet, first counting
// against the refresh budgets a claim in it that a peer made, when a
// refresh request for app is pending: most likely the peer's fetch for an
// earlier request, and one the budgets must see whatever request it was
// for. A claim from long ago, spent at its time, leaves the budgets as they
// were.
func (p *Poller) mergeShared(key string, e release.Entry) {
	if _, ok := p.refreshes.get(key); ok {
		p.budgets.spend(key, e.ClaimedAt)
	}
	p.merge(key, e)
}
