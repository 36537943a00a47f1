package poller

import (
	"context"
	"time"

	"go.uber.org/zap"

	"github.com/storytold/craft-releases/pkg/clock"
	"github.com/storytold/craft-releases/pkg/logsafe"
	"github.com/storytold/craft-releases/pkg/outage"
)

// redisHealth tells when Redis goes down and comes back (outage.Tracker).
// Redis is back only after a whole tick without an error, so that writes
// refused while reads work (READONLY after a failover) are one outage, not
// a warning and a recovery every tick. Only rounds and the start-up load
// use it, under the Poller's mu.
type redisHealth struct {
	tracker        outage.Tracker
	worked, failed bool // a call of this tick worked, failed
	log            *zap.Logger
	obs            Observer
	timer          clock.Clock
}

// startTick forgets the calls of the last tick.
func (h *redisHealth) startTick() { h.worked, h.failed = false, false }

// down notes a failure of op, a call that started at start. Errors caused
// by our own cancellation are not an outage.
func (h *redisHealth) down(ctx context.Context, op Op, err error, start time.Time) {
	if ctx.Err() != nil {
		return
	}
	h.obs.RedisError(op)
	h.failed = true
	h.tracker.Down(h.log, start, h.timer.Now(), "redis unavailable", logsafe.NamedError("err", err))
}

// up notes that a call worked; the outage, if any, ends with the tick.
func (h *redisHealth) up() { h.worked = true }

// endTick ends the outage, if any, when the tick used Redis without an
// error.
func (h *redisHealth) endTick() {
	if h.worked && !h.failed {
		h.tracker.Up(h.log, h.timer.Now(), "redis is back")
	}
}
