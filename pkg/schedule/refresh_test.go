package schedule_test

import (
	"testing"
	"time"

	"github.com/storytold/craft-releases/pkg/release"
	"github.com/storytold/craft-releases/pkg/schedule"
)

func TestRefreshAt(t *testing.T) {
	// The production timing without a token: I = 1800 s, M = 30 s, C = F = 60 s.
	timing := schedule.Timing{Interval: 1800 * time.Second, MaxBackoff: 4 * time.Hour}
	at := time.Date(2026, 10, 10, 12, 0, 0, 0, time.UTC) // the request
	s := func(n float64) time.Time { return at.Add(time.Duration(n * float64(time.Second))) }
	v1, v2 := &release.Release{Tag: "v1"}, &release.Release{Tag: "v2"}
	plain := release.Refresh{At: at}
	tagged := release.Refresh{At: at, Tag: "v2"}

	tests := []struct {
		name              string
		r                 release.Refresh
		e                 release.Entry
		now               time.Time
		wantOK            bool
		wantAt, wantPoint time.Time
	}{
		{"fresh fetch before the request: at once", plain, release.Entry{FetchedAt: s(-10), Release: v1}, s(0), true, s(0), s(0)},
		{"never fetched: at once", plain, release.Entry{}, s(0), true, s(0), s(0)},
		{"fetched after the request: done", plain, release.Entry{FetchedAt: s(0.1), Release: v1}, s(1), false, time.Time{}, time.Time{}},
		{"fetched in the request's millisecond: done", plain, release.Entry{FetchedAt: s(0), Release: v1}, s(1), false, time.Time{}, time.Time{}},
		{"a burst: fetched 0.2 s before, waits the gap", plain, release.Entry{FetchedAt: s(-0.2), Release: v1}, s(0), true, s(0.8), s(0)},

		{"tag served: done", tagged, release.Entry{FetchedAt: s(0.1), Release: v2}, s(0.2), false, time.Time{}, time.Time{}},
		{"old tag after the first attempt: again at 2 s", tagged, release.Entry{FetchedAt: s(0.1), Release: v1}, s(0.2), true, s(2), s(2)},
		{"no release yet: again at 2 s", tagged, release.Entry{FetchedAt: s(0.1)}, s(0.2), true, s(2), s(2)},
		{"old tag after 2 s: again at 5 s", tagged, release.Entry{FetchedAt: s(2.1), Release: v1}, s(3), true, s(5), s(5)},
		{"old tag after 5 s: again at 15 s", tagged, release.Entry{FetchedAt: s(5.1), Release: v1}, s(6), true, s(15), s(15)},
		{"old tag after 15 s: given up", tagged, release.Entry{FetchedAt: s(15.1), Release: v1}, s(16), false, time.Time{}, time.Time{}},
		{"a slow fetch past 2 s: the 5 s attempt", tagged, release.Entry{FetchedAt: s(2.5), Release: v1}, s(2.6), true, s(5), s(5)},
		{"tag served by the 15 s attempt: done", tagged, release.Entry{FetchedAt: s(15.1), Release: v2}, s(16), false, time.Time{}, time.Time{}},
		{"a plain request makes one attempt", plain, release.Entry{FetchedAt: s(0.1), Release: nil}, s(1), false, time.Time{}, time.Time{}},

		{"older than an hour: dropped", plain, release.Entry{}, s(3601), false, time.Time{}, time.Time{}},
		{"a zero request: nothing", release.Refresh{}, release.Entry{}, s(0), false, time.Time{}, time.Time{}},

		// The per-app retry stands: 1 failure → F − M = 30 s after it.
		{"failed since the request: per-app retry, from the failure", plain, release.Entry{FetchedAt: s(-100), Release: v1, FailedAt: s(0.1), Failures: 1}, s(1), true, s(30.1), s(0.1)},
		{"failing before the request: the retry still stands", plain, release.Entry{FetchedAt: s(-100), Release: v1, FailedAt: s(-10), Failures: 1}, s(0), true, s(20), s(0)},
		{"failing long ago: at once", plain, release.Entry{FetchedAt: s(-1000), Release: v1, FailedAt: s(-500), Failures: 1}, s(0), true, s(0), s(0)},
		{"3 failures: 210 s after the last", tagged, release.Entry{FetchedAt: s(0.1), Release: v1, FailedAt: s(2.1), Failures: 3}, s(3), true, s(212.1), s(2.1)},

		// Another poller's claim for this attempt is waited out.
		{"claimed since the point: wait the claim window", plain, release.Entry{FetchedAt: s(-100), Release: v1, ClaimedAt: s(0.01)}, s(0.02), true, s(60.01), s(0)},
		{"claimed before the point: at once", plain, release.Entry{FetchedAt: s(-100), Release: v1, ClaimedAt: s(-0.01)}, s(0), true, s(0), s(0)},
		{"claimed before the 2 s point: at 2 s", tagged, release.Entry{FetchedAt: s(0.1), Release: v1, ClaimedAt: s(0.05)}, s(1), true, s(2), s(2)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			gotAt, gotPoint, ok := schedule.RefreshAt(timing, tt.r, tt.e, tt.now)
			if ok != tt.wantOK || !gotAt.Equal(tt.wantAt) || !gotPoint.Equal(tt.wantPoint) {
				t.Errorf("RefreshAt got (%v, %v, %v), want (%v, %v, %v)", gotAt.Sub(at), gotPoint.Sub(at), ok,
					tt.wantAt.Sub(at), tt.wantPoint.Sub(at), tt.wantOK)
			}
		})
	}
}
