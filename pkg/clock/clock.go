// Package clock is the one way the service tells the time and waits, so that
// every loop (the poller's, the hydrator's, the meta refresher's) can be run
// on test/fakeclock at production timings without sleeping.
package clock

import "time"

// Clock tells the time and waits. Implementations are safe for concurrent
// use.
type Clock interface {
	// Now returns the current time.
	Now() time.Time
	// After returns a channel that receives the time once d has passed; at
	// once for d <= 0.
	After(d time.Duration) <-chan time.Time
}

// System is the real clock.
var System Clock = system{}

type system struct{}

func (system) Now() time.Time                         { return time.Now() }
func (system) After(d time.Duration) <-chan time.Time { return time.After(d) }

// Or returns c, or System when c is nil.
func Or(c Clock) Clock {
	if c == nil {
		return System
	}
	return c
}
