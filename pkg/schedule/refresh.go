package schedule

import (
	"time"

	"github.com/storytold/craft-releases/pkg/release"
)

// The rules of a refresh request (release.Refresh), the webhook's "fetch it
// now".
const (
	// RefreshGap is the least time between two fetches of one app for
	// refreshes: requests that arrive meanwhile are coalesced into the next
	// fetch, so a burst of deliveries costs a few requests, not one each.
	RefreshGap = time.Second
	// RefreshLife is how long a request is honoured at all; the Redis copy
	// expires then too.
	RefreshLife = time.Hour
)

// refreshRetries are the attempts after the first, counted from the
// request, while the fetched release is not yet the tag the delivery named:
// GitHub's releases/latest can answer the previous release for a few seconds
// after a release is published.
var refreshRetries = [...]time.Duration{2 * time.Second, 5 * time.Second, 15 * time.Second}

// Refreshed reports whether e satisfies r: fetched at or after the request,
// and holding the tag r names, if any.
func Refreshed(r release.Refresh, e release.Entry) bool {
	return !e.FetchedAt.Before(r.At) && (r.Tag == "" || e.Release != nil && e.Release.Tag == r.Tag)
}

// RefreshAt says when to ask GitHub about the app whose state is e to
// answer r, at now. ok is false when r needs nothing more: satisfied
// (Refreshed), older than RefreshLife, or given up after its last attempt.
//
// The attempts are at r.At and, when r names a tag, 2, 5 and 15 s after it:
// the first attempt point that no fetch of e has reached yet is the one to
// make, and point is its time, which a claim for it must postdate. A fetch
// comes at least RefreshGap after the last one; a failing app waits for its
// per-app retry, as Due says, and a failure since point moves point to the
// failure's time (the attempt failed, so the next one is new); a claim
// made at or after point (another poller asking) is waited out for the claim
// window. Freshness is ignored; the fleet backoff is the caller's.
func RefreshAt(t Timing, r release.Refresh, e release.Entry, now time.Time) (at, point time.Time, ok bool) {
	if r.At.IsZero() || age(r.At, now) > RefreshLife || Refreshed(r, e) {
		return time.Time{}, time.Time{}, false
	}
	point = r.At
	if !e.FetchedAt.Before(point) {
		found := false
		if r.Tag != "" {
			for _, d := range refreshRetries {
				if p := r.At.Add(d); e.FetchedAt.Before(p) {
					point, found = p, true
					break
				}
			}
		}
		if !found {
			return time.Time{}, time.Time{}, false
		}
	}
	at = point
	if e.Fetched() {
		at = later(at, e.FetchedAt.Add(RefreshGap))
	}
	if e.Failing() {
		at = later(at, e.FailedAt.Add(doubling(t.FirstRetry(), e.Failures, t.Interval)-t.SkewMargin()))
		if !e.FailedAt.Before(point) {
			point = e.FailedAt
		}
	}
	if !e.ClaimedAt.Before(point) {
		at = later(at, e.ClaimedAt.Add(t.ClaimWindow()))
	}
	return at, point, true
}
