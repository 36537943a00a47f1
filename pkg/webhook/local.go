package webhook

import (
	"context"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/storytold/craft-releases/pkg/clock"
	"github.com/storytold/craft-releases/pkg/release"
)

// The memory of a Local.
const (
	// LocalMemory is how long a Local remembers a delivery: the three days
	// for which GitHub offers to redeliver.
	LocalMemory = 72 * time.Hour
	// LocalCap is the most ids a Local remembers; past it the oldest are
	// forgotten. A delivery that is new adds two (its id and its body's
	// hash), and only a sender holding the secret can make one: 10,000 is
	// two months of an organisation's releases, in about 1.5 MB.
	LocalCap = 10_000
	// localSweep is how often a Local forgets what is past LocalMemory.
	localSweep = time.Minute
)

// Local is the Recorder of a standalone API: it remembers deliveries in
// memory and hands each refresh to the process's own poller. Run sweeps the
// memory. It is safe for concurrent use.
type Local struct {
	refresh func(app string, r release.Refresh)
	clock   clock.Clock

	mu    sync.Mutex
	seen  map[string]time.Time // id → when it was recorded
	order []recorded           // seen in the order recorded, oldest first
}

// recorded is an id as recorded at a time; the id recorded again since
// makes it stale (seen holds another time).
type recorded struct {
	id string
	at time.Time
}

// NewLocal returns a Local that calls refresh (the in-process poller's
// Refresh) for every app of a new delivery, remembering ids by c (nil:
// clock.System).
func NewLocal(refresh func(app string, r release.Refresh), c clock.Clock) *Local {
	return &Local{refresh: refresh, clock: clock.Or(c), seen: make(map[string]time.Time)}
}

// Deliver hands each of refreshes to the poller unless one of ids was
// recorded in the last LocalMemory, and then records nothing; otherwise it
// records every id. It never fails.
func (l *Local) Deliver(_ context.Context, ids []string, refreshes map[string]release.Refresh) (bool, error) {
	now := l.clock.Now()
	l.mu.Lock()
	for _, id := range ids {
		if at, ok := l.seen[id]; ok && now.Sub(at) < LocalMemory {
			l.mu.Unlock()
			return false, nil
		}
	}
	for _, id := range ids {
		l.seen[id] = now
		l.order = append(l.order, recorded{id, now})
	}
	for len(l.seen) > LocalCap {
		l.forget(l.order[0])
		l.order = l.order[1:]
	}
	l.mu.Unlock()
	for _, key := range slices.Sorted(maps.Keys(refreshes)) {
		l.refresh(key, refreshes[key])
	}
	return true, nil
}

// Len is how many ids the Local remembers.
func (l *Local) Len() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.seen)
}

// Run forgets, every minute until ctx ends, the ids recorded more than
// LocalMemory ago; it returns nil.
func (l *Local) Run(ctx context.Context) error {
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-l.clock.After(localSweep):
			l.sweep()
		}
	}
}

// sweep forgets what is past LocalMemory: the oldest ids, at the front.
func (l *Local) sweep() {
	now := l.clock.Now()
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for n < len(l.order) && now.Sub(l.order[n].at) >= LocalMemory {
		l.forget(l.order[n])
		n++
	}
	l.order = append([]recorded(nil), l.order[n:]...)
}

// forget deletes r's id from seen unless it was recorded again since; l.mu
// is held.
func (l *Local) forget(r recorded) {
	if l.seen[r.id].Equal(r.at) {
		delete(l.seen, r.id)
	}
}
