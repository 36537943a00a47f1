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

	RateLimited bool      // the round stopped on a rate limit
	RetryAt     time.Time // when RateLimited: GitHub's retry point; zero when unknown
}

// Next returns the fleet backoff after round r, which ended at now, given the
// backoff prev in force before it (poller.md, "Backoff after a round"):
//
//   - rate limited: one more bad round; the backoff lasts
//     min(max(wait_for_reset + R, I × 2^(trouble−1)), MaxBackoff);
//   - at least one fetch or 304: trouble 0 and no backoff;
//   - every request failed: one more bad round; the backoff lasts
//     min(F × 2^(trouble−1), I);
//   - no request at all (nothing was due, or every due app was skipped): the
//     round says nothing of GitHub, so prev is returned unchanged.
//
// The backoff's length is jittered by ±10 % with the uniform draw u in [0, 1).
// Doubling saturates: a huge trouble count gives the cap, never an overflow.
func Next(t Timing, prev Backoff, r Round, now time.Time, u float64) Backoff {
	var base time.Duration
	trouble := prev.Trouble
	if trouble < math.MaxInt {
		trouble++
	}
	switch {
	case r.RateLimited:
		// Bounded before adding R: a reset centuries away must not overflow.
		wait := min(max(0, r.RetryAt.Sub(now)), t.MaxBackoff)
		base = min(max(wait+t.ResetMargin(), doubling(t.Interval, trouble, t.MaxBackoff)), t.MaxBackoff)
	case r.Fetched > 0 || r.Unchanged > 0:
		return Backoff{}
	case r.Failed > 0:
		base = doubling(t.FirstRetry(), trouble, t.Interval)
	default:
		return prev
	}
	return Backoff{Until: now.Add(Jittered(base, 0.1, u)), Trouble: trouble}
}
