package poller

import (
	"time"

	"go.uber.org/zap"

	"github.com/storytold/craft-releases/pkg/release"
	"github.com/storytold/craft-releases/pkg/schedule"
)

// learnQuota keeps the quota an answer announced and paces the schedule
// again (schedule.Pace).
func (p *Poller) learnQuota(a release.Answer, now time.Time) {
	if a.Remaining < 0 && a.Reset.IsZero() {
		return
	}
	if a.Remaining >= 0 {
		p.quota.Remaining = a.Remaining
	}
	if !a.Reset.IsZero() {
		p.quota.Reset = a.Reset
	}
	p.repace(now)
}

// repace works out the effective interval at now, logs when pacing starts
// and ends, and reports a change.
func (p *Poller) repace(now time.Time) {
	next := schedule.Pace(p.timing, len(p.apps), p.quota, now)
	if next == p.interval {
		return
	}
	was := p.interval
	p.interval = next
	p.obs.Paced(next)
	switch configured := p.timing.Interval; {
	case was == configured:
		p.log.Warn("schedule paced to github quota", zap.Duration("interval", next), zap.Duration("configured", configured),
			zap.Int("apps", len(p.apps)), zap.Int("quota_remaining", p.quota.Remaining), zap.Time("quota_reset", p.quota.Reset))
	case next == configured:
		p.log.Info("schedule back to its interval", zap.Duration("interval", next))
	}
}

// paced is the timing that says whether an app is due: the configured one
// at the effective interval. Refresh requests (webhooks) and the fleet
// backoff keep the configured timing: a release announced is first in line.
func (p *Poller) paced() schedule.Timing {
	t := p.timing
	t.Interval = p.interval
	return t
}
