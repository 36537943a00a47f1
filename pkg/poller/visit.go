package poller

import (
	"context"
	"math"
	"reflect"
	"time"

	"go.uber.org/zap"

	"github.com/storytold/craft-releases/pkg/logsafe"
	"github.com/storytold/craft-releases/pkg/release"
	"github.com/storytold/craft-releases/pkg/schedule"
)

// visit asks GitHub about app if it is due in round r, and records and
// shares the answer (docs/scheduling.md, "One tick", step 3); then, due or
// not, fetches the companions its release lacks (companions). It reports
// whether the round must stop: on a rate limit, a fleet backoff read
// meanwhile, or a cancelled ctx.
func (p *Poller) visit(ctx context.Context, app release.App, r *round) (stop bool) {
	if !p.due(app.Key, r, p.clock.Now()) {
		return p.companions(ctx, app, r)
	}
	// The spacing comes before the claim, so that a backoff another poller
	// wrote meanwhile is seen and the claim is stamped when the request starts.
	if !p.space(ctx, r) {
		return true
	}
	if r.mode == Coordinated {
		if ask, stop := p.claim(ctx, app.Key, r); !ask {
			return stop
		}
	}
	p.count(app.Key, r)
	was := p.entries[app.Key]
	asked := was
	if p.needsRefs(app.Key, was) {
		// A 304 would not name the companions' asset ids.
		asked.ETag = ""
	}
	a, ok := p.ask(ctx, app, asked)
	if !ok {
		return true
	}
	next, stop := p.record(app, was, a, r)
	if stop {
		return true
	}
	changed := p.share(ctx, app.Key, a.Outcome, next, r)
	p.remember(app.Key, a.Outcome, was, next, changed)
	return p.companions(ctx, app, r)
}

// due reports whether to ask GitHub about app in round r at now: when it
// is due (schedule.Due, at the effective interval) or, in a round of
// refreshes, when its request asks for it and the budgets have room.
func (p *Poller) due(key string, r *round, now time.Time) bool {
	if !r.refresh {
		return schedule.Due(p.pace.paced(), p.entries[key], now)
	}
	req, ok := p.refreshes.get(key)
	if !ok {
		return false
	}
	at, _, _, ok := p.budgets.refreshAt(key, req, p.entries[key], now)
	return ok && !at.After(now)
}

// space waits the request spacing before each request of a round but its
// first, and reports false when ctx was cancelled first.
func (p *Poller) space(ctx context.Context, r *round) bool {
	if r.asked == 0 || r.spaced {
		return true
	}
	if ctx.Err() != nil {
		return false
	}
	select {
	case <-ctx.Done():
		return false
	case <-p.clock.After(p.timing.Spacing):
	}
	// Both may be ready at once; shutdown wins.
	if ctx.Err() != nil {
		return false
	}
	r.spaced = true
	return true
}

// claim re-reads app and the backoff from the fleet and claims app. It
// reports whether to ask GitHub about app, and whether the round must stop.
// A Redis error makes the rest of the round standalone, and app is still
// asked.
func (p *Poller) claim(ctx context.Context, key string, r *round) (ask, stop bool) {
	start := p.timer.Now()
	shared, b, err := p.fleet.LoadApp(ctx, key)
	if err != nil {
		p.redis.down(ctx, OpLoadApp, err, start)
		r.mode = Standalone
		return true, false
	}
	p.redis.up()
	p.mergeShared(key, shared)
	p.backoff = b
	now := p.clock.Now()
	if b.Active(now) {
		r.held = true
		return false, true
	}
	if !p.due(key, r, now) {
		return false, false
	}
	window := p.timing.ClaimWindow()
	if r.refresh {
		// Only a claim made since the attempt's point keeps us off: one made
		// before it asked GitHub too early to answer the request.
		req, _ := p.refreshes.get(key)
		_, point, _ := schedule.RefreshAt(p.timing, req, p.entries[key], now)
		window = min(window, now.Sub(point)+time.Millisecond)
	}
	start = p.timer.Now()
	won, err := p.fleet.Claim(ctx, key, now, window)
	if err != nil {
		p.redis.down(ctx, OpClaim, err, start)
		r.mode = Standalone
		return true, false
	}
	p.redis.up()
	p.obs.Claim(won)
	if !won {
		p.log.Debug("claim refused", zap.String("app", key))
		if r.refresh {
			// Another poller asks for this attempt; wait for its claim to lapse
			// (or its fetch to arrive) before asking ourselves. Its claim,
			// which the read before ours missed, counts against the budgets.
			p.budgets.spend(key, now)
			p.merge(key, release.Entry{ClaimedAt: now})
		}
	}
	return won, false
}

// count counts the request about to be made about app: in round r and, in
// a round of refreshes, against the budgets.
func (p *Poller) count(key string, r *round) {
	r.asked++
	r.spaced = false
	if r.refresh {
		p.budgets.spend(key, p.clock.Now())
		p.budgets.unhold(key)
	}
}

// answer is GitHub's answer about one app as the poller takes it (judge).
type answer struct {
	release.Answer
	at      time.Time // when it came, by the fleet's clock
	missing bool      // a 404, whatever it was taken for
}

