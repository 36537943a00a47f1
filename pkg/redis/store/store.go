// Package store is the fleet's shared state in Redis (docs/redis.md): the app and
// backoff hashes, how they are read, and the guarded write that never moves an
// entry back in time, as a Lua script or, where Redis refuses scripts, as
// WATCH/MULTI/EXEC. Every script and transaction touches one key, so it works
// unchanged on Redis Cluster.
package store

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/redis/rueidis"
	"go.uber.org/zap"

	"github.com/storytold/craft-releases/pkg/clock"
	"github.com/storytold/craft-releases/pkg/release"
	"github.com/storytold/craft-releases/pkg/schedule"
)

// TTLs (docs/redis.md, "Keys").
const (
	entryTTL   = 7 * 24 * time.Hour
	backoffTTL = 24 * time.Hour
)

// WriteMode says how a Store makes its guarded writes.
type WriteMode int

// The modes of a Store.
const (
	ModeScript WriteMode = iota // the Lua script (EVALSHA, EVAL when Redis lacks it)
	ModeWatch                   // WATCH/MULTI/EXEC, after Redis refused the script
)

// String returns "script" or "watch", for logs and metric labels.
func (m WriteMode) String() string {
	if m == ModeWatch {
		return "watch"
	}
	return "script"
}

// Conn gives a Store its Redis client (redis.Conn).
type Conn interface {
	// Client returns the client, connecting first if needed, or why it
	// cannot until ctx ends.
	Client(ctx context.Context) (rueidis.Client, error)
	// Timeout is how long one call may take.
	Timeout() time.Duration
}

// An Option adjusts New.
type Option func(*Store)

// WithLogger gives New a logger for the one warning a Store ever logs: that
// Redis refused the guarded-write script and writes go through
// WATCH/MULTI/EXEC from then on. A nil log keeps the default, no logging.
func WithLogger(log *zap.Logger) Option {
	return func(s *Store) {
		if log != nil {
			s.log = log
		}
	}
}

// WithRefusals gives New where to tell of app hashes and refresh requests
// it refused to read (nil: nowhere).
func WithRefusals(r *Refusals) Option {
	return func(s *Store) { s.refusals = r }
}

// WithModeObserver gives New a function told the Store's Mode, at once and
// again when it turns to ModeWatch, for the poller's
// craft_poller_store_write_path gauge. It is called from the goroutine of
// the write that turned it, and must not block.
func WithModeObserver(f func(WriteMode)) Option {
	return func(s *Store) { s.onMode = f }
}

// WithClock gives New the clock that WatchRefreshes waits on and that reads
// the app hashes (DecodeApp's now; the guarded write's too): the poller's
// clock.Corrected, so that the Store and its poller tell one time (nil:
// clock.System).
func WithClock(c clock.Clock) Option {
	return func(s *Store) { s.clock = clock.Or(c) }
}

// Store reads and writes the shared state through one Redis client. It is
// safe for concurrent use. Every method bounds each of its Redis calls by the
// Conn's timeout, within the deadline of its context; an error means nothing
// is known of what Redis holds, and a write may or may not have happened. A
// write given a zero time is an error and writes nothing.
type Store struct {
	conn   Conn
	by     string
	apps   map[string]release.App // app key → the app, for DecodeApp
	script *rueidis.Lua
	watch  atomic.Bool // Redis refused the script: use WATCH/MULTI/EXEC
	log    *zap.Logger
	onMode func(WriteMode)
	clock  clock.Clock

	refusals *Refusals
	releases map[string]*releaseMemo // app key → its hash's last release decoded
}

// New returns a Store of apps that uses conn and writes by, the poller's
// hostname, in the "by" field of every hash it writes. An app hash is read
// as its app's (DecodeApp): a key not among apps reads as having no fetch.
// The Store does not own conn: close it after the last call.
func New(conn Conn, by string, apps []release.App, opts ...Option) *Store {
	s := &Store{conn: conn, by: by, log: zap.NewNop(), script: rueidis.NewLuaScript(guardLua), clock: clock.System,
		apps: make(map[string]release.App, len(apps)), releases: make(map[string]*releaseMemo, len(apps))}
	for _, a := range apps {
		s.apps[a.Key], s.releases[a.Key] = a, new(releaseMemo)
	}
	for _, o := range opts {
		o(s)
	}
	if s.onMode != nil {
		s.onMode(ModeScript)
	}
	return s
}

