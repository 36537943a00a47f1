// Package hydrate keeps an API pod's in-memory snapshot up to date from the
// app hashes the pollers share in Redis, and from the meta hash of renames
// and notices when asked to (WithMeta). It reads them with rueidis
// server-assisted client-side caching: Redis pushes an invalidation the moment
// a hash changes and the Hydrator re-reads that hash at once. Where the server
// refuses client tracking it re-reads every app each second instead. It never
// writes to Redis. See docs/redis.md, "How API pods read".
package hydrate

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/rueidis"
	"go.uber.org/zap"

	"github.com/storytold/craft-releases/pkg/clock"
	"github.com/storytold/craft-releases/pkg/logsafe"
	"github.com/storytold/craft-releases/pkg/outage"
	"github.com/storytold/craft-releases/pkg/redis"
	"github.com/storytold/craft-releases/pkg/redis/store"
	"github.com/storytold/craft-releases/pkg/release"
)

const (
	defaultInterval  = 5 * time.Second // safety-net re-read while Redis tracks our reads
	fallbackInterval = time.Second     // re-read where Redis refuses client tracking
	cacheTTL         = time.Minute     // bounds how long a lost invalidation can go unnoticed
	minRetry         = 200 * time.Millisecond
	maxRetry         = time.Second // as often as the fallback re-reads: a pod that waited longer served a failover late
)

// Sink receives what the Hydrator read. SetAll is called from Run's goroutine
// only, with a map it may keep, holding each app's entry as read (the zero
// Entry for an absent or unreadable hash) and Redis's time at the read; it
// merges them under the merge law judged at that time (release.Entry.Merge),
// so that nothing moves back in time, and reports whether any entry moved
// forward (snapshot.Snapshot).
type Sink interface {
	SetAll(entries map[string]release.Entry, now time.Time) bool
}

// MetaSink receives the renames and notices. SetMeta is called from Run's
// goroutine only, each time a meta hash newer than the last one given is
// read; an absent, unreadable or older hash is never given, so what the sink
// holds never goes back in time.
type MetaSink interface {
	SetMeta(release.Bulletin)
}

// Option changes a default of New.
type Option func(*Hydrator)

// WithClock gives the Hydrator the clock of its Ready timeout, its re-reads
// and its backoff; clock.System unless set.
func WithClock(c clock.Clock) Option {
	return func(h *Hydrator) { h.clock = clock.Or(c) }
}

// WithMeta makes the Hydrator read the meta hash (store.MetaKey) with the
// app hashes, tracked as they are, and pass each newer meta to
// sink. The first load then includes the meta hash. A nil sink reads nothing
// more.
func WithMeta(sink MetaSink) Option {
	return func(h *Hydrator) { h.meta = sink }
}

// Stats is a copy of what a Hydrator's metrics show, at one moment.
type Stats struct {
	Connected     bool   // the last exchange with Redis worked
	Fallback      bool   // Redis refused client tracking: every app is re-read each second
	Reads         uint64 // hashes read (the apps', and the meta hash with WithMeta), from Redis or found unchanged
	CacheHits     uint64 // hash reads that Redis's tracking showed unchanged, answered without a round trip
	Missing       uint64 // app reads that found nothing usable: flushed, expired, another format version, not a hash
	Failures      uint64 // connection attempts and reads that failed
	Invalidations uint64 // invalidations received, including those for a flush or a lost connection
	Hydrations    uint64 // reads that moved an entry of the sink forward
	Metas         uint64 // calls to the meta sink's SetMeta
	Refused       uint64 // app reads refused (store.DecodeApp's error): poisoned, oversized or future-dated
	// ClockOffset is how far the pod's clock ran ahead of Redis's at the
	// last full read; beyond release.MaxSkew the pod tells time by Redis.
	ClockOffset time.Duration
}

