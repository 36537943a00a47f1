package schedule_test

import (
	"math"
	"testing"
	"time"

	"github.com/storytold/craft-releases/pkg/schedule"
)

func TestPace(t *testing.T) {
	now := time.Date(2026, 10, 10, 12, 0, 0, 0, time.UTC)
	i120 := schedule.Timing{Interval: 120 * time.Second, MaxBackoff: 4 * time.Hour}
	// Production defaults with a token: I = 30 min, 4 h max backoff, 5,000 an hour.
	prod := schedule.Timing{Interval: 30 * time.Minute, MaxBackoff: 4 * time.Hour}
	token := func(remaining int, reset time.Time) schedule.Quota {
		return schedule.Quota{PerHour: 5000, Remaining: remaining, Reset: reset}
	}
	in10y, y2100 := now.AddDate(10, 0, 0), time.Date(2100, 1, 1, 0, 0, 0, 0, time.UTC)
	// The furthest x-ratelimit-reset pkg/github lets through: 2^40 s after 1970.
	furthest := time.Unix(1<<40, 0)
	unknown := schedule.Quota{Remaining: -1}
	tests := []struct {
		name string
		t    schedule.Timing
		apps int
		q    schedule.Quota
		want time.Duration
	}{
		{"13 apps within the quota", i120, 13, schedule.Quota{PerHour: 5000, Remaining: -1}, 120 * time.Second},
		{"nothing known", i120, 1000, unknown, 120 * time.Second},
		// 1,000 × 3600 / (I − 30) ≤ 0.8 × 5,000: I − 30 ≥ 900 s.
		{"1,000 apps, 5,000 an hour", i120, 1000, schedule.Quota{PerHour: 5000, Remaining: -1}, 930 * time.Second},
		// Half the hour left and 1,000 requests: 1,000 × 1,800 / (0.8 × 1,000) = 2,250 s.
		{"a quota half spent by someone else", i120, 1000, schedule.Quota{PerHour: 5000, Remaining: 1000, Reset: now.Add(30 * time.Minute)}, 2280 * time.Second},
		{"plenty left until the reset", i120, 13, schedule.Quota{PerHour: 5000, Remaining: 4000, Reset: now.Add(30 * time.Minute)}, 120 * time.Second},
		{"GitHub Enterprise: only what is left", i120, 1000, schedule.Quota{Remaining: 4000, Reset: now.Add(time.Hour)}, 1155 * time.Second},
		{"a reset in the past says nothing", i120, 1000, schedule.Quota{Remaining: 10, Reset: now.Add(-time.Second)}, 120 * time.Second},
		{"none left is the rate limit's", i120, 1000, schedule.Quota{Remaining: 0, Reset: now.Add(time.Hour)}, 120 * time.Second},
		{"a longer interval than the quota needs", schedule.Timing{Interval: time.Hour, MaxBackoff: 4 * time.Hour}, 1000, schedule.Quota{PerHour: 5000, Remaining: -1}, time.Hour},
		{"no apps", i120, 0, schedule.Quota{PerHour: 60, Remaining: 1, Reset: now.Add(time.Hour)}, 120 * time.Second},
		// A short stretch keeps M = I/4: 20 apps, 60 an hour, 900 s / (0.8 × 60).
		{"a short interval", schedule.Timing{Interval: 10 * time.Second, MaxBackoff: time.Hour}, 1, schedule.Quota{Remaining: 48, Reset: now.Add(15 * time.Minute)}, 32 * time.Second},

		// What a header can do is bounded: a reset more than MaxResetAhead
		// away is not believed, and no stretch goes past the max backoff.
		{"13 apps, 1 left until +1 h: capped", prod, 13, token(1, now.Add(time.Hour)), 4 * time.Hour},
		{"1,000 apps, 1 left until +1 h: capped", prod, 1000, token(1, now.Add(time.Hour)), 4 * time.Hour},
		{"13 apps, 1 left until +10 years", prod, 13, token(1, in10y), 30 * time.Minute},
		{"1,000 apps, 1 left until +10 years", prod, 1000, token(1, in10y), 30 * time.Minute},
		{"13 apps, 1 left until 2100", prod, 13, token(1, y2100), 30 * time.Minute},
		{"1,000 apps, 1 left until 2100", prod, 1000, token(1, y2100), 30 * time.Minute},
		{"13 apps, 1 left until the furthest reset", prod, 13, token(1, furthest), 30 * time.Minute},
		{"1,000 apps, 1 left until the furthest reset", prod, 1000, token(1, furthest), 30 * time.Minute},
		{"13 apps, 4,999 left until +10 years", prod, 13, token(4999, in10y), 30 * time.Minute},
		{"1,000 apps, 4,999 left until +10 years", prod, 1000, token(4999, in10y), 30 * time.Minute},
		{"13 apps, 5,000 left until +30 days", prod, 13, token(5000, now.AddDate(0, 0, 30)), 30 * time.Minute},
		{"1,000 apps, 5,000 left until +30 days", prod, 1000, token(5000, now.AddDate(0, 0, 30)), 30 * time.Minute},
		// 1,000 × 3,900 / (0.8 × 4,000) = 1,218.75 s: the last reset believed.
		{"a reset at the edge of belief", i120, 1000, token(4000, now.Add(schedule.MaxResetAhead)), 1249 * time.Second},
		{"a reset a second past belief", i120, 1000, token(4000, now.Add(schedule.MaxResetAhead+time.Second)), 930 * time.Second},
		// 1,000 × 3600 / (I − 30) ≤ 0.8 × 60 needs I ≈ 20.8 h.
		{"no token, 1,000 apps: capped", prod, 1000, schedule.Quota{PerHour: 60, Remaining: -1}, 4 * time.Hour},
		{"a cap shorter than the interval is the interval", schedule.Timing{Interval: time.Hour}, 1000, token(1, now.Add(time.Hour)), time.Hour},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := schedule.Pace(tt.t, tt.apps, tt.q, now)
			t.Logf("effective interval %v", got)
			if got != tt.want {
				t.Errorf("Pace = %v, want %v", got, tt.want)
			}
			paced := schedule.Timing{Interval: got}
			if tt.q.PerHour > 0 && got < tt.t.MaxBackoff && paced.RequestsPerHour(tt.apps) > schedule.QuotaShare*tt.q.PerHour {
				t.Errorf("at %v, %v requests an hour, over %v of %v", got, paced.RequestsPerHour(tt.apps), schedule.QuotaShare, tt.q.PerHour)
			}
		})
	}
}

