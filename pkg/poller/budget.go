package poller

import (
	"time"

	"go.uber.org/zap"

	"github.com/storytold/craft-releases/pkg/release"
	"github.com/storytold/craft-releases/pkg/schedule"
)

// Why a refresh request did not cost a GitHub request at once, as told to
// Observer.RefreshesDeferred (docs/scheduling.md, "The refresh budget").
const (
	Coalesced   = "coalesced"    // replaced by a newer request before its fetch
	AppBudget   = "app_budget"   // held back by the app's budget
	FleetBudget = "fleet_budget" // held back by the fleet's budget
)

// budgets is what the refresh budgets have spent: every refresh request we
// made, and every claim of a peer's we read from the Fleet while a refresh
// request was pending, so that every poller spends one budget for the whole
// fleet without a key of its own. Guarded by the Poller's mu.
type budgets struct {
	app     map[string]schedule.Bucket
	fleet   schedule.Bucket
	counted map[string]time.Time       // app → the last request counted
	held    map[string]release.Refresh // app → the request held back, counted once
}

func newBudgets() budgets {
	return budgets{app: make(map[string]schedule.Bucket), counted: make(map[string]time.Time), held: make(map[string]release.Refresh)}
}

// refreshAt is schedule.RefreshAt for app's request r, put off until both
// budgets have room; held names the budget that put it off ("" for none).
func (p *Poller) refreshAt(key string, r release.Refresh, now time.Time) (at, point time.Time, held string, ok bool) {
	at, point, ok = schedule.RefreshAt(p.timing, r, p.entries[key], now)
	if !ok {
		return at, point, "", false
	}
	if b := schedule.AppBudget.Next(p.budgets.app[key]); b.After(at) {
		at, held = b, AppBudget
	}
	if b := schedule.FleetBudget.Next(p.budgets.fleet); b.After(at) {
		at, held = b, FleetBudget
	}
	return at, point, held, true
}

// spend counts a request about app made at at against both budgets, unless
// one at or after at was counted already (our own claim, read back).
func (p *Poller) spend(key string, at time.Time) {
	if !at.After(p.budgets.counted[key]) {
		return
	}
	p.budgets.counted[key] = at
	b := p.budgets.app[key]
	schedule.AppBudget.Spend(&b, at)
	p.budgets.app[key] = b
	schedule.FleetBudget.Spend(&p.budgets.fleet, at)
}

// mergeShared merges e, app's entry as read from the Fleet, first counting a
// claim in it that a peer made, when a refresh request for app is pending:
// most likely the peer's fetch for an earlier request, and one the budgets
// must see whatever request it was for. A claim from long ago, spent at its
// time, leaves the budgets as they were.
func (p *Poller) mergeShared(key string, e release.Entry) {
	if _, ok := p.pendingRefresh(key); ok {
		p.spend(key, e.ClaimedAt)
	}
	p.merge(key, e)
}

// hold notes that app's request r waits for the budget named by why: counted
// once per request, and logged when the app starts waiting.
func (p *Poller) hold(key string, r release.Refresh, why string, until time.Time) {
	if old, ok := p.budgets.held[key]; ok && old == r {
		return
	} else if !ok {
		p.log.Info("webhook refresh held back by budget", zap.String("app", key), zap.String("budget", why),
			zap.Time("until", until))
	}
	p.budgets.held[key] = r
	p.obs.RefreshesDeferred(why, 1)
}

// unhold forgets that app waited for a budget.
func (p *Poller) unhold(key string) { delete(p.budgets.held, key) }

// reportCoalesced tells the Observer about the requests that Refresh replaced
// since the last call.
func (p *Poller) reportCoalesced() {
	p.rmu.Lock()
	n := p.coalesced
	p.coalesced = 0
	p.rmu.Unlock()
	if n > 0 {
		p.log.Debug("webhook refreshes coalesced", zap.Int("requests", n))
		p.obs.RefreshesDeferred(Coalesced, n)
	}
}
