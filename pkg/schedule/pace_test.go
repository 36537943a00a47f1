package schedule_test

import (
	"testing"
	"time"

	"github.com/storytold/craft-releases/pkg/schedule"
)

func TestPace(t *testing.T) {
	now := time.Date(2026, 10, 10, 12, 0, 0, 0, time.UTC)
	i120 := schedule.Timing{Interval: 120 * time.Second}
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
		{"a quota half spent by someone else", i120, 1000,
			schedule.Quota{PerHour: 5000, Remaining: 1000, Reset: now.Add(30 * time.Minute)}, 2280 * time.Second},
		{"plenty left until the reset", i120, 13,
			schedule.Quota{PerHour: 5000, Remaining: 4000, Reset: now.Add(30 * time.Minute)}, 120 * time.Second},
		{"GitHub Enterprise: only what is left", i120, 1000,
			schedule.Quota{Remaining: 4000, Reset: now.Add(time.Hour)}, 1155 * time.Second},
		{"a reset in the past says nothing", i120, 1000, schedule.Quota{Remaining: 10, Reset: now.Add(-time.Second)}, 120 * time.Second},
		{"none left is the rate limit's", i120, 1000, schedule.Quota{Remaining: 0, Reset: now.Add(time.Hour)}, 120 * time.Second},
		{"a longer interval than the quota needs", schedule.Timing{Interval: time.Hour}, 1000,
			schedule.Quota{PerHour: 5000, Remaining: -1}, time.Hour},
		{"no apps", i120, 0, schedule.Quota{PerHour: 60, Remaining: 1, Reset: now.Add(time.Hour)}, 120 * time.Second},
		// A short stretch keeps M = I/4: 20 apps, 60 an hour, 900 s / (0.8 × 60).
		{"a short interval", schedule.Timing{Interval: 10 * time.Second}, 1,
			schedule.Quota{Remaining: 48, Reset: now.Add(15 * time.Minute)}, 32 * time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := schedule.Pace(tt.t, tt.apps, tt.q, now)
			if got != tt.want {
				t.Errorf("Pace = %v, want %v", got, tt.want)
			}
			paced := schedule.Timing{Interval: got}
			if tt.q.PerHour > 0 && paced.RequestsPerHour(tt.apps) > schedule.QuotaShare*tt.q.PerHour {
				t.Errorf("at %v, %v requests an hour, over %v of %v", got, paced.RequestsPerHour(tt.apps), schedule.QuotaShare, tt.q.PerHour)
			}
		})
	}
}