// Hydrator feeds a Sink from the app hashes in Redis. Its methods other than
// Run are safe for concurrent use.
type Hydrator struct {
	redisOpt redis.Options
	apps     []release.App
	keys     []string       // Redis key of apps[i], then the meta key when meta is set
	index    map[string]int // Redis key → index in keys
	sink     Sink
	meta     MetaSink // nil: the meta hash is not read
	log      *zap.Logger
	clock    clock.Clock
	fleet    *clock.Corrected // clock set to Redis's time, to judge hashes by
	interval time.Duration
	refusals *store.Refusals

	loaded chan struct{}
	wake   chan struct{} // one pending signal: pending has something to read

	mu       sync.Mutex
	pending  []bool // keys[i] must be re-read
	fallback atomic.Bool

	// Owned by Run's goroutine.
	recheck []bool    // keys[i] was not read, refused or dated ahead since its probe: read it whatever Redis tracks
	metaAt  time.Time // read time of the last meta passed to the meta sink
	started time.Time
	outage  outage.Tracker

	connected     atomic.Bool
	refusal       atomic.Pointer[error] // of the last failed exchange, when Redis refused the pod
	reads         atomic.Uint64
	cacheHits     atomic.Uint64
	missing       atomic.Uint64
	failures      atomic.Uint64
	invalidations atomic.Uint64
	hydrations    atomic.Uint64
	metas         atomic.Uint64
	refused       atomic.Uint64
	offset        atomic.Int64 // ns, the last ClockOffset
}

// New returns a Hydrator for the given apps that reads the Redis of o and
// feeds sink. It does not connect: Run does, so a pod starts whatever state
// Redis is in. It fails only on a nil sink. A nil log discards logs.
func New(o redis.Options, apps []release.App, sink Sink, log *zap.Logger, opts ...Option) (*Hydrator, error) {
	if sink == nil {
		return nil, errors.New("new hydrator: nil sink")
	}
	if log == nil {
		log = zap.NewNop()
	}
	h := &Hydrator{
		redisOpt: o,
		apps:     slices.Clone(apps),
		keys:     make([]string, len(apps)),
		index:    make(map[string]int, len(apps)),
		sink:     sink,
		log:      log,
		clock:    clock.System,
		interval: defaultInterval,
		loaded:   make(chan struct{}),
		wake:     make(chan struct{}, 1),
		pending:  make([]bool, len(apps)),
		recheck:  make([]bool, len(apps)),
	}
	for i, a := range apps {
		h.keys[i] = store.AppKey(a.Key)
		h.index[h.keys[i]] = i
	}
	for _, o := range opts {
		o(h)
	}
	h.fleet = clock.NewCorrected(h.clock)
	h.refusals = store.NewRefusals(log, func(string) { h.refused.Add(1) })
	if h.meta != nil {
		h.index[store.MetaKey] = len(h.keys)
		h.keys = append(h.keys, store.MetaKey)
		h.pending = append(h.pending, false)
		h.recheck = append(h.recheck, false)
	}
	return h, nil
}

// Loaded returns a channel closed once every app (and, with WithMeta, the
// meta hash) was read from Redis and the sinks were given what they found.
// It stays open while Redis cannot be read.
func (h *Hydrator) Loaded() <-chan struct{} { return h.loaded }

// Refusal returns the error of the last failed exchange with Redis when
// Redis refused the pod for its configuration: the credentials (WRONGPASS,
// NOAUTH, another authentication error) or the user's permissions (NOPERM),
// the last such refusal since an exchange last worked, whatever outage
// (a refused connection, a timeout, a server that went away) came after it.
// It returns nil once an exchange works, and when Redis never refused the pod.
func (h *Hydrator) Refusal() error {
	if err := h.refusal.Load(); err != nil {
		return *err
	}
	return nil
}

