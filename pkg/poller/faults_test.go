package poller_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/storytold/craft-releases/pkg/poller"
	"github.com/storytold/craft-releases/pkg/release"
	"github.com/storytold/craft-releases/pkg/schedule"
	"github.com/storytold/craft-releases/test/fakeclock"
)

// silentFleet is a Redis that answers no read: each read fails once its
// context's deadline has passed, or its own call timeout when that comes
// first, as the Store's reads do. A deadline, set on the wall clock, is
// taken to fall as long after the tick's start on the fake clock (fake) as
// after it on the wall clock (wall).
type silentFleet struct {
	*fakeFleet
	clock      *fakeclock.Clock
	timeout    time.Duration // each read's own
	wall, fake time.Time
}

func (f *silentFleet) silent(ctx context.Context, op string) error {
	end := f.clock.Now().Add(f.timeout)
	if d, ok := ctx.Deadline(); ok {
		if at := f.fake.Add(d.Sub(f.wall)); at.Before(end) {
			end = at
		}
	}
	if end.After(f.clock.Now()) {
		f.clock.Set(end)
	}
	return fmt.Errorf("%s: %w", op, context.DeadlineExceeded)
}

func (f *silentFleet) ClockOffset(ctx context.Context) (time.Duration, error) {
	return 0, f.silent(ctx, "time")
}

func (f *silentFleet) Load(ctx context.Context, _ []string) (map[string]release.Entry, schedule.Backoff, error) {
	return nil, schedule.Backoff{}, f.silent(ctx, "load")
}

// TestSilentRedisCostsATickOneTimeout: with a Redis gone silent, a tick's
// reads (the clock's measure, then the load) give up together at the call
// timeout, and the tick asks GitHub from memory then, not after a timeout
// for each read.
func TestSilentRedisCostsATickOneTimeout(t *testing.T) {
	const timeout = 5 * time.Second
	fleet := &silentFleet{fakeFleet: newFleet(), timeout: timeout}
	h := newHarness(t, []string{"a"}, nil, true, func(c *poller.Config) { c.Fleet, c.ReadTimeout = fleet, timeout })
	fleet.clock = h.clock
	fleet.wall, fleet.fake = time.Now(), h.clock.Now()
	h.tick(t, 0, answers{"a": fetched("v1", "e1")})
	// The deadline was set a moment after the tick began, on the wall clock.
	slack := time.Since(fleet.wall)
	asked, when := h.source.take()
	if len(asked) != 1 {
		t.Fatalf("asked GitHub %q, want a", asked)
	}
	if took := when[0].Sub(fleet.fake); took > timeout+slack {
		t.Errorf("asked GitHub %v after the tick began, want within the call timeout, %v", took, timeout)
	}
}
