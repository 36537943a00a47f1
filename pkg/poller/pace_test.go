package poller_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/storytold/craft-releases/pkg/poller"
	"github.com/storytold/craft-releases/pkg/release"
	"github.com/storytold/craft-releases/pkg/schedule"
	"github.com/storytold/craft-releases/test/fakeclock"
)

// quotaSource is GitHub with an hourly quota: every answer a 304 (a 200 the
// first time), announcing what is left until the top of the next hour, and a
// 403 once nothing is.
type quotaSource struct {
	clock  *fakeclock.Clock
	limit  int
	mu     sync.Mutex
	hour   time.Time // the window being spent
	used   int
	asked  map[string][]time.Time
	denied int
}

func (s *quotaSource) Latest(_ context.Context, app release.App, etag string) release.Answer {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.clock.Now()
	if h := now.Truncate(time.Hour); !h.Equal(s.hour) {
		s.hour, s.used = h, 0
	}
	reset := s.hour.Add(time.Hour)
	if s.used == s.limit {
		s.denied++
		return release.Answer{Outcome: release.RateLimited, RetryAt: reset, Err: fmt.Errorf("HTTP 403"), Remaining: 0, Reset: reset}
	}
	s.used++
	s.asked[app.Key] = append(s.asked[app.Key], now)
	a := release.Answer{Outcome: release.NotModified, Remaining: s.limit - s.used, Reset: reset}
	if etag == "" {
		a = release.Answer{Outcome: release.Fetched, Release: &release.Release{Tag: "v1", Assets: []release.Asset{}},
			ETag: `"e"`, Remaining: s.limit - s.used, Reset: reset}
	}
	return a
}

// TestPacingAtProductionNumbers: 1,000 apps at a 120 s interval with a token
// (5,000 an hour) would ask 30,000 an hour. Paced, the fleet never hits the
// wall: no request is refused in four hours, and every app is asked at the
// shortest interval the quota allows (930 s), evenly. One line says that
// pacing started.
func TestPacingAtProductionNumbers(t *testing.T) {
	clk := fakeclock.New(time.Date(2026, 10, 10, 12, 0, 0, 0, time.UTC))
	src := &quotaSource{clock: clk, limit: 5000, asked: map[string][]time.Time{}}
	keys := make([]string, 1000)
	for i := range keys {
		keys[i] = fmt.Sprintf("app%04d", i)
	}
	core, logs := observer.New(zap.InfoLevel)
	obs := &fakeObserver{}
	tm := schedule.Timing{Interval: 120 * time.Second, MaxBackoff: 4 * time.Hour, Tick: 30 * time.Second}
	p, err := poller.New(poller.Config{Apps: apps(keys...), Timing: tm, QuotaPerHour: 5000, Source: src,
		Observer: obs, Logger: zap.New(core), Clock: clk, Rand: func() float64 { return 0.5 }})
	if err != nil {
		t.Fatal(err)
	}
	end := clk.Now().Add(4 * time.Hour)
	for ; clk.Now().Before(end); clk.Advance(tm.Tick) {
		p.Tick(context.Background())
	}
	if src.denied > 0 {
		t.Errorf("%d requests refused for the rate limit, want none", src.denied)
	}
	if got := obs.paced; len(got) == 0 || got[len(got)-1] != 930*time.Second {
		t.Errorf("effective intervals reported %v, want the last 930s", got)
	}
	if n := logs.FilterMessage("schedule paced to github quota").Len(); n != 1 {
		t.Errorf("logged the pacing %d times, want once", n)
	}
	// Every app is asked no sooner than the paced interval allows (930 s −
	// M), and the quota is used, not wasted: each hour after the first, when
	// every app was fetched at once, spends between 70 % and 100 % of it.
	perHour := map[time.Time]int{}
	for _, k := range keys {
		var prev time.Time
		for _, at := range src.asked[k] {
			perHour[at.Truncate(time.Hour)]++
			if gap := at.Sub(prev); !prev.IsZero() && gap < 900*time.Second {
				t.Fatalf("%s asked %v after its last request, want at least 900 s", k, gap)
			}
			prev = at
		}
	}
	for h, n := range perHour {
		if h.After(clk.Now().Add(-4*time.Hour)) && (n < 3500 || n > 5000) {
			t.Errorf("%d requests in the hour from %v, want 3,500 to 5,000", n, h.Format("15:04"))
		}
	}
	t.Logf("requests per hour: %v; effective interval at the end: %v", perHour, obs.paced[len(obs.paced)-1])
}

// headerSource is GitHub answering every request (a 200 the first time,
// then 304s) with the x-ratelimit-* headers headers gives at now.
type headerSource struct {
	clock   *fakeclock.Clock
	mu      sync.Mutex
	headers func(now time.Time) (remaining int, reset time.Time)
	asked   map[string][]time.Time
}

