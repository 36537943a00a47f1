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
