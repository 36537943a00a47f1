package clock

import (
	"sync/atomic"
	"time"
)

// Corrected is a clock set to a reference time (Redis's, for the fleet): it
// runs at its base clock's pace, less the offset it was last corrected by.
// Its methods are safe for concurrent use.
type Corrected struct {
	base   Clock
	offset atomic.Int64 // ns the base is ahead of the reference, as corrected
}

// NewCorrected returns a Corrected of base (nil: System), not yet corrected.
func NewCorrected(base Clock) *Corrected { return &Corrected{base: Or(base)} }

// Now returns the base clock's time less the correction.
func (c *Corrected) Now() time.Time { return c.base.Now().Add(-c.Offset()) }

// After waits d on the base clock.
func (c *Corrected) After(d time.Duration) <-chan time.Time { return c.base.After(d) }

// Offset returns the correction in force: how far the base clock is taken
// to run ahead of the reference.
func (c *Corrected) Offset() time.Duration { return time.Duration(c.offset.Load()) }

// Correct takes residual, how far Now ran ahead of the reference at a
// measurement, and returns the base clock's whole offset from it. A base
// within margin of the reference is not corrected (the offset in force goes
// back to 0); one further off is set to the reference, and kept steady
// against a measurement's noise (a change of a second or less is ignored),
// so that Now never jumps back by a round trip's jitter.
func (c *Corrected) Correct(residual, margin time.Duration) (offset time.Duration) {
	cur := c.Offset()
	offset = cur + residual
	switch {
	case offset.Abs() <= margin:
		c.offset.Store(0)
	case (offset - cur).Abs() > time.Second:
		c.offset.Store(int64(offset))
	}
	return offset
}

// Base returns the clock beneath c's correction: the base of a Corrected,
// else c itself (nil: System). It is the clock to measure waits and elapsed
// time on, since a correction moves Now by the size of a step of the
// reference clock (docs/redis.md, "Time you cannot trust"), and the clock a
// process's own answers are dated by.
func Base(c Clock) Clock {
	if k, ok := c.(*Corrected); ok {
		return k.base
	}
	return Or(c)
}
