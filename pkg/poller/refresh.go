package poller

import (
	"slices"
	"sync"

	"github.com/storytold/craft-releases/pkg/release"
)

// Refresh asks the poller to fetch app soon whatever its freshness, as r
// says (schedule.RefreshAt): a GitHub webhook said its releases changed.
// When app is an entry of an app with decisions (SetDecided), its history
// entry is asked for too, without a tag to wait for. A request older than
// the one pending for an entry, or for an entry not configured, is ignored.
// It never blocks, and is safe to call from any goroutine, before or while
// Run runs.
func (p *Poller) Refresh(app string, r release.Refresh) {
	if !slices.Contains(p.keys, app) || r.At.IsZero() {
		return
	}
	p.refreshes.add(app, r)
	if base, _ := release.AppOf(app); p.decided.has(base) {
		if h := (release.App{Key: base}).HistoryEntry().Key; h != app && slices.Contains(p.keys, h) {
			p.refreshes.add(h, release.Refresh{At: r.At})
		}
	}
}

// refreshes are the pending refresh requests: the newest one per app, and
// how many were replaced before their fetch. Its lock is its own, so that
// Refresh never waits on a round. Its methods are safe for concurrent use.
type refreshes struct {
	wake chan struct{} // one pending signal: a request arrived

	mu        sync.Mutex
	pending   map[string]release.Refresh // app key → its newest request
	coalesced int                        // requests replaced before their fetch, not yet taken
}

func newRefreshes() *refreshes {
	return &refreshes{wake: make(chan struct{}, 1), pending: make(map[string]release.Refresh)}
}

// add keeps r as app's request unless the pending one is as new, and
// signals wake.
func (q *refreshes) add(app string, r release.Refresh) {
	q.mu.Lock()
	if old, ok := q.pending[app]; !ok || r.At.After(old.At) {
		if ok {
			q.coalesced++
		}
		q.pending[app] = r
	}
	q.mu.Unlock()
	select {
	case q.wake <- struct{}{}:
	default:
	}
}

// any reports whether a request is pending.
func (q *refreshes) any() bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	return len(q.pending) > 0
}

// get returns app's pending request, if any.
func (q *refreshes) get(app string) (release.Refresh, bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	r, ok := q.pending[app]
	return r, ok
}

// drop forgets app's request r, unless a newer one replaced it.
func (q *refreshes) drop(app string, r release.Refresh) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.pending[app] == r {
		delete(q.pending, app)
	}
}

// takeCoalesced returns how many requests were replaced since its last call.
func (q *refreshes) takeCoalesced() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	n := q.coalesced
	q.coalesced = 0
	return n
}
