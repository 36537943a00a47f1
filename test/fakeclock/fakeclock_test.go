package fakeclock_test

import (
	"slices"
	"testing"
	"time"

	"github.com/storytold/craft-releases/test/fakeclock"
)

var t0 = time.Date(2026, 10, 10, 12, 0, 0, 0, time.UTC)

func fired(ch <-chan time.Time) (time.Time, bool) {
	select {
	case at := <-ch:
		return at, true
	default:
		return time.Time{}, false
	}
}

func TestAfter(t *testing.T) {
	tests := []struct {
		name       string
		wait, move time.Duration // move: Advance after After
		wantFired  bool
		wantLeft   int // Waiters after the move
	}{
		{"zero fires at once", 0, 0, true, 0},
		{"negative fires at once", -time.Second, 0, true, 0},
		{"not reached", 10 * time.Second, 9 * time.Second, false, 1},
		{"reached exactly", 10 * time.Second, 10 * time.Second, true, 0},
		{"passed", 10 * time.Second, time.Minute, true, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := fakeclock.New(t0)
			ch := c.After(tt.wait)
			c.Advance(tt.move)
			at, ok := fired(ch)
			if ok != tt.wantFired {
				t.Fatalf("fired = %v, want %v", ok, tt.wantFired)
			}
			if ok && !at.Equal(c.Now()) {
				t.Errorf("fired with %v, want the clock's time %v", at, c.Now())
			}
			if got := c.Waiters(); got != tt.wantLeft {
				t.Errorf("Waiters() = %d, want %d", got, tt.wantLeft)
			}
		})
	}
}

func TestSetNeverGoesBack(t *testing.T) {
	c := fakeclock.New(t0)
	c.Set(t0.Add(-time.Hour))
	if got := c.Now(); !got.Equal(t0) {
		t.Errorf("Now() after Set to the past = %v, want %v", got, t0)
	}
}

func TestNextAndParked(t *testing.T) {
	c := fakeclock.New(t0)
	if _, ok := c.Next(); ok {
		t.Fatal("Next() reports a deadline with no waiter")
	}
	select {
	case <-c.Parked():
		t.Fatal("Parked() signalled with no waiter")
	default:
	}
	late := c.After(30 * time.Second)
	early := c.After(10 * time.Second)
	select {
	case <-c.Parked():
	default:
		t.Fatal("Parked() did not signal after After")
	}
	next, ok := c.Next()
	if want := t0.Add(10 * time.Second); !ok || !next.Equal(want) {
		t.Fatalf("Next() = %v, %v; want %v, true", next, ok, want)
	}
	c.Set(next)
	if _, ok := fired(early); !ok {
		t.Error("the earlier waiter did not fire at its deadline")
	}
	if _, ok := fired(late); ok {
		t.Error("the later waiter fired before its deadline")
	}
	if got := c.Waiters(); got != 1 {
		t.Errorf("Waiters() = %d, want 1", got)
	}
}

func TestSkipAndOnAfter(t *testing.T) {
	c := fakeclock.New(t0)
	type call struct{ d, now time.Duration }
	var calls []call
	c.OnAfter(func(d time.Duration, now time.Time) { calls = append(calls, call{d, now.Sub(t0)}) })
	c.Skip(2)
	for _, d := range []time.Duration{10 * time.Second, 0, 5 * time.Second} {
		if _, ok := fired(c.After(d)); !ok {
			t.Fatalf("After(%v) with a skip left did not fire at once", d)
		}
	}
	if _, ok := fired(c.After(time.Second)); ok {
		t.Error("After fired at once with no skip left")
	}
	if got := c.Waiters(); got != 1 {
		t.Errorf("Waiters() = %d, want 1", got)
	}
	want := []call{{10 * time.Second, 10 * time.Second}, {0, 10 * time.Second}, {5 * time.Second, 15 * time.Second}, {time.Second, 15 * time.Second}}
	if !slices.Equal(calls, want) {
		t.Errorf("OnAfter calls %v, want %v", calls, want)
	}
	c.Skip(-1)
	for range 3 {
		if _, ok := fired(c.After(time.Minute)); !ok {
			t.Fatal("After did not fire at once after Skip(-1)")
		}
	}
	if got, want := c.Now(), t0.Add(3*time.Minute+15*time.Second); !got.Equal(want) {
		t.Errorf("Now() = %v, want %v", got, want)
	}
}
