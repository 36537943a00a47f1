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

// budgets are the refresh budgets as this poller has spent them
// (docs/scheduling.md, "The refresh budget"): every refresh request it
// made, and every claim of a peer's it read from the Fleet while a refresh
// request was pending, so that every poller spends one budget for the
// whole fleet without a key of its own. Only rounds use them, under the
// Poller's mu.
type budgets struct {
	timing  schedule.Timing // the configured one: refreshes are not paced
	app     map[string]schedule.Bucket
	fleet   schedule.Bucket
	counted map[string]time.Time       // app → the last request counted
	held    map[string]release.Refresh // app → the request held back, reported once
	log     *zap.Logger
	obs     Observer
}

func newBudgets(t schedule.Timing, log *zap.Logger, obs Observer) *budgets {
	return &budgets{
		timing: t, log: log, obs: obs,
		app: make(map[string]schedule.Bucket), counted: make(map[string]time.Time), held: make(map[string]release.Refresh),
	}
}

// refreshAt is schedule.RefreshAt for app's request r, app's entry being e,
// put off until both budgets have room; held names the budget that put it
// off ("" for none).
func (b *budgets) refreshAt(key string, r release.Refresh, e release.Entry, now time.Time) (at, point time.Time, held string, ok bool) {
	at, point, ok = schedule.RefreshAt(b.timing, r, e, now)
	if !ok {
		return at, point, "", false
	}
	if next := schedule.AppBudget.Next(b.app[key]); next.After(at) {
		at, held = next, AppBudget
	}
	if next := schedule.FleetBudget.Next(b.fleet); next.After(at) {
		at, held = next, FleetBudget
	}
	return at, point, held, true
}

// spend counts a request about app made at at against both budgets, unless
// one at or after at was counted already (our own claim, read back).
func (b *budgets) spend(key string, at time.Time) {
	if !at.After(b.counted[key]) {
		return
	}
	b.counted[key] = at
	k := b.app[key]
	schedule.AppBudget.Spend(&k, at)
	b.app[key] = k
	schedule.FleetBudget.Spend(&b.fleet, at)
}

// hold notes that app's request r waits until until for the budget named
// by why: reported once per request, and logged when the app starts
// waiting.
func (b *budgets) hold(key string, r release.Refresh, why string, until time.Time) {
	if old, ok := b.held[key]; ok && old == r {
		return
	} else if !ok {
		b.log.Info("webhook refresh held back by budget", zap.String("app", key), zap.String("budget", why),
			zap.Time("until", until))
	}
	b.held[key] = r
	b.obs.RefreshesDeferred(why, 1)
}

// unhold forgets that app waited for a budget.
func (b *budgets) unhold(key string) { delete(b.held, key) }
