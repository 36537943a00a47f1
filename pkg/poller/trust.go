package poller

import (
	"context"
	"fmt"
	"time"

	"go.uber.org/zap"

	"github.com/storytold/craft-releases/pkg/logsafe"
	"github.com/storytold/craft-releases/pkg/release"
)

// notFoundDrops is how many 404s in a row, over a whole interval at least,
// make an app that has a release "no release" (docs/scheduling.md, "A 404
// is evidence, not proof").
const notFoundDrops = 3

// notFound turns a 404 about app, whose entry is e, into what it means at
// now. For an app without a release (never fetched, or fetched none) it is
// the absence of one: Fetched, nil. For an app with a release it is a
// failure (a repository made private by mistake, a hiccup), so that the
// release stays and the per-app retry applies, until the 404s have lasted a
// whole interval and notFoundDrops requests in a row: then the release is
// dropped, with a warning that names its tag.
func (p *Poller) notFound(app release.App, e release.Entry, a release.Answer, now time.Time) release.Answer {
	gone := release.Answer{Outcome: release.Fetched, Remaining: a.Remaining, Reset: a.Reset}
	if e.Release == nil {
		return gone
	}
	since, n := notFoundRun(e, true, now)
	if n >= notFoundDrops && now.Sub(since) >= p.timing.Interval {
		p.log.Warn("release dropped after 404s", zap.String("app", app.Key), zap.String("repo", app.Repo),
			logsafe.String("tag", e.Release.Tag), zap.Int("requests", n), zap.Time("since", since))
		return gone
	}
	a.Outcome = release.Failed
	a.Err = fmt.Errorf("%w (%d in a row; the release stays)", a.Err, n)
	return a
}

// notFoundRun returns the run of 404s that a failure at now makes of e's: a
// 404 (missing) after one goes on with it, a first 404 starts one, any
// other failure ends it (zero).
func notFoundRun(e release.Entry, missing bool, now time.Time) (since time.Time, n int) {
	switch {
	case !missing:
		return time.Time{}, 0
	case e.Failing() && e.NotFound > 0:
		return e.NotFoundSince, e.NotFound + 1
	}
	return now, 1
}

// corrector is a clock that can be set to the fleet's (clock.Corrected).
type corrector interface {
	Correct(residual, margin time.Duration) time.Duration
}

// tellTime measures the poller's clock against the Fleet's, corrects it when
// it can (a clock.Corrected) and they differ by more than release.MaxSkew,
// reports the offset, and warns once while it stays beyond. A Redis error
// leaves the clock as it was: the load that follows reports the outage.
func (p *Poller) tellTime(ctx context.Context) {
	residual, err := p.fleet.ClockOffset(ctx)
	if err != nil {
		return
	}
	offset := residual
	c, corrects := p.clock.(corrector)
	if corrects {
		offset = c.Correct(residual, release.MaxSkew)
	}
	p.obs.ClockOffset(offset)
	skewed := offset.Abs() > release.MaxSkew
	switch {
	case skewed && !p.skewed:
		p.log.Warn("clock differs from redis's", zap.Duration("offset", offset), zap.Bool("telling_time_by_redis", corrects))
	case !skewed && p.skewed:
		p.log.Info("clock agrees with redis's again", zap.Duration("offset", offset))
	}
	p.skewed = skewed
}
