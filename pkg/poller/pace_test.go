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
	tm := schedule.Timing{Interval: 120 * time.Second, MaxBackoff: 4 * time.Hour, Tick: timing.Tick}
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
	h.ticks(t, 0, 4*time.Hour, nil, nil)
	if denied > 0 {
		t.Errorf("%d requests refused for the rate limit, want none", denied)
	}
	wantEq(t, "effective interval reported last", lastPaced(t, h), 930*time.Second)
	wantEq(t, "pacing lines", h.logged("schedule paced to github quota"), 1)
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
		if hr.After(t0) && (n < 3500 || n > 5000) {
			t.Errorf("%d requests in the hour from %v, want 3,500 to 5,000", n, hr.Format("15:04"))
		}
	}
}

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
	const changed = 12 * time.Hour // when the headers are normal again
	h.ticks(t, 0, changed, nil, nil)
	wantEq(t, "effective interval under the headers", lastPaced(t, h), timing.MaxBackoff)
	// Due once its fetch is I − M old, and asked at the next tick.
	if got, limit := longestGap(askedAt(h), t0, at(changed)), timing.MaxBackoff+timing.Tick; got > limit {
		t.Errorf("an app went %v without a request, want at most %v", got, limit)
	}
	oneLeft = false
	end := changed + timing.MaxBackoff + 4*time.Hour
	h.ticks(t, changed, end, nil, nil)
	wantEq(t, "effective interval after normal headers", lastPaced(t, h), timing.Interval)
	if got, limit := longestGap(askedAt(h), at(changed+timing.MaxBackoff+timing.Tick), at(end)), timing.Interval+timing.Tick; got > limit {
		t.Errorf("an app went %v without a request after normal headers, want at most %v", got, limit)
	}
	wantEq(t, "pacing lines", h.logged("schedule paced to github quota"), 1)
	wantEq(t, "lines that pacing ended", h.logged("schedule back to its interval"), 1)
}

func lastPaced(t *testing.T, h *harness) time.Duration {
	t.Helper()
	paced := h.obs.durations(t, "paced")
	if len(paced) == 0 {
		t.Fatal("no effective interval reported")
	}
	return paced[len(paced)-1]
}