// AccessDenied reports whether err is Redis refusing the client for its
// configuration rather than Redis being unavailable: the credentials
// (WRONGPASS, NOAUTH, another authentication error) or the user's permissions
// (NOPERM). A refused connection, a timeout or a server that went away is an
// outage, not a refusal.
func AccessDenied(err error) bool {
	var re *rueidis.RedisError
	if !errors.As(err, &re) {
		return false
	}
	msg := re.Error()
	for _, prefix := range []string{"WRONGPASS", "NOAUTH", "NOPERM"} {
		if strings.HasPrefix(msg, prefix) {
			return true
		}
	}
	// Older servers and proxies: "ERR invalid password", "ERR AUTH <password>
	// called without any password configured", "ERR Client sent AUTH, but no
	// password is set".
	lower := strings.ToLower(msg)
	return strings.HasPrefix(lower, "err") && (strings.Contains(lower, "auth") || strings.Contains(lower, "password"))
}

// Mode reports how the Store makes its guarded writes. It starts as ModeScript and turns to
// ModeWatch for good the first time Redis refuses the script itself (NOPERM
// for EVALSHA or EVAL, an unknown or disabled command); no other error
// changes it.
func (s *Store) Mode() WriteMode {
	if s.watch.Load() {
		return ModeWatch
	}
	return ModeScript
}

// Load reads every app's hash and the backoff hash in one pipeline. Every app
// of apps is in the map; an absent or unreadable hash reads as the zero Entry
// (DecodeApp), an absent or unreadable backoff as none.
func (s *Store) Load(ctx context.Context, apps []string) (map[string]release.Entry, schedule.Backoff, error) {
	hashes, err := s.hashes(ctx, apps)
	if err != nil {
		return nil, schedule.Backoff{}, fmt.Errorf("load: %w", err)
	}
	entries := make(map[string]release.Entry, len(apps))
	for i, app := range apps {
		entries[app] = s.decode(app, hashes[i])
	}
	return entries, DecodeBackoff(hashes[len(apps)].Hash), nil
}

// LoadApp reads one app's hash and the backoff hash in one pipeline, as Load.
func (s *Store) LoadApp(ctx context.Context, app string) (release.Entry, schedule.Backoff, error) {
	hashes, err := s.hashes(ctx, []string{app})
	if err != nil {
		return release.Entry{}, schedule.Backoff{}, fmt.Errorf("load %s: %w", app, err)
	}
	return s.decode(app, hashes[0]), DecodeBackoff(hashes[1].Hash), nil
}

// decode reads app's hash b as DecodeApp at the Store's time, and tells of a
// refusal.
func (s *Store) decode(app string, b Bounded) release.Entry {
	e, err := s.decodeApp(app, b.Hash)
	if over := b.Err(); over != nil {
		err = over
	}
	s.refusals.Note(app, b.Hash, err)
	return e
}

// decodeApp is DecodeApp of app's hash h at the Store's time.
func (s *Store) decodeApp(app string, h map[string]string) (release.Entry, error) {
	return decodeApp(s.apps[app], h, s.clock.Now(), s.releases[app])
}

// hashes reads the apps' hashes and then the backoff hash, bounded
// (ReadBounded).
func (s *Store) hashes(ctx context.Context, apps []string) ([]Bounded, error) {
	ctx, cancel := context.WithTimeout(ctx, s.conn.Timeout())
	defer cancel()
	c, err := s.conn.Client(ctx)
	if err != nil {
		return nil, err
	}
	reads := make([]HashFields, 0, len(apps)+1)
	for _, app := range apps {
		reads = append(reads, HashFields{Key: AppKey(app), Fields: FieldsOf(app)})
	}
	return ReadBounded(ctx, c, append(reads, HashFields{Key: BackoffKey, Fields: backoffFields}))
}

