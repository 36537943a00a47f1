package clock_test

import (
	"testing"
	"time"

	"github.com/storytold/craft-releases/pkg/clock"
	"github.com/storytold/craft-releases/test/fakeclock"
)

var _ clock.Clock = (*fakeclock.Clock)(nil)

func TestOr(t *testing.T) {
	if clock.Or(nil) != clock.System {
		t.Error("Or(nil) is not System")
	}
	fake := fakeclock.New(time.Unix(0, 0))
	if clock.Or(fake) != clock.Clock(fake) {
		t.Error("Or(fake) is not fake")
	}
}

func TestSystemAfter(t *testing.T) {
	start := clock.System.Now()
	at := <-clock.System.After(time.Millisecond)
	if at.Before(start) {
		t.Errorf("After fired at %v, before %v", at, start)
	}
	select {
	case <-clock.System.After(0):
	case <-time.After(time.Minute):
		t.Error("After(0) did not fire at once")
	}
}
