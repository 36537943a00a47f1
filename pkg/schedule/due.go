package schedule

import (
	"time"

	"github.com/storytold/craft-releases/pkg/release"
)

// Due reports whether the app whose state is e should be asked about at now
// (docs/scheduling.md, "Is an app due?"):
//
//  1. fetched (or confirmed by a 304) less than I − M ago → not due;
//  2. else, failing with n failures in a row, the last one less than
//     min(F × 2^(n−1), I) − M ago → not due;
//  3. else due; an app never fetched and never failed is due.
//
// A time ahead of now by up to release.MaxSkew (another process's clock
// running a little fast) has age 0; one further ahead is not believed
// (release.Believed) and counts as never, so that a clock set back makes
// nothing wait for the size of the step.
func Due(t Timing, e release.Entry, now time.Time) bool {
	m := t.SkewMargin()
	if e.Fetched() && release.Believed(e.FetchedAt, now) && age(e.FetchedAt, now) < t.Interval-m {
		return false
	}
	if e.Failing() && release.Believed(e.FailedAt, now) && age(e.FailedAt, now) < t.RetryWait(e.Failures)-m {
		return false
	}
	return true
}

// age is max(0, now − at).
func age(at, now time.Time) time.Duration { return max(0, now.Sub(at)) }
