package webhook

import (
	"context"
	"sync"
	"time"

	"github.com/storytold/craft-releases/pkg/clock"
	"github.com/storytold/craft-releases/pkg/release"
)

// LocalMemory is how long a Local remembers a delivery id: the three days
// for which GitHub offers to redeliver.
const LocalMemory = 72 * time.Hour

// Local is the Fleet of a standalone API: it remembers delivery ids in
// memory and hands each refresh to the process's own poller. It is safe for
// concurrent use.
type Local struct {
	refresh func(app string, r release.Refresh)
	clock   clock.Clock

	mu   sync.Mutex
	seen map[string]time.Time // delivery id → when first seen
}

// NewLocal returns a Local that calls refresh (the in-process poller's
// Refresh) for every app of a new delivery, remembering ids by c (nil:
// clock.System).
func NewLocal(refresh func(app string, r release.Refresh), c clock.Clock) *Local {
	return &Local{refresh: refresh, clock: clock.Or(c), seen: make(map[string]time.Time)}
}

// Deliver records ids and refreshes apps unless one of them was seen in
// the last LocalMemory. It never fails.
func (l *Local) Deliver(_ context.Context, ids []string, apps []string, r release.Refresh) (bool, error) {
	now := l.clock.Now()
	l.mu.Lock()
	for k, at := range l.seen {
		if now.Sub(at) >= LocalMemory {
			delete(l.seen, k)
		}
	}
	first := true
	for _, id := range ids {
		if _, ok := l.seen[id]; ok {
			first = false
		} else {
			l.seen[id] = now
		}
	}
	l.mu.Unlock()
	if !first {
		return false, nil
	}
	for _, app := range apps {
		l.refresh(app, r)
	}
	return true, nil
}
