package poller

import (
	"context"
	"slices"
	"sync"

	"github.com/storytold/craft-releases/pkg/release"
)

// SetDecided sets the apps, by app key, that operators have decided
// something about (release.Bulletin.Decisions): only their history entries
// (release.App.HistoryEntry) are polled, read, repaired and refreshed, so
// that the other apps cost nothing more (docs/scheduling.md, "Release
// history"). An app that gains a decision is asked about at the next tick
// when its history is not fresh; one that loses it is no longer asked about,
// its history kept as it was. Keys of apps not configured are ignored. It
// never blocks on a round, and is safe to call from any goroutine, before
// or while Run runs.
func (p *Poller) SetDecided(apps []string) {
	set := make(map[string]bool, len(apps))
	for _, a := range apps {
		set[a] = true
	}
	p.decided.mu.Lock()
	p.decided.apps = set
	p.decided.mu.Unlock()
}

// decided is the set SetDecided last set, with its own lock.
type decided struct {
	mu   sync.Mutex
	apps map[string]bool
}

// has reports whether app (an app's key) has decisions.
func (d *decided) has(app string) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.apps[app]
}

// polled reports whether the entry app is polled now: every entry but the
// history entries of apps without decisions, unless a refresh request
// names one (an operator's verb files one as it decides, before this
// poller reads the decision from MySQL).
func (p *Poller) polled(app release.App) bool {
	if app.Channel != release.HistoryChannel {
		return true
	}
	base, _ := release.AppOf(app.Key)
	if p.decided.has(base) {
		return true
	}
	_, asked := p.refreshes.get(app.Key)
	return asked
}

// polledApps returns the entries a round asks about, in configured order, and
// their keys (polled).
func (p *Poller) polledApps() ([]release.App, []string) {
	apps := make([]release.App, 0, len(p.apps))
	keys := make([]string, 0, len(p.apps))
	for _, a := range p.apps {
		if p.polled(a) {
			apps, keys = append(apps, a), append(keys, a.Key)
		}
	}
	return apps, keys
}

// keepHistory returns the history a new answer brought, hist, with the
// companions of was that still belong to its releases (keep, by tag).
func keepHistory(was, hist *release.History) *release.History {
	if was == nil || hist == nil || was.Companions == nil {
		return hist
	}
	add := map[string]*release.Companions{}
	for _, r := range hist.Companioned() {
		i := slices.IndexFunc(was.List(), func(o *release.Release) bool { return o.Tag == r.Tag })
		if i < 0 {
			continue
		}
		if c := keep(was.Releases[i], was.CompanionsOf(r.Tag), r); c != nil {
			add[r.Tag] = c
		}
	}
	return hist.WithCompanions(add)
}

// historyRefs returns the companion refs of each release of a history
// answer, by tag.
func historyRefs(assets map[string]map[string]release.AssetRef) map[string]companionRefs {
	out := make(map[string]companionRefs, len(assets))
	for tag, refs := range assets {
		out[tag] = companionRefs{tag: tag, refs: refs}
	}
	return out
}

// needsHistoryRefs reports whether e, a history entry, holds a release
// whose companions are kept and missing, and whose asset ids this poller
// does not know (needsRefs).
func (p *Poller) needsHistoryRefs(key string, e release.Entry) bool {
	if p.companionsOf == nil {
		return false
	}
	for _, r := range e.History.Companioned() {
		if _, ok := p.histRefs[key][r.Tag]; ok {
			continue
		}
		have := e.History.CompanionsOf(r.Tag)
		names := p.companionsOf(r)
		for _, name := range names[:min(len(names), release.MaxCompanions)] {
			if _, ok := have.Get(name); !ok {
				return true
			}
		}
	}
	return false
}

// historyCompanions fetches, as companions does for a release, the
// companions that app's history lacks of each release it keeps them of,
// and shares them with the history (storeHistoryCompanions). It reports
// whether the round must stop.
func (p *Poller) historyCompanions(ctx context.Context, app release.App, r *round) (stop bool) {
	e := p.entries[app.Key]
	if p.companionsOf == nil || e.History == nil || r.held {
		return false
	}
	byTag := p.histRefs[app.Key]
	got := map[string]*release.Companions{}
	for _, rel := range e.History.Companioned() {
		refs, ok := byTag[rel.Tag]
		if !ok {
			continue
		}
		texts, halt := p.fetchCompanions(ctx, app, rel, e.History.CompanionsOf(rel.Tag), &refs, r)
		byTag[rel.Tag] = refs
		if len(texts) > 0 {
			got[rel.Tag] = release.NewCompanions(texts)
		}
		if halt {
			stop = true
			break
		}
	}
	p.storeHistoryCompanions(ctx, app.Key, e, got, r)
	return stop
}

// storeHistoryCompanions adds the companions got, by tag, to e's history,
// shares the entry and merges it, as storeCompanions does.
func (p *Poller) storeHistoryCompanions(ctx context.Context, key string, e release.Entry, got map[string]*release.Companions, r *round) {
	if len(got) == 0 {
		return
	}
	e.History = e.History.WithCompanions(got)
	changed := p.fleet == nil
	if r.mode != Standalone && p.fleet != nil && ctx.Err() == nil {
		p.put(ctx, OpPutFetch, p.publishFetch(&changed), key, e, r)
	}
	p.merge(key, e)
	if changed {
		p.tellChanges(key, e, e)
	}
}