// Ready calls open once the pod may take traffic: after the first load, or
// after timeout without one, so that a Redis outage (refused connections,
// timeouts) never takes every pod out of the Service. A pod that Redis
// refuses for its configuration at the timeout (Refusal: a wrong password,
// missing permissions) would serve every app empty for good, so it stays
// unready instead, says why in one error line, and opens only after its
// first load, once the configuration is fixed: an outage that follows the
// refusal does not open it, so a rollout with a wrong password stays stalled
// through a Redis restart. Ready returns when it called open or when ctx is
// done.
func (h *Hydrator) Ready(ctx context.Context, timeout time.Duration, open func()) {
	select {
	case <-h.loaded:
	case <-h.clock.After(timeout):
		err := h.Refusal()
		if err == nil {
			h.log.Warn("ready without a load from redis", zap.Duration("took", timeout))
			open()
			return
		}
		h.log.Error("redis refuses this pod, staying unready", h.errField(err), zap.Duration("took", timeout))
		select {
		case <-h.loaded:
		case <-ctx.Done():
			return
		}
	case <-ctx.Done():
		return
	}
	h.log.Info("ready", zap.String("after", "first load"))
	open()
}

// Stats returns what the Hydrator's metrics show.
func (h *Hydrator) Stats() Stats {
	return Stats{
		Connected:     h.connected.Load(),
		Fallback:      h.fallback.Load(),
		Reads:         h.reads.Load(),
		CacheHits:     h.cacheHits.Load(),
		Missing:       h.missing.Load(),
		Failures:      h.failures.Load(),
		Invalidations: h.invalidations.Load(),
		Hydrations:    h.hydrations.Load(),
		Metas:         h.metas.Load(),
		Refused:       h.refused.Load(),
		ClockOffset:   time.Duration(h.offset.Load()),
	}
}

// Run loads every app, closes Loaded, then keeps the sink current until ctx is
// cancelled: it re-reads a hash as soon as Redis invalidates it, re-reads
// every app after a flush or a lost connection, and every few seconds as a
// safety net. The sink merges what was read, so an absent, unreadable or
// older hash changes nothing. Redis being down,
// silent or refusing client tracking never ends Run: it retries, with backoff.
// On cancellation Run closes its Redis client and returns nil. Run must be
// called once.
func (h *Hydrator) Run(ctx context.Context) error {
	h.started = h.clock.Now()
	for {
		c, err := h.connect(ctx)
		if err != nil {
			return nil
		}
		err = h.serve(ctx, c)
		c.Close()
		if err == nil {
			return nil
		}
		// The server refused client tracking on a reconnect.
		h.fallBack(err)
	}
}

// connect builds a rueidis client, retrying until it works or ctx is done.
// rueidis dials at construction and reports a refused CLIENT TRACKING (or a
// server without RESP3) as rueidis.ErrNoCache, which switches to the fallback.
func (h *Hydrator) connect(ctx context.Context) (rueidis.Client, error) {
	var retry backoff
	for {
		var invalidated func([]rueidis.RedisMessage)
		if !h.fallback.Load() {
			invalidated = h.invalidated
		}
		c, err := redis.NewClient(ctx, h.redisOpt, invalidated)
		switch {
		case err == nil:
			return c, nil
		case ctx.Err() != nil:
			return nil, ctx.Err()
		case errors.Is(err, rueidis.ErrNoCache) && !h.fallback.Load():
			h.fallBack(err)
			continue
		}
		h.failed(err)
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-h.clock.After(retry.next()):
		}
	}
}

// serve keeps the sink current through c until ctx is done (nil) or the
// server refuses client tracking on a reconnect (that error).
func (h *Hydrator) serve(ctx context.Context, c rueidis.Client) error {
	interval := h.interval
	if h.fallback.Load() {
		interval = fallbackInterval
	}
	if len(h.keys) == 0 {
		h.finishLoad()
	}
	h.markAll()
	tick := h.clock.After(interval)
	var retry <-chan time.Time // nil unless waiting to retry a failed read
	var wait backoff
	for {
		if idx := h.pendingUnless(retry != nil); len(idx) > 0 {
			err := h.read(ctx, c, idx)
			switch {
			case err == nil:
				wait = backoff{}
			case ctx.Err() != nil:
				return nil
			case errors.Is(err, rueidis.ErrNoCache) && !h.fallback.Load():
				return err
			default:
				h.failed(err)
				// The connection's cache and tracking may be gone with it:
				// read everything again once Redis answers.
				h.markAll()
				retry = h.clock.After(wait.next())
			}
		}
		select {
		case <-ctx.Done():
			return nil
		case <-h.wake:
		case <-tick:
			h.markAll()
			tick = h.clock.After(interval)
		case <-retry:
			retry = nil
		}
	}
}