// TestPaceMonotonic: the further the reset, or the less is left, the
// longer the interval, up to the max backoff, with no overflow on the way.
func TestPaceMonotonic(t *testing.T) {
	now := time.Date(2026, 10, 10, 12, 0, 0, 0, time.UTC)
	tm := schedule.Timing{Interval: 30 * time.Minute, MaxBackoff: 4 * time.Hour}
	windows := []time.Duration{}
	for w := time.Second; w <= schedule.MaxResetAhead; w += time.Minute {
		windows = append(windows, w)
	}
	left := []int{math.MaxInt, 5000, 100, 1}
	for _, apps := range []int{1, 13, 1000, math.MaxInt32, math.MaxInt} {
		got := make([][]time.Duration, len(left))
		for i, remaining := range left {
			for _, w := range windows {
				got[i] = append(got[i], schedule.Pace(tm, apps, schedule.Quota{Remaining: remaining, Reset: now.Add(w)}, now))
			}
		}
		for i := range left {
			for j, w := range windows {
				p := got[i][j]
				if p < tm.Interval || p > tm.MaxBackoff || (j > 0 && p < got[i][j-1]) || (i > 0 && p < got[i-1][j]) {
					t.Fatalf("%d apps, %d left for %v: Pace = %v, want %v to %v and no less than with a nearer reset or more left",
						apps, left[i], w, p, tm.Interval, tm.MaxBackoff)
				}
			}
		}
	}
}
