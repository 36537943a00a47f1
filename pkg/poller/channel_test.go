package poller_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/storytold/craft-releases/pkg/poller"
	"github.com/storytold/craft-releases/pkg/release"
)

// steadySource answers every request: a release the first time, a 304
// after, and counts them by entry and channel.
type steadySource struct {
	mu sync.Mutex
	n  map[string]int
	ch map[release.Channel]int
}

func (s *steadySource) Latest(_ context.Context, app release.App, etag string) release.Answer {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.n[app.Key]++
	s.ch[app.Channel]++
	if etag != "" {
		return release.Answer{Outcome: release.NotModified, Remaining: -1}
	}
	return release.Answer{Outcome: release.Fetched, ETag: `"e"`, Release: rel("v1"), Remaining: -1}
}

// requestsPerInterval runs a standalone poller of apps for hours at the
// production timing (I = 30 min) on the fake clock and returns GitHub
// requests per app per interval, and per entry.
func requestsPerInterval(t *testing.T, apps []release.App, hours int) (perApp float64, src *steadySource) {
	t.Helper()
	src = &steadySource{n: map[string]int{}, ch: map[release.Channel]int{}}
	clock := newClock()
	p, err := poller.New(poller.Config{Apps: release.Entries(apps), Timing: timing, Source: src, Logger: zap.NewNop(), Clock: clock})
	if err != nil {
		t.Fatal(err)
	}
	end := t0.Add(time.Duration(hours) * time.Hour)
	for clock.Now().Before(end) {
		p.Tick(context.Background())
		setClock(t, clock, clock.Now().Add(timing.Tick))
	}
	total := 0
	for _, n := range src.n {
		total += n
	}
	return float64(total) / float64(len(apps)) / (float64(hours) * float64(time.Hour) / float64(timing.Interval)), src
}

// TestChannelRequests: at the production interval, an app costs one GitHub
// request per interval, and one more on the pre-release channel: each entry
// is asked once per interval (the first round included), never more.
func TestChannelRequests(t *testing.T) {
	t.Parallel()
	const hours = 10
	apps := make([]release.App, 13)
	for i := range apps {
		apps[i] = release.App{Key: fmt.Sprintf("app%02d", i), Name: "App", Repo: fmt.Sprintf("org/app%02d", i)}
	}
	without, _ := requestsPerInterval(t, apps, hours)
	for i := range apps {
		apps[i].Prereleases = true
	}
	with, src := requestsPerInterval(t, apps, hours)
	t.Logf("GitHub requests per app per interval at I = 30 min over %d h: %.2f without the channel, %.2f with it", hours, without, with)
	// Each entry is due once per I − M = 29.5 min: 20 or 21 requests in 10 h.
	for key, n := range src.n {
		if n < 20 || n > 21 {
			t.Errorf("%s asked %d times in %d h, want 20 or 21 (once per I − M)", key, n, hours)
		}
	}
	if src.ch[release.Prerelease] != src.ch[release.Stable] {
		t.Errorf("%d list requests for %d latest-release requests, want as many", src.ch[release.Prerelease], src.ch[release.Stable])
	}
	if len(src.n) != 2*len(apps) || with < 1.9*without || with > 2.1*without {
		t.Errorf("%d entries asked, %.2f requests with the channel against %.2f without: want two entries per app, twice the requests",
			len(src.n), with, without)
	}
}
