package poller

import (
	"context"
	"time"
)

// Tick runs one tick as Run does, for the tests that drive the loop a tick
// at a time.
func (p *Poller) Tick(ctx context.Context) { p.tick(ctx) }

// RefreshRound runs one round of refreshes as Run does while it waits.
func (p *Poller) RefreshRound(ctx context.Context) time.Time { return p.refreshRound(ctx) }