func (s *headerSource) Latest(_ context.Context, app release.App, etag string) release.Answer {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.clock.Now()
	s.asked[app.Key] = append(s.asked[app.Key], now)
	remaining, reset := s.headers(now)
	if etag == "" {
		return release.Answer{Outcome: release.Fetched, Release: &release.Release{Tag: "v1", Assets: []release.Asset{}},
			ETag: `"e"`, Remaining: remaining, Reset: reset}
	}
	return release.Answer{Outcome: release.NotModified, Remaining: remaining, Reset: reset}
}

// longestGap returns the longest time any app went without a request
// between from and to.
func (s *headerSource) longestGap(from, to time.Time) time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	var longest time.Duration
	for _, at := range s.asked {
		prev := from
		for _, a := range at {
			if a.After(from) && !a.After(to) {
				longest = max(longest, a.Sub(prev))
				prev = a
			}
		}
		longest = max(longest, to.Sub(prev))
	}
	return longest
}

// TestPacingBoundedByHeaders: whatever the quota headers say, a paced
// poller asks every app at least once per max backoff (4 h), so it learns
// when the headers are normal again and its interval comes back to the
// configured one. A reset too far ahead to be believed does not pace at all.
func TestPacingBoundedByHeaders(t *testing.T) {
	normal := func(now time.Time) (int, time.Time) { return 4900, now.Truncate(time.Hour).Add(time.Hour) }
	tests := []struct {
		name    string
		headers func(now time.Time) (int, time.Time)
		want    time.Duration // the effective interval while the headers hold
	}{
		{"1 left until a reset ten years away",
			func(time.Time) (int, time.Time) { return 1, t0.AddDate(10, 0, 0) }, timing.Interval},
		{"5,000 left until a reset 30 days away",
			func(time.Time) (int, time.Time) { return 5000, t0.AddDate(0, 0, 30) }, timing.Interval},
		// 13 × 3600 s / (0.8 × 1) asks for 16 h: capped at the max backoff.
		{"1 left until the next hour, every hour",
			func(now time.Time) (int, time.Time) { return 1, now.Add(time.Hour) }, timing.MaxBackoff},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clk := newClock()
			src := &headerSource{clock: clk, headers: tt.headers, asked: map[string][]time.Time{}}
			keys := make([]string, 13)
			for i := range keys {
				keys[i] = fmt.Sprintf("app%02d", i)
			}
			core, logs := observer.New(zap.InfoLevel)
			obs := &fakeObserver{}
			p, err := poller.New(poller.Config{Apps: apps(keys...), Timing: timing, QuotaPerHour: 5000, Source: src,
				Observer: obs, Logger: zap.New(core), Clock: clk, Rand: func() float64 { return 0.5 }})
			if err != nil {
				t.Fatal(err)
			}
			effective := func() time.Duration {
				obs.mu.Lock()
				defer obs.mu.Unlock()
				if len(obs.paced) == 0 {
					return timing.Interval
				}
				return obs.paced[len(obs.paced)-1]
			}
			run := func(d time.Duration) {
				for end := clk.Now().Add(d); clk.Now().Before(end); clk.Advance(timing.Tick) {
					p.Tick(context.Background())
				}
			}

			run(12 * time.Hour)
			under := effective()
			if under != tt.want {
				t.Errorf("effective interval %v under the headers, want %v", under, tt.want)
			}
			// Due once its fetch is I − M old, and asked at the next tick.
			if got, limit := src.longestGap(t0, clk.Now()), tt.want+timing.Tick; got > limit {
				t.Errorf("an app went %v without a request, want at most %v", got, limit)
			}

			src.mu.Lock()
			src.headers = normal
			src.mu.Unlock()
			changed := clk.Now()
			run(tt.want + 4*time.Hour)
			if got := effective(); got != timing.Interval {
				t.Errorf("effective interval %v after normal headers, want %v", got, timing.Interval)
			}
			if got, limit := src.longestGap(changed.Add(tt.want+timing.Tick), clk.Now()), timing.Interval+timing.Tick; got > limit {
				t.Errorf("an app went %v without a request after normal headers, want at most %v", got, limit)
			}
			want := 0
			if tt.want != timing.Interval {
				want = 1
			}
			paced := logs.FilterMessage("schedule paced to github quota").Len()
			back := logs.FilterMessage("schedule back to its interval").Len()
			if paced != want || back != want {
				t.Errorf("logged pacing %d times and its end %d times, want %d each", paced, back, want)
			}
			t.Logf("effective interval under the headers: %v, longest gap %v", under, src.longestGap(t0, changed))
		})
	}
}
