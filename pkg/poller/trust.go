package poller

import (
	"context"
	"errors"
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

// judge returns what got, GitHub's answer about app, whose entry is was,
// means at now (docs/scheduling.md, "A 404 is evidence, not proof"): a 304
// to a request without an ETag is a failure; a 404 is the absence of a
// release (an empty history, for a history entry) for an app without one
// and, for an app with one (or a history of some), a failure that
// keeps it until the 404s have lasted a whole interval and notFoundDrops
// requests in a row, when the release is dropped with a warning that names
// its tag. The quota announced stays as got said.
func (p *Poller) judge(app release.App, was release.Entry, got release.Answer, now time.Time) answer {
	a := answer{Answer: got, at: now, missing: got.Outcome == release.NotFound}
	gone := release.Answer{Outcome: release.Fetched, Remaining: got.Remaining, Reset: got.Reset}
	if app.Channel == release.HistoryChannel {
		gone.History = release.NewHistory(nil)
	}
	held := was.Release
	if h := was.History.List(); len(h) > 0 {
		held = h[0]
	}
	switch {
	case got.Outcome == release.NotModified && was.ETag == "":
		a.Outcome, a.Err = release.Failed, errors.New("not modified without an etag")
	case !a.missing:
	case held == nil:
		a.Answer = gone
	default:
		since, n := notFoundRun(was, true, now)
		if n < notFoundDrops || now.Sub(since) < p.timing.Interval {
			a.Outcome = release.Failed
			a.Err = fmt.Errorf("%w (%d in a row; the release stays)", got.Err, n)
			break
		}
		p.log.Warn("release dropped after 404s", zap.String("app", app.Key), zap.String("repo", app.Repo),
			logsafe.String("tag", held.Tag), zap.Int("requests", n), zap.Time("since", since))
		a.Answer = gone
	}
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
// reports the offset, and warns once while it stays beyond
// (docs/scheduling.md, "A clock you cannot trust"). A Redis error leaves
// the clock as it was: the load that follows reports the outage.
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
