package schedule_test

import (
	"math"
	"testing"
	"time"

	"github.com/storytold/craft-releases/pkg/release"
	"github.com/storytold/craft-releases/pkg/schedule"
)

func TestDue(t *testing.T) {
	now := time.Date(2026, 10, 10, 12, 0, 0, 0, time.UTC)
	ago := func(d time.Duration) time.Time { return now.Add(-d) }
	rel := &release.Release{Tag: "v1"}
	long := schedule.Timing{Interval: 1800 * time.Second, MaxBackoff: 4 * time.Hour}
	short := schedule.Timing{Interval: 4 * time.Second, MaxBackoff: 4 * time.Second}
	huge := schedule.Timing{Interval: math.MaxInt64, MaxBackoff: math.MaxInt64}

	tests := []struct {
		name   string
		timing schedule.Timing
		e      release.Entry
		want   bool
	}{
		{"never fetched, never failed", long, release.Entry{}, true},
		{"claimed only", long, release.Entry{ClaimedAt: now}, true},

		// Rule 1: fresh until I − M = 1770 s.
		{"fetched just now", long, release.Entry{FetchedAt: now, Release: rel}, false},
		{"fetched 1769 s ago", long, release.Entry{FetchedAt: ago(1769 * time.Second), Release: rel}, false},
		{"fetched just under I − M ago", long, release.Entry{FetchedAt: ago(1770*time.Second - 1)}, false},
		{"fetched I − M ago", long, release.Entry{FetchedAt: ago(1770 * time.Second)}, true},
		{"fetched I ago", long, release.Entry{FetchedAt: ago(1800 * time.Second)}, true},
		{"fetched with no release, fresh", long, release.Entry{FetchedAt: ago(time.Minute)}, false},
		{"fetched by a clock M ahead", long, release.Entry{FetchedAt: now.Add(30 * time.Second)}, false},
		// Not believed: the clock that wrote it was set back since.
		{"fetched by a clock an hour ahead", long, release.Entry{FetchedAt: now.Add(time.Hour)}, true},
		{"failed by a clock an hour ahead", long, release.Entry{FailedAt: now.Add(time.Hour), Failures: 1}, true},
		{"short interval, fresh", short, release.Entry{FetchedAt: ago(3*time.Second - 1)}, false},
		{"short interval, stale at I − M", short, release.Entry{FetchedAt: ago(3 * time.Second)}, true},

		// Rule 2: retry − M with retry = min(F × 2^(n−1), I), F = 60 s, M = 30 s.
		{"1 failure, 29 s ago", long, release.Entry{FailedAt: ago(29 * time.Second), Failures: 1}, false},
		{"1 failure, 30 s ago", long, release.Entry{FailedAt: ago(30 * time.Second), Failures: 1}, true},
		{"failures unknown count as 1, 29 s ago", long, release.Entry{FailedAt: ago(29 * time.Second)}, false},
		{"failures unknown count as 1, 30 s ago", long, release.Entry{FailedAt: ago(30 * time.Second)}, true},
		{"2 failures, 89 s ago", long, release.Entry{FailedAt: ago(89 * time.Second), Failures: 2}, false},
		{"2 failures, 90 s ago", long, release.Entry{FailedAt: ago(90 * time.Second), Failures: 2}, true},
		{"3 failures, 209 s ago", long, release.Entry{FailedAt: ago(209 * time.Second), Failures: 3}, false},
		{"3 failures, 210 s ago", long, release.Entry{FailedAt: ago(210 * time.Second), Failures: 3}, true},
		{"6 failures capped at I, 1769 s ago", long, release.Entry{FailedAt: ago(1769 * time.Second), Failures: 6}, false},
		{"6 failures capped at I, 1770 s ago", long, release.Entry{FailedAt: ago(1770 * time.Second), Failures: 6}, true},
		{"huge failure count saturates at I, 1769 s ago", long, release.Entry{FailedAt: ago(1769 * time.Second), Failures: math.MaxInt}, false},
		{"huge failure count saturates at I, 1770 s ago", long, release.Entry{FailedAt: ago(1770 * time.Second), Failures: math.MaxInt}, true},
		{"huge interval, many failures: doubling never overflows", huge, release.Entry{FailedAt: ago(time.Hour), Failures: 100}, false},
		{"failure by a clock M ahead", long, release.Entry{FailedAt: now.Add(30 * time.Second), Failures: 1}, false},
		{"stale fetch then a recent failure", long, release.Entry{FetchedAt: ago(time.Hour), Release: rel, FailedAt: ago(10 * time.Second), Failures: 1}, false},
		{"stale fetch then a failure past its retry", long, release.Entry{FetchedAt: ago(time.Hour), Release: rel, FailedAt: ago(90 * time.Second), Failures: 2}, true},
		{"stale fetch after a failure is not failing", long, release.Entry{FetchedAt: ago(time.Hour), Release: rel, FailedAt: ago(2 * time.Hour), Failures: 5}, true},
		{"fresh fetch beats a newer failure", long, release.Entry{FetchedAt: ago(time.Minute), Release: rel, FailedAt: ago(time.Second), Failures: 9}, false},
		{"short interval, 1 failure, retry capped at I", short, release.Entry{FailedAt: ago(3*time.Second - 1), Failures: 1}, false},
		{"short interval, 1 failure, due at I − M", short, release.Entry{FailedAt: ago(3 * time.Second), Failures: 1}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := schedule.Due(tt.timing, tt.e, now); got != tt.want {
				t.Errorf("Due(%+v) = %v, want %v", tt.e, got, tt.want)
			}
		})
	}
}
