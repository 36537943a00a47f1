package schedule

import (
	"math"
	"time"
)

// Round sums up one round of GitHub requests, as Next needs it.
type Round struct {
	Fetched   int // answers with a release, or a 404
	Unchanged int // 304s
	Failed    int // failed requests
	Apps      int // the apps configured, asked or not

	RateLimited bool      // the round stopped on a rate limit
	RetryAt     time.Time // when RateLimited: GitHub's retry point; zero when unknown
}

// NextBackoff returns the fleet backoff after round r, which ended at now, given the
// backoff prev in force before it (docs/scheduling.md, "The fleet backoff
// after a round"): a rate limit doubles it up to MaxBackoff and never ends it
// before GitHub's retry point + R (a retry point more than MaxBackoff away
// counts as MaxBackoff away); a round with an answer clears it; a round in
// which every request of at least two apps, or of every app, failed doubles
// it from F up to I; any other round leaves prev. Its length is jittered
// ±10 % by the uniform draw u in [0, 1), and nothing overflows.
func NextBackoff(t Timing, prev Backoff, r Round, now time.Time, u float64) Backoff {
	var base time.Duration
	trouble := prev.Trouble
	if trouble < math.MaxInt {
		trouble++
	}
	switch {
	case r.RateLimited:
		until := now.Add(Jittered(doubling(t.Interval, trouble, t.MaxBackoff), 0.1, u))
		if !r.RetryAt.IsZero() {
			// Bounded before adding R: a reset centuries away must not overflow.
			wait := min(max(0, r.RetryAt.Sub(now)), t.MaxBackoff)
			until = later(until, now.Add(wait+t.ResetMargin()))
		}
		return Backoff{Until: until, Trouble: trouble}
	case r.Fetched > 0 || r.Unchanged > 0:
		return Backoff{}
	case r.Failed >= 2 || (r.Failed > 0 && r.Failed >= r.Apps):
		base = doubling(t.FirstRetry(), trouble, t.Interval)
	default:
		return prev
	}
	return Backoff{Until: now.Add(Jittered(base, 0.1, u)), Trouble: trouble}
}

// later returns the later of a and b.
func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}