// Claim records that this poller starts a request for app at, unless another
// claim was made less than window before at (a guarded write on claimed_ms).
// It reports whether the claim was written. A claim is never released; it
// lapses.
func (s *Store) Claim(ctx context.Context, app string, at time.Time, window time.Duration) (bool, error) {
	if at.IsZero() {
		return false, fmt.Errorf("claim %s: %w", app, errNoTime)
	}
	v, err := s.guarded(ctx, AppKey(app), s.of(app, s.claimWrite(at, window)))
	if err != nil {
		return false, fmt.Errorf("claim %s: %w", app, err)
	}
	return v == written, nil
}

// PutFetch shares a fetch of app (e's FetchedAt, ETag, Release and
// Companions) unless the hash holds a readable fetch newer than e's. When the
// hash holds the same fetch (release.SameFetch), the companions written are
// those of both. It reports whether it was written.
func (s *Store) PutFetch(ctx context.Context, app string, e release.Entry) (bool, error) {
	written, _, err := s.PublishFetch(ctx, app, e)
	return written, err
}

// PublishFetch is PutFetch, and also reports whether the write changed what
// is served: the hash held no readable fetch, a fetch of another release
// than e's (compared as encoded), or other companions than those written
// (the feeds serve a file, or a bundle with its signature, only once it is
// there). A fetch that
// only moves the fetch time changes nothing served but app_last_fetched,
// and reports false. Since the decision is the guarded write's own, of all
// the writers of one release, or of one companion, exactly one is told it
// changed, whichever poller it is.
func (s *Store) PublishFetch(ctx context.Context, app string, e release.Entry) (ok, changed bool, err error) {
	v, changed, err := s.putFetch(ctx, app, e)
	if err != nil {
		return false, false, fmt.Errorf("put fetch %s: %w", app, err)
	}
	return v == written, v == written && changed, nil
}

func (s *Store) putFetch(ctx context.Context, app string, e release.Entry) (v verdict, changed bool, err error) {
	ch, err := s.fetchChange(app, e)
	if err != nil {
		return 0, false, err
	}
	// fetchChange encoded them already.
	rel, _ := encodeRelease(e.Release)
	hist, _ := encodeHistory(e.History)
	decide := ch.decide
	// fetchWrite's last pairs, set by each decision: the slice is shared
	// with apply's copy of ch.
	sigField, sigs := &ch.pairs[len(ch.pairs)-2], &ch.pairs[len(ch.pairs)-1]
	histSigs := &ch.pairs[len(ch.pairs)-3]
	// decide runs once per attempt on the hash as read; the last run is
	// the one that was applied.
	ch.decide = func(h map[string]string) verdict {
		cur, _ := s.decodeApp(app, h)
		old, _ := encodeRelease(cur.Release)
		oldHist, _ := encodeHistory(cur.History)
		// The same fetch holds the companions another poller fetched for
		// it: they are kept (release.Entry.Merge's union).
		union, histUnion := e.Companions, e.History
		if release.SameFetch(cur, e) {
			union, histUnion = cur.Companions.Union(e.Companions), cur.History.Union(e.History)
		}
		changed = !cur.Fetched() || old != rel || !cur.Companions.Equal(union) ||
			oldHist != hist || !sameHistoryCompanions(cur.History, histUnion)
		*sigField, *sigs = fieldCompanions, "{}"
		if enc, err := encodeCompanions(union); err == nil {
			*sigs = enc
		}
		if _, stale := h[fieldCompanions]; union.Len() == 0 && !stale {
			// Nothing to write or to clear: the pair repeats "by" instead.
			*sigField, *sigs = fieldBy, s.by
		}
		if s.apps[app].Channel == release.HistoryChannel {
			*histSigs = "{}"
			if enc, err := encodeHistoryCompanions(histUnion); err == nil {
				*histSigs = enc
			}
		}
		return decide(h)
	}
	v, err = s.apply(ctx, ch)
	return v, changed, err
}

// sameHistoryCompanions reports whether h and o hold the same companions
// for the same tags.
func sameHistoryCompanions(h, o *release.History) bool {
	for _, x := range []*release.History{h, o} {
		for _, r := range x.Companioned() {
			if !h.CompanionsOf(r.Tag).Equal(o.CompanionsOf(r.Tag)) {
				return false
			}
		}
	}
	return true
}

