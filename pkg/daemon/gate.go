package daemon

import "sync/atomic"

// Gate is a readiness flag that /readyz reports. Its zero value is closed
// (not ready). Closing is final, so a late Open during shutdown cannot make a
// stopping process ready again. It is safe for concurrent use.
type Gate struct{ state atomic.Int32 }

const (
	gateNew int32 = iota
	gateOpen
	gateClosed
)

// Open makes /readyz answer 200, unless the gate was closed.
func (g *Gate) Open() { g.state.CompareAndSwap(gateNew, gateOpen) }

// Close makes /readyz answer 503 from now on, as when shutdown begins.
func (g *Gate) Close() { g.state.Store(gateClosed) }

// Ready reports whether the gate is open.
func (g *Gate) Ready() bool { return g.state.Load() == gateOpen }