// ask asks GitHub about app, whose entry is was, and returns the answer as
// the poller takes it, once the quota it announced is learnt. ok is false
// when ctx was cancelled meanwhile: an answer cut short by shutdown says
// nothing about GitHub.
func (p *Poller) ask(ctx context.Context, app release.App, was release.Entry) (a answer, ok bool) {
	start := p.timer.Now()
	got := p.source.Latest(ctx, app, was.ETag)
	if ctx.Err() != nil {
		return answer{}, false
	}
	now := p.clock.Now()
	p.log.Debug("github answer", zap.String("app", app.Key), zap.String("status", got.Outcome.String()),
		zap.Duration("took", p.timer.Now().Sub(start)))
	a = p.judge(app, was, got, now)
	p.obs.Answer(app.Key, a.Answer)
	p.pace.learn(a.Answer, now)
	return a, true
}

// record counts answer a about app in the round and returns the entry that
// follows was, or stop for a rate limit, which ends the round.
func (p *Poller) record(app release.App, was release.Entry, a answer, r *round) (next release.Entry, stop bool) {
	next = was
	switch a.Outcome {
	case release.Fetched:
		r.sum.Fetched++
		next.FetchedAt, next.ETag, next.Release = a.at, a.ETag, a.Release
		next.Companions = keep(was.Release, was.Companions, a.Release)
		p.refs[app.Key] = companionRefs{tag: tagOf(a.Release), refs: a.Assets}
		if app.Channel == release.HistoryChannel {
			next.History = keepHistory(was.History, a.History)
			p.histRefs[app.Key] = historyRefs(a.HistoryAssets)
		}
		r.fetchedAt = a.at
	case release.NotModified:
		r.sum.Unchanged++
		next.FetchedAt = a.at
		r.fetchedAt = a.at
	case release.RateLimited:
		r.sum.RateLimited, r.sum.RetryAt = true, a.RetryAt
		p.logFailures(r)
		p.log.Warn("github rate limit", zap.String("app", app.Key), zap.String("repo", app.Repo),
			zap.Time("retry_at", a.RetryAt), logsafe.NamedError("err", a.Err))
		return was, true
	default:
		r.sum.Failed++
		n := 1
		if was.Failing() {
			n = max(was.Failures, 1)
			if n < math.MaxInt {
				n++
			}
		}
		next.FailedAt, next.Failures = a.at, n
		next.NotFoundSince, next.NotFound = notFoundRun(was, a.missing, a.at)
		r.failures = append(r.failures, failure{app: app, n: n, err: a.Err})
	}
	return next, false
}

// share writes an answer's outcome o, as entry e, to the fleet, unless the
// round is standalone, and reports whether its fetch changed the shared
// release (Fleet.PublishFetch).
func (p *Poller) share(ctx context.Context, key string, o release.Outcome, e release.Entry, r *round) (changed bool) {
	if r.mode == Standalone {
		return false
	}
	put, op := p.fleet.PutFailure, OpPutFailure
	switch o {
	case release.Fetched:
		put, op = p.publishFetch(&changed), OpPutFetch
	case release.NotModified:
		put, op = p.fleet.PutNotModified, OpPutNotModified
	}
	if written, ok := p.put(ctx, op, put, key, e, r); ok && !written {
		p.log.Debug("shared write refused", zap.String("app", key), zap.String("status", o.String()))
	}
	return changed
}

// publishFetch is the Fleet's PublishFetch as a write for put: it sets
// changed to whether the write changed what is served.
func (p *Poller) publishFetch(changed *bool) func(context.Context, string, release.Entry) (bool, error) {
	return func(ctx context.Context, key string, e release.Entry) (written bool, err error) {
		written, *changed, err = p.fleet.PublishFetch(ctx, key, e)
		return written, err
	}
}

// put shares app's entry e with the guarded write put, op for the Observer.
// It reports whether the write went through, and ok false for a Redis
// error, which makes the rest of the round standalone.
func (p *Poller) put(ctx context.Context, op Op, put func(context.Context, string, release.Entry) (bool, error),
	key string, e release.Entry, r *round) (written, ok bool) {
	start := p.timer.Now()
	written, err := put(ctx, key, e)
	if err != nil {
		p.redis.down(ctx, op, err, start)
		r.mode = Standalone
		return false, false
	}
	p.redis.up()
	if !written {
		p.obs.WriteRefused(op)
	}
	return written, true
}

// remember merges next, the entry that follows was after an answer whose
// outcome is o, into memory, even when the shared write lost: memory is
// merged, not replaced. It then tells Config.Changes when the release
// served changed: as the shared write said (changed) or, without a Fleet,
// as memory held it.
func (p *Poller) remember(key string, o release.Outcome, was, next release.Entry, changed bool) {
	if p.fleet == nil && o == release.Fetched {
		changed = !was.Fetched() || !reflect.DeepEqual(was.Release, next.Release) ||
			!reflect.DeepEqual(was.History.List(), next.History.List())
	}
	p.merge(key, next)
	if changed {
		p.tellChanges(key, was, next)
	}
}

// tellChanges tells Config.Changes, if any, that key's entry changed from
// was to next: for a history entry, as a change of the app between the two
// newest stable releases of next's history, the ones a decision makes the
// app serve instead of each other.
func (p *Poller) tellChanges(key string, was, next release.Entry) {
	if p.changes == nil {
		return
	}
	old, latest := was.Release, next.Release
	if _, ch := release.AppOf(key); ch == release.HistoryChannel {
		old, latest = nil, nil
		for _, r := range next.History.List() {
			switch {
			case r.Prerelease:
			case latest == nil:
				latest = r
			case old == nil:
				old = r
			}
		}
	}
	p.changes(key, old, latest)
}

// tagOf returns rel's tag, "" for no release.
func tagOf(rel *release.Release) string {
	if rel == nil {
		return ""
	}
	return rel.Tag
}
