// Package fakeclock is a clock for tests that moves only when told to. It
// satisfies clock.Clock: Now reads the simulated time, and After returns a
// channel that fires when the clock is moved to or past the deadline. A
// simulation moves it with Set, after Waiters says that every goroutine it
// drives is parked on the clock. Code that a test runs in its own goroutine
// gets its waits passed at once with Skip.
package fakeclock

import (
	"slices"
	"sync"
	"time"
)

// Clock is a simulated clock. Create one with New. Its methods are safe for
// concurrent use.
type Clock struct {
	mu      sync.Mutex
	now     time.Time
	waiters []waiter
	parked  chan struct{}
	skip    int                                  // waits left to pass at once; < 0: all
	onAfter func(d time.Duration, now time.Time) // nil: none
}

type waiter struct {
	at time.Time
	ch chan time.Time
}

// New returns a Clock that reads start until it is moved.
func New(start time.Time) *Clock {
	return &Clock{now: start, parked: make(chan struct{}, 1)}
}

// Now returns the simulated time.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// After returns a channel that receives the simulated time once the clock
// has been moved d past now. For d <= 0 the channel is ready at once and no
// waiter is registered; so it is for a wait that Skip passes, which moves
// the clock d forward first. A waiter is dropped only when it fires: one
// whose receiver gave up still counts in Waiters until the clock passes it.
// The function given to OnAfter, if any, is called before After returns.
func (c *Clock) After(d time.Duration) <-chan time.Time {
	ch := make(chan time.Time, 1)
	c.mu.Lock()
	switch {
	case d <= 0:
		ch <- c.now
	case c.skip != 0:
		c.skip--
		c.now = c.now.Add(d)
		ch <- c.now
	default:
		c.waiters = append(c.waiters, waiter{at: c.now.Add(d), ch: ch})
		select {
		case c.parked <- struct{}{}:
		default:
		}
	}
	now, onAfter := c.now, c.onAfter
	c.mu.Unlock()
	if onAfter != nil {
		onAfter(d, now)
	}
	return ch
}

// Skip makes After pass the next n positive waits at once (every one for
// n < 0), as if the time had gone by: each moves the clock forward by its
// wait and returns a ready channel. Code that runs in the test's own
// goroutine then never blocks on the clock. Later waits are registered as
// usual.
func (c *Clock) Skip(n int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.skip = n
}

// OnAfter makes every later call of After call f, outside the clock's lock
// and before it returns, with the wait asked for and the time the clock
// reads then (moved already when Skip passed the wait). A test records the
// waits with it, or acts at a simulated moment, such as cancelling.
func (c *Clock) OnAfter(f func(d time.Duration, now time.Time)) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.onAfter = f
}

// Set moves the clock to at and fires every waiter whose deadline is at or
// before it. A time before now leaves the clock where it is, so it never
// runs backwards.
func (c *Clock) Set(at time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if at.After(c.now) {
		c.now = at
	}
	c.waiters = slices.DeleteFunc(c.waiters, func(w waiter) bool {
		if w.at.After(c.now) {
			return false
		}
		w.ch <- c.now
		return true
	})
}

// Advance moves the clock d forward, as Set(Now().Add(d)).
func (c *Clock) Advance(d time.Duration) {
	c.Set(c.Now().Add(d))
}

// Waiters returns how many channels returned by After have not fired yet.
func (c *Clock) Waiters() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.waiters)
}

// Next returns the earliest deadline among the waiters, and false when
// there are none.
func (c *Clock) Next() (time.Time, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.waiters) == 0 {
		return time.Time{}, false
	}
	next := c.waiters[0].at
	for _, w := range c.waiters[1:] {
		if w.at.Before(next) {
			next = w.at
		}
	}
	return next, true
}

// Parked returns a channel that receives a value after a waiter was
// registered by After. Signals coalesce: one value may stand for several
// waiters, so a receiver reads Waiters again after each.
func (c *Clock) Parked() <-chan struct{} { return c.parked }
