// Package schedule holds the poller's pure rules (docs/scheduling.md): when an app is
// due, the fleet backoff after a round, and jitter. Nothing here sleeps, reads
// a clock or does I/O; the caller passes now and the random draws.
package schedule

import (
	"math"
	"time"
)

// Timing is the poller's configured timing.
type Timing struct {
	Interval      time.Duration // I: the poll interval
	MaxBackoff    time.Duration // the longest fleet backoff and effective interval, at least Interval
	Tick          time.Duration // between two ticks, jittered ±10 %
	Spacing       time.Duration // between two GitHub requests of one round
	StartupJitter time.Duration // the first tick waits a uniform 0…this
}

// Backoff is the fleet-wide pause after bad rounds. The zero value is none.
type Backoff struct {
	Until   time.Time // no GitHub request before this; zero: no backoff
	Trouble int       // bad rounds in a row, fleet-wide
}

// Active reports whether the backoff forbids requests at now.
func (b Backoff) Active(now time.Time) bool { return b.Until.After(now) }

// SkewMargin is M = min(30 s, I/4): another pod's fetch counts as fresh until
// it is I − M old, so clocks a little apart do not make an app due twice.
func (t Timing) SkewMargin() time.Duration { return min(30*time.Second, t.Interval/4) }

// ClaimWindow is C = min(60 s, I/2): how long a claim keeps other pollers off an app.
func (t Timing) ClaimWindow() time.Duration { return min(time.Minute, t.Interval/2) }

// FirstRetry is F = min(60 s, I): the wait after an app's first failure, and
// the base of the backoff after a round in which every request failed.
func (t Timing) FirstRetry() time.Duration { return min(time.Minute, t.Interval) }

// ResetMargin is R = min(60 s, I), added after GitHub's announced reset.
func (t Timing) ResetMargin() time.Duration { return min(time.Minute, t.Interval) }

// TickDelay is the wait before the next tick: Tick jittered by ±10 % with the
// uniform draw u in [0, 1).
func (t Timing) TickDelay(u float64) time.Duration { return Jittered(t.Tick, 0.1, u) }

// StartupDelay is the wait before the first tick: uniform in 0…StartupJitter
// for the uniform draw u in [0, 1).
func (t Timing) StartupDelay(u float64) time.Duration {
	return time.Duration(float64(t.StartupJitter) * u)
}

// Jittered returns d × (1 + f × (2u − 1)): d spread by up to ±f for the uniform
// draw u in [0, 1). u = 0.5 returns d itself.
func Jittered(d time.Duration, f, u float64) time.Duration {
	return d + time.Duration(float64(d)*f*(2*u-1))
}

// RetryWait is how long after its n-th failure in a row a request is asked
// again: min(F × 2^(n−1), I), the per-app retry of Due, which a release's
// companion asset also follows (docs/github.md, "Companion assets").
func (t Timing) RetryWait(n int) time.Duration { return doubling(t.FirstRetry(), n, t.Interval) }

// doubling returns min(base × 2^(n−1), limit) for n ≥ 1 (n < 1 counts as 1).
// It saturates at limit instead of overflowing, however large n is.
func doubling(base time.Duration, n int, limit time.Duration) time.Duration {
	d := base
	for ; n > 1 && d > 0 && d < limit; n-- {
		if d > limit/2 {
			return limit
		}
		d *= 2
	}
	return min(d, limit)
}

// RequestsPerHour is the fleet's steady-state GitHub requests an hour for
// apps apps: each app is asked again once its fetch is I − M old, so
// apps × 3600 s / (I − M), whatever the number of pollers sharing the work
// (retries of failing apps and 304s included, since GitHub counts those
// without a token). It is 0 for no apps or an interval no longer than M.
func (t Timing) RequestsPerHour(apps int) float64 {
	period := t.Interval - t.SkewMargin()
	if apps <= 0 || period <= 0 {
		return 0
	}
	return float64(apps) * float64(time.Hour) / float64(period)
}

// QuotaShare is the part of GitHub's quota that SafeInterval lets the
// schedule plan on. The rest is headroom for what the steady state does not
// count: per-app retries, restarts, a second poller's request when a claim
// lapses. A schedule planned at the whole quota is rate-limited by the first
// of them.
const QuotaShare = 0.8

// SafeInterval is the shortest whole-second interval I at which apps apps
// ask no more than QuotaShare of quota requests an hour
// (RequestsPerHour(apps) ≤ QuotaShare × quota), or 0 when quota is not
// positive.
func SafeInterval(apps int, quota float64) time.Duration {
	if quota <= 0 {
		return 0
	}
	if apps <= 0 {
		return time.Second
	}
	planned := QuotaShare * quota
	for i := time.Duration(math.Ceil(float64(apps)*3600/planned)) * time.Second; ; i += time.Second {
		if (Timing{Interval: i}).RequestsPerHour(apps) <= planned {
			return i
		}
	}
}
