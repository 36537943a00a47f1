package schedule_test

import (
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/storytold/craft-releases/pkg/schedule"
)

// worked is the timing of docs/scheduling.md's worked examples: I = 1800 s, max 4 h.
var worked = schedule.Timing{Interval: 1800 * time.Second, MaxBackoff: 4 * time.Hour}

func TestNext(t *testing.T) {
	now := time.Date(2026, 10, 10, 12, 0, 0, 0, time.UTC)
	active := schedule.Backoff{Until: now.Add(time.Hour), Trouble: 2}
	expired := schedule.Backoff{Until: now.Add(-time.Hour), Trouble: 3}

	tests := []struct {
		name string
		prev schedule.Backoff
		r    schedule.Round
		// want is the backoff: base after now jittered, but never before
		// floor after now; or the zero Backoff when wantNone.
		base, floor        time.Duration
		trouble            int
		wantNone, wantPrev bool
	}{
		{name: "nothing asked keeps no backoff", prev: schedule.Backoff{}, r: schedule.Round{}, wantPrev: true},
		{name: "nothing asked keeps an expired backoff and its trouble", prev: expired, r: schedule.Round{}, wantPrev: true},
		{name: "nothing asked keeps an active backoff", prev: active, r: schedule.Round{}, wantPrev: true},

		{name: "a fetch clears", prev: active, r: schedule.Round{Fetched: 1, Failed: 12}, wantNone: true},
		{name: "a 304 clears", prev: expired, r: schedule.Round{Unchanged: 1, Failed: 3}, wantNone: true},
		{name: "a good round with no trouble stays clear", prev: schedule.Backoff{}, r: schedule.Round{Fetched: 13}, wantNone: true},

		{name: "all failed, first bad round", r: schedule.Round{Failed: 13}, base: time.Minute, trouble: 1},
		{name: "all failed, second bad round", prev: schedule.Backoff{Trouble: 1}, r: schedule.Round{Failed: 2}, base: 2 * time.Minute, trouble: 2},
		{name: "all failed after three bad rounds", prev: expired, r: schedule.Round{Failed: 1, Apps: 1}, base: 8 * time.Minute, trouble: 4},
		{name: "all failed, capped at I", prev: schedule.Backoff{Trouble: 10}, r: schedule.Round{Failed: 1, Apps: 1}, base: 1800 * time.Second, trouble: 11},
		{name: "all failed, huge trouble saturates", prev: schedule.Backoff{Trouble: math.MaxInt}, r: schedule.Round{Failed: 1, Apps: 1}, base: 1800 * time.Second, trouble: math.MaxInt},
		{name: "all failed, two of 13 asked", r: schedule.Round{Failed: 2, Apps: 13}, base: time.Minute, trouble: 1},
		{name: "one app of 13 failed alone keeps no backoff", r: schedule.Round{Failed: 1, Apps: 13}, wantPrev: true},
		{name: "one app of 13 failed alone keeps an expired backoff", prev: expired, r: schedule.Round{Failed: 1, Apps: 13}, wantPrev: true},

		{name: "rate limited, reset 50 min away", r: schedule.Round{RateLimited: true, RetryAt: now.Add(50 * time.Minute)}, base: 30 * time.Minute, floor: 51 * time.Minute, trouble: 1},
		{name: "rate limited, reset unknown", r: schedule.Round{RateLimited: true}, base: 30 * time.Minute, trouble: 1},
		{name: "rate limited, reset already past", r: schedule.Round{RateLimited: true, RetryAt: now.Add(-time.Hour)}, base: 30 * time.Minute, floor: time.Minute, trouble: 1},
		{name: "rate limited, reset 10 s away", r: schedule.Round{RateLimited: true, RetryAt: now.Add(10 * time.Second)}, base: 30 * time.Minute, floor: 70 * time.Second, trouble: 1},
		{name: "rate limited, reset 30 min away, at the jitter's bottom", r: schedule.Round{RateLimited: true, RetryAt: now.Add(30 * time.Minute)}, base: 30 * time.Minute, floor: 31 * time.Minute, trouble: 1},
		{name: "rate limited, reset beyond the max", r: schedule.Round{RateLimited: true, RetryAt: now.Add(5 * time.Hour)}, base: 30 * time.Minute, floor: 4*time.Hour + time.Minute, trouble: 1},
		{name: "rate limited, reset in a far century", r: schedule.Round{RateLimited: true, RetryAt: now.AddDate(900, 0, 0)}, base: 30 * time.Minute, floor: 4*time.Hour + time.Minute, trouble: 1},
		{name: "rate limited, doubling beats the reset", prev: schedule.Backoff{Trouble: 2}, r: schedule.Round{RateLimited: true, RetryAt: now.Add(50 * time.Minute)}, base: 2 * time.Hour, floor: 51 * time.Minute, trouble: 3},
		{name: "rate limited, doubling near the reset", prev: schedule.Backoff{Trouble: 1}, r: schedule.Round{RateLimited: true, RetryAt: now.Add(59 * time.Minute)}, base: time.Hour, floor: time.Hour, trouble: 2},
		{name: "rate limited, huge trouble saturates", prev: schedule.Backoff{Trouble: math.MaxInt}, r: schedule.Round{RateLimited: true}, base: 4 * time.Hour, trouble: math.MaxInt},
		{name: "rate limit wins over fetches before it", r: schedule.Round{Fetched: 3, Unchanged: 2, RateLimited: true}, base: 30 * time.Minute, trouble: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, u := range draws {
				got := schedule.NextBackoff(worked, tt.prev, tt.r, now, u)
				want := schedule.Backoff{Until: now.Add(max(schedule.Jittered(tt.base, 0.1, u), tt.floor)), Trouble: tt.trouble}
				switch {
				case tt.wantPrev:
					want = tt.prev
				case tt.wantNone:
					want = schedule.Backoff{}
				}
				if !got.Until.Equal(want.Until) || got.Trouble != want.Trouble {
					t.Errorf("Next(u=%v) = %+v, want %+v", u, got, want)
				}
			}
		})
	}
}

