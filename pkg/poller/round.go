package poller

import (
	"context"
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
	p.redis.startTick()
	apps, keys := p.polledApps()
	r := round{mode: p.mode, sum: schedule.Round{Apps: len(apps)}}
	if r.mode == Coordinated {
		if shared, ok := p.load(ctx, keys); ok {
			p.repair(ctx, keys, shared, &r)
		} else {
			r.mode = Standalone
		}
	}
	p.pace.apps = len(apps)
	p.pace.update(p.clock.Now())
	if p.backoff.Active(p.clock.Now()) {
		p.log.Debug("backoff active", zap.Time("until", p.backoff.Until))
		if ctx.Err() == nil {
			p.endTick(r.mode, start)
		}
		return
	}
	for _, app := range apps {
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

// refreshRound asks GitHub about every app whose refresh request is due now
// (schedule.RefreshAt, within the budgets), in configured order, as a tick
// asks about due apps: claimed (only a claim made since the attempt's point
// keeps other pollers off), spaced, shared, and under the fleet backoff. It
// returns when the next pending request falls due (zero: none). Run calls
// it while it waits.
func (p *Poller) refreshRound(ctx context.Context) (next time.Time) {
	p.mu.Lock()
	defer p.mu.Unlock()

	if n := p.refreshes.takeCoalesced(); n > 0 {
		p.log.Debug("webhook refreshes coalesced", zap.Int("requests", n))
		p.obs.RefreshesDeferred(Coalesced, n)
	}
	start := p.timer.Now()
	apps, _ := p.polledApps()
	r := round{mode: p.mode, sum: schedule.Round{Apps: len(apps)}, refresh: true}
	stopped := false // by a rate limit or a fleet backoff
	for _, app := range apps {
		req, ok := p.refreshes.get(app.Key)
		if !ok || stopped || p.backoff.Active(p.clock.Now()) || !p.due(app.Key, &r, p.clock.Now()) {
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
	return p.nextRefresh()
}

// nextRefresh forgets the refresh requests that need nothing more (or are
// for an entry no longer polled), notes those the budgets hold back, and
// returns when the next pending one falls due, the fleet backoff permitting
// (zero: none).
func (p *Poller) nextRefresh() (next time.Time) {
	for _, app := range p.apps {
		req, ok := p.refreshes.get(app.Key)
		if !ok {
			continue
		}
		at, _, held, ok := p.budgets.refreshAt(app.Key, req, p.entries[app.Key], p.clock.Now())
		if !ok || !p.polled(app) {
			p.refreshes.drop(app.Key, req)
			p.budgets.unhold(app.Key)
			continue
		}
		if held != "" {
			p.budgets.hold(app.Key, req, held, at)
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

// finish ends a round that started at start: it works out the backoff,
// shares it when it changed, logs the round and reports it.
func (p *Poller) finish(ctx context.Context, start time.Time, r *round) {
	now := p.clock.Now()
	// A backoff that another poller set during our round stands: our
	// own round's results must not clear or shorten it.
	if !r.held {
		next := schedule.NextBackoff(p.timing, p.backoff, r.sum, now, p.rand())
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
	p.redis.endTick()
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
		p.redis.down(ctx, OpPutBackoff, err, start)
		r.mode = Standalone
		return
	}
	p.redis.up()
}

// repair writes back from memory, guarded as usual and without asking
// GitHub, every app of keys (those polled) whose shared entry, as just
// read, has no fetch or an older one than memory holds: Redis was flushed, a key expired, or a write
// was lost in a failover (docs/operations.md, "Redis flushed"). Each entry
// keeps its own fetch time, so nothing looks fresher than it is. A Redis
// error stops the repair and makes the round standalone.
func (p *Poller) repair(ctx context.Context, keys []string, shared map[string]release.Entry, r *round) {
	repaired := 0
	for _, key := range keys {
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