// read reads the hashes of keys idx that may have changed, bounded
// (store.ReadBounded: two round trips), and passes them to the sinks; with
// every key, it also measures the clock against Redis's. A hash may have
// changed unless Redis still tracks it for the pod since it was last read
// (store.Unchanged: an answer from the client-side cache) and what was read
// then was taken: a hash refused or dated ahead is judged again at every
// read, since time moves. A hash is judged at Redis's time
// (store.DecodeApp): one refused is noted, and reads as absent. It returns
// the first error, and then applies nothing.
func (h *Hydrator) read(ctx context.Context, c rueidis.Client, idx []int) error {
	ctx, cancel := context.WithTimeout(ctx, h.redisOpt.Timeout())
	defer cancel()
	changed := idx
	if !h.fallback.Load() {
		keys := make([]string, len(idx))
		for i, a := range idx {
			keys[i] = h.keys[a]
		}
		unchanged, err := store.Unchanged(ctx, c, keys, cacheTTL)
		if err != nil {
			// Some probes may have been sent, and are cache hits now.
			for _, a := range idx {
				h.recheck[a] = true
			}
			return fmt.Errorf("read: %w", err)
		}
		changed = nil
		for i, a := range idx {
			if !unchanged[i] || h.recheck[a] {
				changed = append(changed, a)
			}
		}
	}
	reads := make([]store.HashFields, len(changed))
	for i, a := range changed {
		// Until it is read and judged: a probe this read sent is a cache
		// hit at the next one, even if this read fails.
		h.recheck[a] = true
		reads[i] = store.HashFields{Key: h.keys[a], Fields: store.FieldsOf(h.keys[a])}
		if a == len(h.apps) {
			reads[i].Fields = store.MetaFields()
		}
	}
	hashes, err := store.ReadBounded(ctx, c, reads)
	if err != nil {
		return fmt.Errorf("read: %w", err)
	}
	if len(idx) == len(h.keys) || h.tellingByRedis() {
		// With every full read, as often as the safety net: the fleet's
		// clock, against which a time in a hash is judged; and with every
		// read while the pod tells time by Redis, whose clock may have been
		// set right since, so that a time from the future is never judged
		// by a correction that no longer holds. After the probes, which are
		// the ones to tell of a refused CLIENT TRACKING.
		residual, err := store.ClockOffset(ctx, c, h.fleet)
		if err != nil {
			return fmt.Errorf("read: %w", err)
		}
		h.skewed(h.fleet.Correct(residual, release.MaxSkew))
	}
	h.reads.Add(uint64(len(idx)))
	h.cacheHits.Add(uint64(len(idx) - len(changed)))
	read := make(map[string]release.Entry, len(changed))
	var meta *release.Bulletin
	now := h.fleet.Now()
	for i, a := range changed {
		b := hashes[i]
		if a == len(h.apps) {
			// The meta hash: absent until a poller with MySQL publishes.
			m, at := store.DecodeMeta(b.Hash)
			if h.recheck[a] = at.Sub(now) > release.MaxSkew; !h.recheck[a] && at.After(h.metaAt) {
				h.metaAt, meta = at, &m
			}
			continue
		}
		app := h.apps[a]
		e, err := store.DecodeApp(app, b.Hash, now)
		if over := b.Err(); over != nil {
			err = over
		}
		h.refusals.Note(app.Key, b.Hash, err)
		h.recheck[a] = err != nil
		if e == (release.Entry{}) {
			h.missing.Add(1)
		}
		read[app.Key] = e
	}
	h.succeeded()
	if len(read) > 0 && h.sink.SetAll(read, now) {
		h.hydrations.Add(1)
	}
	if meta != nil {
		h.meta.SetMeta(*meta)
		h.metas.Add(1)
	}
	if len(idx) == len(h.keys) {
		h.finishLoad()
	}
	return nil
}