// fetchChange is the guarded change of app's hash that PutFetch makes.
func (s *Store) fetchChange(app string, e release.Entry) (change, error) {
	if e.FetchedAt.IsZero() {
		return change{}, errNoTime
	}
	w, err := s.fetchWrite(app, e)
	if err != nil {
		return change{}, err
	}
	return guardedChange(AppKey(app), s.of(app, w)), nil
}

// PutNotModified shares that GitHub confirmed e's ETag at e.FetchedAt: it
// moves the hash's fetch time, only if the hash's fetch has that ETag and is
// not newer. When the hash holds no readable fetch at all (Redis was flushed,
// the key expired, or it holds garbage or another format), it publishes e
// whole instead, as PutFetch does. It writes nothing when e has no ETag, and
// reports whether it wrote.
func (s *Store) PutNotModified(ctx context.Context, app string, e release.Entry) (bool, error) {
	if e.ETag == "" {
		return false, nil
	}
	if e.FetchedAt.IsZero() {
		return false, fmt.Errorf("put not modified %s: %w", app, errNoTime)
	}
	v, err := s.guarded(ctx, AppKey(app), s.of(app, s.notModifiedWrite(e)))
	if err == nil && v == refusedNoFetch {
		// The republish is itself guarded, so a fetch that lands
		// meanwhile is never overwritten by this older copy. It shows
		// what the pods serve already: nothing served changes.
		v, _, err = s.putFetch(ctx, app, e)
	}
	if err != nil {
		return false, fmt.Errorf("put not modified %s: %w", app, err)
	}
	return v == written, nil
}

// PutFailure shares a failed request for app at e.FailedAt, e.Failures in a
// row (at least 1), unless the hash holds a failure newer than that. It
// reports whether it was written.
func (s *Store) PutFailure(ctx context.Context, app string, e release.Entry) (bool, error) {
	if e.FailedAt.IsZero() {
		return false, fmt.Errorf("put failure %s: %w", app, errNoTime)
	}
	v, err := s.guarded(ctx, AppKey(app), s.of(app, s.failureWrite(e)))
	if err != nil {
		return false, fmt.Errorf("put failure %s: %w", app, err)
	}
	return v == written, nil
}

// PutMeta shares m, the renames and notices a poller read from MySQL at at,
// unless the meta hash holds a readable read newer than at (a guarded write
// on read_ms, gap 0: an equal time is written). It reports whether it was
// written. The hash's TTL (7 days) is renewed by every write that goes
// through, so it outlives a MySQL outage of up to a week.
func (s *Store) PutMeta(ctx context.Context, m release.Bulletin, at time.Time) (bool, error) {
	if at.IsZero() {
		return false, fmt.Errorf("put meta: %w", errNoTime)
	}
	w, err := s.metaWrite(m, at)
	if err != nil {
		return false, fmt.Errorf("put meta: %w", err)
	}
	v, err := s.guarded(ctx, MetaKey, w)
	if err != nil {
		return false, fmt.Errorf("put meta: %w", err)
	}
	return v == written, nil
}

// The writes by kind (docs/redis.md, "The guarded write").

// of returns w as a write of app's hash, decided on as read at the Store's time.
func (s *Store) of(app string, w write) write {
	w.app, w.now, w.releases = s.apps[app], s.clock.Now(), s.releases[app]
	return w
}

func (s *Store) claimWrite(at time.Time, window time.Duration) write {
	return write{
		field: fieldClaimedMS, at: at.UnixMilli(), gap: window.Milliseconds(),
		pairs: []string{fieldV, formatVersion, fieldClaimedMS, ms(at), fieldBy, s.by},
	}
}

