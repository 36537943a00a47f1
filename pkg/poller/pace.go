package poller

import (
	"time"

	"go.uber.org/zap"

	"github.com/storytold/craft-releases/pkg/release"
	"github.com/storytold/craft-releases/pkg/schedule"
)

// pace is the effective interval: the configured one, stretched while
// GitHub's quota asks for it (docs/scheduling.md, "Pacing to the quota").
// Only New and rounds use it, under the Poller's mu.
type pace struct {
	timing   schedule.Timing // the configured one
	apps     int
	quota    schedule.Quota
	interval time.Duration // the effective interval
	log      *zap.Logger
	obs      Observer
}

// learn keeps the quota answer a announced and paces the schedule again.
func (c *pace) learn(a release.Answer, now time.Time) {
	if a.Remaining < 0 && a.Reset.IsZero() {
		return
	}
	if a.Remaining >= 0 {
		c.quota.Remaining = a.Remaining
	}
	if !a.Reset.IsZero() {
		c.quota.Reset = a.Reset
	}
	c.update(now)
}

// update works out the effective interval at now (schedule.Pace), logs
// when pacing starts and ends, and reports a change.
func (c *pace) update(now time.Time) {
	next := schedule.Pace(c.timing, c.apps, c.quota, now)
	if next == c.interval {
		return
	}
	was := c.interval
	c.interval = next
	c.obs.Paced(next)
	switch configured := c.timing.Interval; {
	case was == configured:
		c.log.Warn("schedule paced to github quota", zap.Duration("interval", next), zap.Duration("configured", configured),
			zap.Int("apps", c.apps), zap.Int("quota_remaining", c.quota.Remaining), zap.Time("quota_reset", c.quota.Reset))
	case next == configured:
		c.log.Info("schedule back to its interval", zap.Duration("interval", next))
	}
}

// paced is the timing that says whether an app is due: the configured one
// at the effective interval. Refresh requests (webhooks) and the fleet
// backoff keep the configured timing: a release announced is first in line.
func (c *pace) paced() schedule.Timing {
	t := c.timing
	t.Interval = c.interval
	return t
}
