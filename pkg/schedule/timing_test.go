package schedule_test

import (
	"math"
	"testing"
	"time"

	"github.com/storytold/craft-releases/pkg/schedule"
)

// draws are the uniform draws every jitter test tries: the bottom, the middle
// and the top of [0, 1).
var draws = []float64{0, 0.5, 0.999}

func TestTimingMargins(t *testing.T) {
	tests := []struct {
		name                                 string
		interval, skew, claim, retry, margin time.Duration
	}{
		{"default 1800 s", 1800 * time.Second, 30 * time.Second, time.Minute, time.Minute, time.Minute},
		{"token 120 s", 120 * time.Second, 30 * time.Second, time.Minute, time.Minute, time.Minute},
		{"60 s", time.Minute, 15 * time.Second, 30 * time.Second, time.Minute, time.Minute},
		{"10 s demo", 10 * time.Second, 2500 * time.Millisecond, 5 * time.Second, 10 * time.Second, 10 * time.Second},
		{"1 s test", time.Second, 250 * time.Millisecond, 500 * time.Millisecond, time.Second, time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tm := schedule.Timing{Interval: tt.interval}
			if got := tm.SkewMargin(); got != tt.skew {
				t.Errorf("SkewMargin() = %v, want %v", got, tt.skew)
			}
			if got := tm.ClaimWindow(); got != tt.claim {
				t.Errorf("ClaimWindow() = %v, want %v", got, tt.claim)
			}
			if got := tm.FirstRetry(); got != tt.retry {
				t.Errorf("FirstRetry() = %v, want %v", got, tt.retry)
			}
			if got := tm.ResetMargin(); got != tt.margin {
				t.Errorf("ResetMargin() = %v, want %v", got, tt.margin)
			}
		})
	}
}

// TestDraws: Jittered, TickDelay and StartupDelay at the bottom, the middle
// and the top of the draw.
func TestDraws(t *testing.T) {
	tick := schedule.Timing{Tick: 30 * time.Second}
	startup := schedule.Timing{StartupJitter: 30 * time.Second}
	tests := []struct {
		name      string
		got, want time.Duration
	}{
		{"jittered, bottom of the draw", schedule.Jittered(100*time.Second, 0.1, 0), 90 * time.Second},
		{"jittered, middle of the draw", schedule.Jittered(100*time.Second, 0.1, 0.5), 100 * time.Second},
		{"jittered, top of the draw", schedule.Jittered(100*time.Second, 0.1, 0.999), 109_980 * time.Millisecond},
		{"jittered, no spread", schedule.Jittered(100*time.Second, 0, 0.999), 100 * time.Second},
		{"jittered, zero duration", schedule.Jittered(0, 0.1, 0), 0},
		{"jittered, four hours at the top", schedule.Jittered(4*time.Hour, 0.1, 0.75), 4*time.Hour + 12*time.Minute},
		{"tick, bottom of the draw", tick.TickDelay(0), 27 * time.Second},
		{"tick, middle of the draw", tick.TickDelay(0.5), 30 * time.Second},
		{"tick, top of the draw", tick.TickDelay(0.999), 32_994 * time.Millisecond},
		{"startup, bottom of the draw", startup.StartupDelay(0), 0},
		{"startup, middle of the draw", startup.StartupDelay(0.5), 15 * time.Second},
		{"startup, top of the draw", startup.StartupDelay(0.999), 29_970 * time.Millisecond},
		{"startup, no jitter configured", schedule.Timing{}.StartupDelay(0.999), 0},
	}
	for _, tt := range tests {
		if tt.got != tt.want {
			t.Errorf("%s: got %v, want %v", tt.name, tt.got, tt.want)
		}
	}
}

func TestBackoffActive(t *testing.T) {
	now := time.Date(2026, 10, 10, 12, 0, 0, 0, time.UTC)
	tests := []struct {
		name string
		b    schedule.Backoff
		want bool
	}{
		{"none", schedule.Backoff{}, false},
		{"until later", schedule.Backoff{Until: now.Add(time.Second), Trouble: 1}, true},
		{"until now", schedule.Backoff{Until: now, Trouble: 1}, false},
		{"until past", schedule.Backoff{Until: now.Add(-time.Second), Trouble: 3}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.b.Active(now); got != tt.want {
				t.Errorf("Active() = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestRequestsPerHour(t *testing.T) {
	tests := []struct {
		name     string
		interval time.Duration
		apps     int
		want     float64
	}{
		// The figure: 13 apps at 300 s ask about 170 times an hour.
		{"13 apps at 300 s", 300 * time.Second, 13, 13 * 3600.0 / 270},
		{"13 apps at the default 1800 s", 1800 * time.Second, 13, 13 * 3600.0 / 1770},
		{"13 apps at 120 s with a token", 120 * time.Second, 13, 13 * 3600.0 / 90},
		{"a 60 s interval: M is I/4", time.Minute, 4, 4 * 3600.0 / 45},
		{"no apps", time.Minute, 0, 0},
		{"no interval", 0, 13, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := schedule.Timing{Interval: tt.interval}.RequestsPerHour(tt.apps)
			if math.Abs(got-tt.want) > 1e-9 {
				t.Errorf("RequestsPerHour(%d) at %v = %v, want %v", tt.apps, tt.interval, got, tt.want)
			}
		})
	}
}

func TestSafeInterval(t *testing.T) {
	tests := []struct {
		name  string
		apps  int
		quota float64
		want  time.Duration
	}{
		{"13 apps without a token", 13, 60, 1005 * time.Second},
		{"1 app without a token: M is I/4", 1, 60, 100 * time.Second},
		{"13 apps with a token", 13, 5000, 16 * time.Second},
		{"no quota", 13, 0, 0},
		{"no apps", 0, 60, time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := schedule.SafeInterval(tt.apps, tt.quota)
			if got != tt.want {
				t.Fatalf("SafeInterval(%d, %v) = %v, want %v", tt.apps, tt.quota, got, tt.want)
			}
			if got <= time.Second {
				return
			}
			planned := schedule.QuotaShare * tt.quota
			if rph := (schedule.Timing{Interval: got}).RequestsPerHour(tt.apps); rph > planned {
				t.Errorf("at %v: %v requests an hour, over %v", got, rph, planned)
			}
			if rph := (schedule.Timing{Interval: got - time.Second}).RequestsPerHour(tt.apps); rph <= planned {
				t.Errorf("a second less, %v, asks %v an hour, within %v: not the shortest", got-time.Second, rph, planned)
			}
		})
	}
}