// fetchWrite is the write of e's fetch to app's hash: for a history entry
// with its history and the history's companions, and always with the
// companions last (putFetch sets them).
func (s *Store) fetchWrite(app string, e release.Entry) (write, error) {
	rel, err := encodeRelease(e.Release)
	if err != nil {
		return write{}, err
	}
	sigs, err := encodeCompanions(e.Companions)
	if err != nil {
		return write{}, err
	}
	pairs := []string{fieldV, formatVersion, fieldFetchedMS, ms(e.FetchedAt), fieldETag, e.ETag, fieldRelease, rel, fieldBy, s.by}
	if s.apps[app].Channel == release.HistoryChannel {
		hist, err := encodeHistory(e.History)
		if err != nil {
			return write{}, err
		}
		histSigs, err := encodeHistoryCompanions(e.History)
		if err != nil {
			return write{}, err
		}
		pairs = append(pairs, fieldHistory, hist, fieldHistoryCompanions, histSigs)
	} else {
		// In place of a history entry's pairs, which putFetch sets: "by"
		// again.
		pairs = append(pairs, fieldBy, s.by)
	}
	return write{
		field: fieldFetchedMS, at: e.FetchedAt.UnixMilli(),
		pairs: append(pairs, fieldCompanions, sigs),
	}, nil
}

func (s *Store) notModifiedWrite(e release.Entry) write {
	return write{
		field: fieldFetchedMS, at: e.FetchedAt.UnixMilli(), needETag: true, etag: e.ETag,
		pairs: []string{fieldV, formatVersion, fieldFetchedMS, ms(e.FetchedAt), fieldBy, s.by},
	}
}

func (s *Store) metaWrite(m release.Bulletin, at time.Time) (write, error) {
	lists, err := encodeMeta(m)
	if err != nil {
		return write{}, err
	}
	pairs := append([]string{fieldV, formatVersion, fieldReadMS, ms(at)}, lists...)
	return write{field: fieldReadMS, at: at.UnixMilli(), pairs: append(pairs, fieldBy, s.by)}, nil
}

func (s *Store) failureWrite(e release.Entry) write {
	return write{
		field: fieldFailedMS, at: e.FailedAt.UnixMilli(),
		pairs: []string{fieldV, formatVersion, fieldFailedMS, ms(e.FailedAt),
			fieldFailures, strconv.Itoa(max(1, e.Failures)),
			// "0" reads as absent: a failure that is no 404 ends a run of them.
			fieldNotFoundSinceMS, msOrZero(e.NotFoundSince), fieldNotFound, strconv.Itoa(max(0, e.NotFound)),
			fieldBy, s.by},
	}
}

// PutBackoff shares the fleet backoff b for a day, replacing whatever the
// backoff hash held; a zero b.Until deletes the hash. Last writer wins.
func (s *Store) PutBackoff(ctx context.Context, b schedule.Backoff) error {
	ctx, cancel := context.WithTimeout(ctx, s.conn.Timeout())
	defer cancel()
	c, err := s.conn.Client(ctx)
	if err != nil {
		return fmt.Errorf("put backoff: %w", err)
	}
	var cmds rueidis.Commands
	if b.Until.IsZero() {
		cmds = rueidis.Commands{c.B().Del().Key(BackoffKey).Build()}
	} else {
		// In one transaction, so the hash never lives without its TTL and
		// keeps no field of an older format.
		cmds = rueidis.Commands{
			c.B().Multi().Build(),
			c.B().Del().Key(BackoffKey).Build(),
			hset(c.B(), BackoffKey, []string{fieldV, formatVersion, fieldUntilMS, ms(b.Until),
				fieldTrouble, strconv.Itoa(b.Trouble), fieldBy, s.by}),
			c.B().Pexpire().Key(BackoffKey).Milliseconds(backoffTTL.Milliseconds()).Build(),
			c.B().Exec().Build(),
		}
	}
	for _, r := range c.DoMulti(ctx, cmds...) {
		if err := r.Error(); err != nil {
			return fmt.Errorf("put backoff: %w", err)
		}
	}
	return nil
}

// ClearBackoff deletes the shared backoff hash only if it still reads as read,
// the backoff this poller read last (as DecodeBackoff reads it; the zero
// Backoff for none): a compare-and-delete, so that a backoff another poller
// recorded since then stands. It reports whether it cleared (also when there
// was nothing to clear) or was refused.
func (s *Store) ClearBackoff(ctx context.Context, read schedule.Backoff) (bool, error) {
	// As the hash stores them: Unix ms, and 0 for none.
	stored := func(b schedule.Backoff) (until int64, trouble int) {
		if !b.Until.IsZero() {
			until = b.Until.UnixMilli()
		}
		return until, max(0, b.Trouble)
	}
	until, trouble := stored(read)
	v, err := s.apply(ctx, change{
		key:   BackoffKey,
		reads: []string{fieldV, fieldUntilMS, fieldTrouble},
		decide: func(h map[string]string) verdict {
			if u, t := stored(DecodeBackoff(h)); u != until || t != trouble {
				return refusedTime
			}
			return written
		},
	})
	if err != nil {
		return false, fmt.Errorf("clear backoff: %w", err)
	}
	return v == written, nil
}