// TestNextWorkedExamples replays docs/scheduling.md's worked examples round after round.
func TestNextWorkedExamples(t *testing.T) {
	start := time.Date(2026, 10, 10, 12, 0, 0, 0, time.UTC)
	tests := []struct {
		name        string
		first, then schedule.Round // the first round, ending at start; every later round
		// about is each round's backoff before jitter; past its end the last
		// value repeats.
		about []time.Duration
	}{
		{"rate limit with reset 50 min away, then no reset times", schedule.Round{RateLimited: true, RetryAt: start.Add(50 * time.Minute)},
			schedule.Round{RateLimited: true}, []time.Duration{51 * time.Minute, time.Hour, 2 * time.Hour, 4 * time.Hour}},
		{"rate limits with no reset times", schedule.Round{RateLimited: true}, schedule.Round{RateLimited: true},
			[]time.Duration{30 * time.Minute, time.Hour, 2 * time.Hour, 4 * time.Hour}},
		{"all-failed rounds", schedule.Round{Failed: 13}, schedule.Round{Failed: 13},
			[]time.Duration{time.Minute, 2 * time.Minute, 4 * time.Minute, 8 * time.Minute, 16 * time.Minute, 30 * time.Minute}},
	}
	for _, tt := range tests {
		for _, u := range draws {
			t.Run(fmt.Sprintf("%s/u=%v", tt.name, u), func(t *testing.T) {
				now, r := start, tt.first
				var b schedule.Backoff
				for i := range 70 {
					b = schedule.NextBackoff(worked, b, r, now, u)
					about := tt.about[min(i, len(tt.about)-1)]
					lo, hi := now.Add(about*9/10), now.Add(about*11/10)
					if b.Until.Before(lo) || b.Until.After(hi) {
						t.Fatalf("round %d (u=%v): backoff until %v after now, want about %v", i+1, u, b.Until.Sub(now), about)
					}
					if b.Trouble != i+1 {
						t.Fatalf("round %d: trouble = %d, want %d", i+1, b.Trouble, i+1)
					}
					now = b.Until
					r = tt.then
				}
				if got := schedule.NextBackoff(worked, b, schedule.Round{Fetched: 1}, now, u); got != (schedule.Backoff{}) {
					t.Errorf("a good round after %s: Next = %+v, want no backoff", tt.name, got)
				}
			})
		}
	}
}
