package schedule

import (
	"math"
	"time"
)

// Quota is what is known of GitHub's quota for the fleet's token.
type Quota struct {
	PerHour   float64   // GitHub's hourly quota (5,000 with a token); 0: unknown
	Remaining int       // x-ratelimit-remaining of the last answer that had it; -1: unknown
	Reset     time.Time // x-ratelimit-reset of that answer; zero: unknown
}

// MaxResetAhead is how far ahead of now an x-ratelimit-reset is believed:
// GitHub's quota window is an hour, and the rest is a margin for clocks a
// little apart. A reset further ahead says nothing of the quota, however
// little is said to be left.
const MaxResetAhead = time.Hour + 5*time.Minute

// Pace is the interval at which apps apps ask GitHub no more than q allows,
// and never less than t.Interval nor more than t.MaxBackoff: the fleet's
// effective interval, the configured schedule stretched evenly over every
// app when it is too large for the quota (docs/scheduling.md, "Pacing to the quota").
// Two limits stretch it, each planning on QuotaShare of what it counts:
//
//   - the hourly quota, when known: SafeInterval(apps, q.PerHour);
//   - what is left until the reset, when an answer said so and the reset is
//     ahead, by no more than MaxResetAhead:
//     apps × (q.Reset − now) / (I − M) ≤ QuotaShare × q.Remaining,
//     so that a token shared with other clients, or a quota spent by a
//     burst, is spread over the rest of its window. A quota of 0 left is
//     the rate limit's, which the fleet backoff answers.
//
// The cap at t.MaxBackoff (or t.Interval, if that is longer) keeps every
// app asked at least that often, so that an answer can tell the quota came
// back; the arithmetic saturates at the cap instead of overflowing. It is a
// pure function, safe for concurrent use.
func Pace(t Timing, apps int, q Quota, now time.Time) time.Duration {
	paced := t.Interval
	if apps <= 0 {
		return paced
	}
	limit := max(t.Interval, t.MaxBackoff)
	if q.PerHour > 0 {
		paced = max(paced, SafeInterval(apps, q.PerHour))
	}
	if window := q.Reset.Sub(now); q.Remaining > 0 && window > 0 && window <= MaxResetAhead {
		period := float64(apps) * window.Seconds() / (QuotaShare * float64(q.Remaining))
		paced = max(paced, intervalFor(period, limit))
	}
	return min(paced, limit)
}

// intervalFor is the shortest whole-second interval I whose I − M is at
// least period seconds, or limit when that is shorter: at most 30 steps
// from period itself, since M ≤ 30 s.
func intervalFor(period float64, limit time.Duration) time.Duration {
	if period >= limit.Seconds() {
		return limit
	}
	p := time.Duration(math.Ceil(period * float64(time.Second)))
	i := p.Truncate(time.Second)
	for i-(Timing{Interval: i}).SkewMargin() < p {
		i += time.Second
	}
	return i
}
