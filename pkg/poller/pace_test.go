package poller_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/storytold/craft-releases/pkg/poller"
	"github.com/storytold/craft-releases/pkg/release"
	"github.com/storytold/craft-releases/pkg/schedule"
)

// pacedHarness is a poller over keys with GitHub's hourly quota of 5,000,
// GitHub announcing what headers(now) says is left on every answer (a 200
// the first time, then 304s).
func pacedHarness(t *testing.T, keys []string, tm schedule.Timing, headers func(now time.Time) (int, time.Time)) *harness {
	h := newHarness(t, keys, nil, false, func(c *poller.Config) { c.Timing, c.QuotaPerHour = tm, 5000 })
	h.source.otherwise = func(app release.App, etag string, now time.Time) release.Answer {
		remaining, reset := headers(now)
		if remaining < 0 {
			return release.Answer{Outcome: release.RateLimited, RetryAt: reset, Err: fmt.Errorf("HTTP 403"), Remaining: 0, Reset: reset}
		}
		return quota(steady(app, etag, now), remaining, reset)
	}
	return h
}

// askedAt returns, by app, when each was asked.
func askedAt(h *harness) map[string][]time.Time {
	asked, when := h.source.take()
	out := map[string][]time.Time{}
	for i, call := range asked {
		key, _, _ := strings.Cut(call, "(")
		out[key] = append(out[key], when[i])
	}
	return out
}

// TestPacingAtProductionNumbers: 1,000 apps at a 120 s interval with a token
// (5,000 an hour) would ask 30,000 an hour. Paced, the fleet never hits the
// wall: no request is refused in four hours, and every app is asked at the
// shortest interval the quota allows (930 s), evenly. One line says that
// pacing started.
func TestPacingAtProductionNumbers(t *testing.T) {
	var hour time.Time // the window being spent
	used, denied := 0, 0
	tm := schedule.Timing{Interval: 120 * time.Second, MaxBackoff: 4 * time.Hour, Tick: 30 * time.Second}
	h := pacedHarness(t, numbered("app", 1000, 4), tm, func(now time.Time) (int, time.Time) {
		if w := now.Truncate(time.Hour); !w.Equal(hour) {
			hour, used = w, 0
		}
		if used == 5000 {
			denied++
			return -1, hour.Add(time.Hour)
		}
		used++
		return 5000 - used, hour.Add(time.Hour)
	})
	for end := h.clock.Now().Add(4 * time.Hour); h.clock.Now().Before(end); h.clock.Advance(tm.Tick) {
		h.tick(t, h.clock.Now().Sub(t0), nil)
	}
	if denied > 0 {
		t.Errorf("%d requests refused for the rate limit, want none", denied)
	}
	if got := lastPaced(t, h); got != 930*time.Second {
		t.Errorf("effective interval reported last %v, want 930s", got)
	}
	if n := h.logged("schedule paced to github quota"); n != 1 {
		t.Errorf("logged the pacing %d times, want once", n)
	}
	// Every app is asked no sooner than the paced interval allows (930 s −
	// M), and the quota is used, not wasted: each hour after the first, when
	// every app was fetched at once, spends between 70 % and 100 % of it.
	perHour := map[time.Time]int{}
	for k, times := range askedAt(h) {
		for i, at := range times {
			perHour[at.Truncate(time.Hour)]++
			if i > 0 && at.Sub(times[i-1]) < 900*time.Second {
				t.Fatalf("%s asked %v after its last request, want at least 900 s", k, at.Sub(times[i-1]))
			}
		}
	}
	for hr, n := range perHour {
		if hr.After(h.clock.Now().Add(-4*time.Hour)) && (n < 3500 || n > 5000) {
			t.Errorf("%d requests in the hour from %v, want 3,500 to 5,000", n, hr.Format("15:04"))
		}
	}
}

// longestGap returns the longest time any app of asked went without a
// request between from and to.
func longestGap(asked map[string][]time.Time, from, to time.Time) time.Duration {
	var longest time.Duration
	for _, times := range asked {
		prev := from
		for _, a := range times {
			if a.After(from) && !a.After(to) {
				longest = max(longest, a.Sub(prev))
				prev = a
			}
		}
		longest = max(longest, to.Sub(prev))
	}
	return longest
}

// TestPacingBoundedByHeaders: whatever the quota headers say (schedule.Pace
// caps the interval they ask for at the max backoff), a paced poller asks
// every app at least once per max backoff (4 h), so it learns when the
// headers are normal again and its interval comes back to the configured
// one, each change said once.
func TestPacingBoundedByHeaders(t *testing.T) {
	oneLeft := true
	h := pacedHarness(t, thirteen, timing, func(now time.Time) (int, time.Time) {
		if oneLeft {
			return 1, now.Add(time.Hour)
		}
		return 4900, now.Truncate(time.Hour).Add(time.Hour)
	})
	run := func(d time.Duration) {
		for end := h.clock.Now().Add(d); h.clock.Now().Before(end); h.clock.Advance(timing.Tick) {
			h.tick(t, h.clock.Now().Sub(t0), nil)
		}
	}
	run(12 * time.Hour)
	if got := lastPaced(t, h); got != timing.MaxBackoff {
		t.Errorf("effective interval %v under the headers, want %v", got, timing.MaxBackoff)
	}
	asked := askedAt(h)
	// Due once its fetch is I − M old, and asked at the next tick.
	if got, limit := longestGap(asked, t0, h.clock.Now()), timing.MaxBackoff+timing.Tick; got > limit {
		t.Errorf("an app went %v without a request, want at most %v", got, limit)
	}
	oneLeft = false
	changed := h.clock.Now()
	run(timing.MaxBackoff + 4*time.Hour)
	if got := lastPaced(t, h); got != timing.Interval {
		t.Errorf("effective interval %v after normal headers, want %v", got, timing.Interval)
	}
	if got, limit := longestGap(askedAt(h), changed.Add(timing.MaxBackoff+timing.Tick), h.clock.Now()), timing.Interval+timing.Tick; got > limit {
		t.Errorf("an app went %v without a request after normal headers, want at most %v", got, limit)
	}
	paced := h.logged("schedule paced to github quota")
	back := h.logged("schedule back to its interval")
	if paced != 1 || back != 1 {
		t.Errorf("logged pacing %d times and its end %d times, want once each", paced, back)
	}
}

// lastPaced is the effective interval the Observer heard of last.
func lastPaced(t *testing.T, h *harness) time.Duration {
	t.Helper()
	paced := h.obs.durations(t, "paced")
	if len(paced) == 0 {
		t.Fatal("no effective interval reported")
	}
	return paced[len(paced)-1]
}