// ClockOffset measures how far the Store's clock runs ahead of Redis's
// (store.ClockOffset): for a poller on a clock.Corrected, what is left to
// correct.
func (s *Store) ClockOffset(ctx context.Context) (time.Duration, error) {
	ctx, cancel := context.WithTimeout(ctx, s.conn.Timeout())
	defer cancel()
	c, err := s.conn.Client(ctx)
	if err != nil {
		return 0, fmt.Errorf("clock offset: %w", err)
	}
	d, err := ClockOffset(ctx, c, s.clock)
	if err != nil {
		return 0, fmt.Errorf("clock offset: %w", err)
	}
	return d, nil
}

// errNoTime is returned for a write whose time is zero.
var errNoTime = errors.New("no time given")

// AppStatus is one app's shared hash, for `poller status`.
type AppStatus struct {
	App     string
	Exists  bool          // the key exists
	Version string        // the hash's format version as stored ("1"; anything else reads as absent)
	Entry   release.Entry // what pollers read from the hash (DecodeApp)
	By      string        // hostname of the last writer
	TTL     time.Duration // until the key expires: 0 when absent, negative when it never expires
}

// BackoffStatus is the shared backoff hash, for `poller status`.
type BackoffStatus struct {
	Exists  bool             // the key exists
	Backoff schedule.Backoff // what pollers read from the hash (DecodeBackoff)
	By      string           // hostname of the last writer
	TTL     time.Duration    // as AppStatus.TTL
}

// Status reads every app's hash and the backoff hash with their TTLs, in one
// pipeline, in the order of apps.
func (s *Store) Status(ctx context.Context, apps []string) ([]AppStatus, BackoffStatus, error) {
	ctx, cancel := context.WithTimeout(ctx, s.conn.Timeout())
	defer cancel()
	c, err := s.conn.Client(ctx)
	if err != nil {
		return nil, BackoffStatus{}, fmt.Errorf("status: %w", err)
	}
	reads := make([]HashFields, 0, len(apps)+1)
	for _, app := range apps {
		reads = append(reads, HashFields{Key: AppKey(app), Fields: FieldsOf(app)})
	}
	reads = append(reads, HashFields{Key: BackoffKey, Fields: backoffFields})
	hashes, err := ReadBounded(ctx, c, reads)
	if err != nil {
		return nil, BackoffStatus{}, fmt.Errorf("status: %w", err)
	}
	cmds := make(rueidis.Commands, 0, len(reads))
	for _, r := range reads {
		cmds = append(cmds, c.B().Pttl().Key(r.Key).Build())
	}
	ttls := make([]int64, len(reads))
	for i, r := range c.DoMulti(ctx, cmds...) {
		if ttls[i], err = r.AsInt64(); err != nil {
			return nil, BackoffStatus{}, fmt.Errorf("status: %w", err)
		}
	}
	// PTTL answers -2 for no key and -1 for no expiry.
	ttl := func(n int64) time.Duration {
		switch {
		case n == -1:
			return -1
		case n < 0:
			return 0
		}
		return time.Duration(n) * time.Millisecond
	}
	out := make([]AppStatus, len(apps))
	for i, app := range apps {
		h := hashes[i].Hash
		out[i] = AppStatus{App: app, Exists: ttls[i] != -2, Version: h[fieldV],
			Entry: s.decode(app, hashes[i]), By: h[fieldBy], TTL: ttl(ttls[i])}
	}
	h, n := hashes[len(apps)].Hash, ttls[len(apps)]
	b := BackoffStatus{Exists: n != -2, Backoff: DecodeBackoff(h), By: h[fieldBy], TTL: ttl(n)}
	return out, b, nil
}
