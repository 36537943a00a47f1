package poller

import (
	"context"
	"slices"
	"time"

	"github.com/storytold/craft-releases/pkg/release"
	"github.com/storytold/craft-releases/pkg/schedule"
)

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
	start := p.timer.Now()
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
