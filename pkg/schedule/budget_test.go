package schedule

import (
	"slices"
	"testing"
	"time"
)

// TestBudget: a Budget lets Burst requests through at once, then one every
// Every, and a request made over it moves the next by at most a whole
// budget.
func TestBudget(t *testing.T) {
	t0 := time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)
	b := Budget{Burst: 4, Every: 10 * time.Second}
	var k Bucket
	if next := b.Next(k); !next.IsZero() {
		t.Fatalf("a whole budget: Next %v, want zero", next)
	}
	// Whatever fits, as soon as it fits: count the requests in 30 s when
	// something asks all the time.
	var made []time.Duration
	for at := t0; at.Before(t0.Add(30 * time.Second)); at = at.Add(100 * time.Millisecond) {
		if !b.Next(k).After(at) {
			b.Spend(&k, at)
			made = append(made, at.Sub(t0))
		}
	}
	want := []time.Duration{0, 100 * time.Millisecond, 200 * time.Millisecond, 300 * time.Millisecond, 10 * time.Second, 20 * time.Second}
	if !slices.Equal(made, want) {
		t.Fatalf("requests at %v, want %v", made, want)
	}
	// After a quiet minute it is whole again.
	if next := b.Next(k); next.After(t0.Add(90 * time.Second)) {
		t.Errorf("Next %v, want it whole by a minute later", next)
	}

	// Requests spent over the budget (peers that had not seen each other)
	// owe at most one whole budget.
	var over Bucket
	for range 100 {
		b.Spend(&over, t0)
	}
	if next, most := b.Next(over), t0.Add(b.Every); !next.Equal(most) {
		t.Errorf("after 100 requests at once, Next %v, want %v: one whole budget owed, no more", next.Sub(t0), most.Sub(t0))
	}
}
