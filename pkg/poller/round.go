package poller

import (
	"context"
	"errors"
	"math"
	"reflect"
	"time"

	"go.uber.org/zap"

	"github.com/storytold/craft-releases/pkg/logsafe"
	"github.com/storytold/craft-releases/pkg/release"
	"github.com/storytold/craft-releases/pkg/schedule"
)

// tick runs one tick: it reads the fleet's state when coordinating, and unless
// a backoff is active asks GitHub about every due app, shares the results and
// works out the backoff. A cancelled ctx ends the tick early and discards the
// answer in flight.
func (p *Poller) tick(ctx context.Context) {
	p.mu.Lock()
	defer p.mu.Unlock()

	start := p.timer.Now()
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
		p.redis.Up(p.log, p.timer.Now(), "redis is back")
	}
	p.obs.Round(m, p.timer.Now().Sub(start), p.backoff)
}

// shareBackoff shares the backoff next that follows a round, replacing read,
// the one this poller read from the fleet. Clearing is guarded: a backoff
// that another poller wrote since our read stands.
func (p *Poller) shareBackoff(ctx context.Context, read, next schedule.Backoff, r *round) {
	start := p.timer.Now()
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
// was lost in a failover (docs/redis.md, "Republishing after a loss"). Each entry
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
				zap.Int("failures", f.n), logsafe.NamedError("err", f.err))
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
		logsafe.NamedError("err", r.failures[0].err), zap.Duration("retry_in", max(0, p.backoff.Until.Sub(p.clock.Now()))))
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
	start := p.timer.Now()
	a := p.source.Latest(ctx, app, e.ETag)
	if ctx.Err() != nil {
		// An answer cut short by shutdown says nothing about GitHub.
		return true
	}
	now := p.clock.Now()
	p.log.Debug("github answer", zap.String("app", app.Key), zap.String("status", a.Outcome.String()),
		zap.Duration("took", p.timer.Now().Sub(start)))

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
	next, stop := p.record(app, e, a, missing, now, r)
	if stop {
		return true
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

// record counts answer a about app in the round and returns the entry that
// follows e, or stop for a rate limit, which ends the round.
func (p *Poller) record(app release.App, e release.Entry, a release.Answer, missing bool, now time.Time, r *round) (next release.Entry, stop bool) {
	next = e
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
			zap.Time("retry_at", a.RetryAt), logsafe.NamedError("err", a.Err))
		return e, true
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
	return next, false
}

// recheck re-reads app and the backoff from the fleet and claims app. It
// reports whether to ask GitHub about app, and whether the round must stop.
// A Redis error makes the rest of the round standalone, and app is still asked.
func (p *Poller) recheck(ctx context.Context, key string, r *round) (ask, stop bool) {
	start := p.timer.Now()
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
	start := p.timer.Now()
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