// tellingByRedis reports whether the last measure found the pod's clock
// more than release.MaxSkew off Redis's.
func (h *Hydrator) tellingByRedis() bool {
	return time.Duration(h.offset.Load()).Abs() > release.MaxSkew
}

// skewed notes the pod's clock offset to Redis's, warning once when it
// grows past release.MaxSkew and telling when it is back within. The
// warning is the poller's, with the same fields (docs/operations.md, "A
// clock off Redis's"): a pod always tells time by Redis beyond MaxSkew.
func (h *Hydrator) skewed(offset time.Duration) {
	was := time.Duration(h.offset.Swap(int64(offset))).Abs() > release.MaxSkew
	switch is := offset.Abs() > release.MaxSkew; {
	case is && !was:
		h.log.Warn("clock differs from redis's", zap.Duration("offset", offset), zap.Bool("telling_time_by_redis", true))
	case was && !is:
		h.log.Info("clock agrees with redis's again", zap.Duration("offset", offset))
	}
}

// finishLoad closes Loaded the first time it is called.
func (h *Hydrator) finishLoad() {
	select {
	case <-h.loaded:
	default:
		close(h.loaded)
		h.log.Info("first load from redis", zap.Int("apps", len(h.apps)), zap.Duration("took", h.clock.Now().Sub(h.started)))
	}
}

// invalidated is rueidis's OnInvalidations hook. It runs on the connection's
// reading goroutine, so it only marks and signals.
func (h *Hydrator) invalidated(keys []rueidis.RedisMessage) {
	h.invalidations.Add(1)
	if keys == nil {
		// A flush, or the connection (and its tracking) was lost.
		h.markAll()
	} else {
		h.mu.Lock()
		for _, k := range keys {
			if s, err := k.ToString(); err == nil {
				if i, ok := h.index[s]; ok {
					h.pending[i] = true
				}
			}
		}
		h.mu.Unlock()
	}
	select {
	case h.wake <- struct{}{}:
	default:
	}
}

func (h *Hydrator) markAll() {
	h.mu.Lock()
	for i := range h.pending {
		h.pending[i] = true
	}
	h.mu.Unlock()
}

// pendingUnless returns the apps to re-read and clears them, or nothing while
// waiting for a retry. An invalidation that arrives after this marks its app
// again.
func (h *Hydrator) pendingUnless(waiting bool) []int {
	if waiting {
		return nil
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	var idx []int
	for i, p := range h.pending {
		if p {
			idx = append(idx, i)
			h.pending[i] = false
		}
	}
	return idx
}

// succeeded notes a working exchange with Redis, and the end of an outage.
func (h *Hydrator) succeeded() {
	h.connected.Store(true)
	h.refusal.Store(nil)
	h.outage.Up(h.log, h.clock.Now(), "redis available again")
}

// failed notes a failed exchange with Redis, warning at most every
// outage.Every while the outage lasts.
func (h *Hydrator) failed(err error) {
	h.failures.Add(1)
	h.connected.Store(false)
	// A refusal stands until an exchange works: an outage that follows it
	// (Redis restarting during a rollout with a wrong password) says
	// nothing of the pod's configuration.
	if store.AccessDenied(err) {
		h.refusal.Store(&err)
	}
	now := h.clock.Now()
	h.outage.Down(h.log, now, now, "redis unavailable, serving what is loaded", h.errField(err))
}

// fallBack switches to re-reading every app each second without client
// tracking, for good: it is a property of the server and the user.
func (h *Hydrator) fallBack(err error) {
	h.fallback.Store(true)
	h.log.Warn("redis refused client tracking, re-reading every app each second", h.errField(err))
}

// errField is err for the log, without the password in case anything
// quoted it.
func (h *Hydrator) errField(err error) zap.Field {
	return logsafe.String("err", h.redisOpt.Scrub(err.Error()))
}

// backoff doubles from minRetry up to maxRetry; its zero value starts over.
type backoff struct{ d time.Duration }

func (b *backoff) next() time.Duration {
	b.d = min(max(2*b.d, minRetry), maxRetry)
	return b.d
}
