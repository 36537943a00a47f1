package clock_test

import (
	"testing"
	"time"

	"github.com/storytold/craft-releases/pkg/clock"
	"github.com/storytold/craft-releases/test/fakeclock"
)

func TestCorrected(t *testing.T) {
	t0 := time.Date(2026, 10, 10, 12, 0, 0, 0, time.UTC)
	const margin = 30 * time.Second
	tests := []struct {
		name      string
		residuals []time.Duration // measured one after another
		offset    time.Duration   // the correction in force after them
	}{
		{"within the margin: not corrected", []time.Duration{5 * time.Second}, 0},
		{"at the margin: not corrected", []time.Duration{margin}, 0},
		{"an hour ahead", []time.Duration{time.Hour}, time.Hour},
		{"an hour behind", []time.Duration{-time.Hour}, -time.Hour},
		{"jitter after a correction is ignored", []time.Duration{time.Hour, 300 * time.Millisecond, -200 * time.Millisecond}, time.Hour},
		{"a drift past a second is followed", []time.Duration{time.Hour, 2 * time.Second}, time.Hour + 2*time.Second},
		{"the node put right", []time.Duration{time.Hour, -time.Hour + time.Second}, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			base := fakeclock.New(t0)
			c := clock.NewCorrected(base)
			var whole time.Duration
			for _, r := range tt.residuals {
				whole = c.Correct(r, margin)
			}
			if got := c.Offset(); got != tt.offset {
				t.Errorf("offset %v, want %v (whole offset reported %v)", got, tt.offset, whole)
			}
			if got, want := c.Now(), t0.Add(-tt.offset); !got.Equal(want) {
				t.Errorf("Now = %v, want %v", got, want)
			}
		})
	}
}
