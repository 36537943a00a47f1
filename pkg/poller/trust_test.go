package poller_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/storytold/craft-releases/pkg/clock"
	"github.com/storytold/craft-releases/pkg/poller"
	"github.com/storytold/craft-releases/pkg/release"
	"github.com/storytold/craft-releases/test/fakeclock"
)

func notFound() release.Answer {
	return release.Answer{Outcome: release.NotFound, Err: errors.New("latest release o/a: HTTP 404"), Remaining: -1}
}

// ticks runs h's poller every Tick from from to until, GitHub answering
// answer(now) for "a", and calls each(now) after every tick.
func ticks(t *testing.T, h *harness, from, until time.Duration, answer func(time.Duration) release.Answer, each func(time.Duration)) {
	t.Helper()
	for d := from; d < until; d += timing.Tick {
		setClock(t, h.clock, at(d))
		h.source.script = map[string]release.Answer{"a": answer(d)}
		h.p.Tick(context.Background())
		each(d)
	}
}

// TestNotFoundKeepsTheRelease: at the defaults (I = 30 min, F = 60 s), a
// repository that answers 404 for good keeps its release through the per-app
// retries, each 404 a failure that names the status, until the 404s have
// lasted a whole interval and three requests: then "no release", once, with
// a warning that names the tag it drops.
func TestNotFoundKeepsTheRelease(t *testing.T) {
	h := newHarness(t, []string{"a"}, nil, false)
	h.source.script = map[string]release.Answer{"a": fetched("v1", "e1")}
	h.p.Tick(context.Background())
	h.logs.TakeAll()

	first := timing.Interval // the first 404: once the fetch is due, at a tick
	var firstAsked, dropped time.Duration
	var fourOhFours int
	ticks(t, h, first-timing.Tick, 3*time.Hour, func(time.Duration) release.Answer { return notFound() }, func(d time.Duration) {
		asked, _ := h.source.take()
		if len(asked) == 0 {
			return
		}
		if firstAsked == 0 {
			firstAsked = d
		}
		e := h.sink.entry("a")
		_, warns, all := h.tickLogs(t)
		switch {
		case dropped != 0:
			if e.Release != nil || !e.Fetched() {
				t.Fatalf("at %v: a dropped release came back: %+v", d, e)
			}
		case e.Release == nil:
			dropped = d
			fourOhFours++
			if got := d - firstAsked; got < timing.Interval || fourOhFours < 3 {
				t.Fatalf("release dropped %v after the first 404, on the %d-th: want an interval and 3 at least", got, fourOhFours)
			}
			if len(warns) != 1 || warns[0] != "release dropped after 404s" || warned(all, warns[0])["tag"] != "v1" {
				t.Errorf("at %v: warnings %q, want one that the release v1 was dropped", d, warns)
			}
		default:
			fourOhFours++
			if e.Release.Tag != "v1" || e.Failures != fourOhFours || !e.FailedAt.Equal(at(d)) {
				t.Fatalf("at %v: entry %+v, want release v1 kept and %d failures", d, e, fourOhFours)
			}
			if len(warns) != 1 || warns[0] != "github request failed" ||
				!strings.Contains(fmt.Sprint(warned(all, warns[0])["err"]), "HTTP 404") {
				t.Fatalf("at %v: warnings %q, want a failed request that names the 404", d, warns)
			}
		}
	})
	if dropped == 0 {
		t.Fatal("a repository gone for 3 hours kept its release")
	}
	// The per-app retries (1, 2, 4, 8, 16 min, then I) reach an interval of
	// 404s at the sixth request, 31 minutes after the first.
	if got, want := dropped-firstAsked, 31*time.Minute; got != want || fourOhFours != 6 {
		t.Errorf("release dropped %v after the first 404, on the %d-th request; want %v, the 6th", got, fourOhFours, want)
	}
	if got := countAnswers(h.obs.take(), "a failed"); got != 5 {
		t.Errorf("observed %d failed answers, want the 5 404s that kept the release", got)
	}
}

// warned returns the fields of the warning msg among logs.
func warned(logs []observer.LoggedEntry, msg string) map[string]any {
	for _, e := range logs {
		if e.Message == msg {
			return e.ContextMap()
		}
	}
	return nil
}

// countAnswers counts the observed answers of app and outcome ("a failed").
func countAnswers(calls []string, appOutcome string) int {
	n := 0
	for _, c := range calls {
		if strings.HasPrefix(c, "answer "+appOutcome+" ") {
			n++
		}
	}
	return n
}

// TestNotFoundBlip: a 404 or two between good answers loses nothing, and
// the run of 404s starts again after a good answer.
func TestNotFoundBlip(t *testing.T) {
	h := newHarness(t, []string{"a"}, nil, false)
	h.source.script = map[string]release.Answer{"a": fetched("v1", "e1")}
	h.p.Tick(context.Background())
	blips := 0
	ticks(t, h, timing.Interval-timing.Tick, 12*time.Hour, func(d time.Duration) release.Answer {
		// Two 404s in every interval, then GitHub answers again.
		if (d/timing.Interval)%2 == 0 {
			blips++
			return notFound()
		}
		return notModified()
	}, func(d time.Duration) {
		if e := h.sink.entry("a"); e.Release == nil || e.Release.Tag != "v1" {
			t.Fatalf("at %v: release lost to a blip: %+v", d, e)
		}
	})
	if blips == 0 {
		t.Fatal("no 404 was answered")
	}
}

// TestNotFoundWithoutARelease: an app that never had a release takes a 404
// at once: fetched, no release, no failure.
func TestNotFoundWithoutARelease(t *testing.T) {
	h := newHarness(t, []string{"a"}, nil, false)
	h.source.script = map[string]release.Answer{"a": notFound()}
	h.p.Tick(context.Background())
	if e := h.sink.entry("a"); !e.Fetched() || e.Release != nil || e.Failing() {
		t.Errorf("entry %+v, want fetched with no release", e)
	}
	if _, warns, _ := h.tickLogs(t); len(warns) != 0 {
		t.Errorf("warnings %q, want none", warns)
	}
}

// TestClockSkew: a coordinated poller on a clock.Corrected measures its
// clock against Redis's before every load. Within release.MaxSkew it keeps
// its own time, silently; beyond, it tells time by Redis from that tick on,
// warns once while it lasts, and says so when the clocks agree again.
func TestClockSkew(t *testing.T) {
	for _, skew := range []time.Duration{5 * time.Second, -5 * time.Second, 40 * time.Second, -40 * time.Second, time.Hour, -time.Hour} {
		t.Run(skew.String(), func(t *testing.T) {
			redis := fakeclock.New(t0)
			node := fakeclock.New(t0.Add(skew))
			told := clock.NewCorrected(node)
			fleet := newFleet()
			fleet.redis, fleet.of = redis, told
			core, logs := observer.New(zap.InfoLevel)
			obs := &fakeObserver{}
			p, err := poller.New(poller.Config{
				Apps: apps("a"), Timing: timing, Source: &fakeSource{clock: told}, Fleet: fleet, Coordinate: true,
				Observer: obs, Logger: zap.New(core), Clock: told, Rand: func() float64 { return 0.5 },
			})
			if err != nil {
				t.Fatal(err)
			}
			far := skew.Abs() > release.MaxSkew
			for i := range 3 {
				p.Tick(context.Background())
				want := node.Now()
				if far {
					want = redis.Now()
				}
				if got := told.Now(); got.Sub(want).Abs() > time.Second {
					t.Fatalf("tick %d: the poller's time is %v off Redis's, want %v", i, got.Sub(redis.Now()), want.Sub(redis.Now()))
				}
				redis.Advance(timing.Tick)
				node.Advance(timing.Tick)
			}
			if got := obs.offsets; len(got) != 3 || (got[0]-skew).Abs() > time.Second || (got[2]-skew).Abs() > time.Second {
				t.Errorf("offsets observed %v, want %v at every tick", got, skew)
			}
			warned := logs.FilterMessage("clock differs from redis's").Len()
			if want := map[bool]int{false: 0, true: 1}[far]; warned != want {
				t.Errorf("warned %d times, want %d", warned, want)
			}
			// The node's clock is put right.
			if skew > 0 {
				redis.Advance(skew)
			} else {
				node.Advance(-skew)
			}
			p.Tick(context.Background())
			if got, want := logs.FilterMessage("clock agrees with redis's again").Len(), map[bool]int{false: 0, true: 1}[far]; got != want {
				t.Errorf("told %d times that the clocks agree again, want %d", got, want)
			}
			if got := told.Now(); !got.Equal(node.Now()) {
				t.Errorf("after the fix the poller's time is %v off its node's, want its own", got.Sub(node.Now()))
			}
		})
	}
}

// steppingClock is Redis's clock: its node's, off by a step that a test
// changes as Redis's clock is set right (or a failover makes another node's
// clock Redis's).
type steppingClock struct {
	node clock.Clock
	mu   sync.Mutex
	step time.Duration
}

func (c *steppingClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.node.Now().Add(c.step)
}

func (c *steppingClock) set(d time.Duration) {
	c.mu.Lock()
	c.step = d
	c.mu.Unlock()
}

// releasingSource answers every request with a new release, records when
// each was asked by the node's clock, and checks at each request that the
// previous release was passed on: shared with the fleet and given to the sink.
type releasingSource struct {
	node  clock.Clock
	fleet *fakeFleet
	sink  *fakeSink
	mu    sync.Mutex
	at    []time.Time
	lost  []string // "vN shared|sunk as vM": a release not passed on
}

func (s *releasingSource) Latest(_ context.Context, _ release.App, _ string) release.Answer {
	s.mu.Lock()
	defer s.mu.Unlock()
	if n := len(s.at); n > 0 {
		want := fmt.Sprintf("v%d", n)
		for how, e := range map[string]release.Entry{"shared": s.fleet.entry("a"), "sunk": s.sink.entry("a")} {
			if e.Release == nil || e.Release.Tag != want {
				s.lost = append(s.lost, fmt.Sprintf("%s %s as %+v, asked at +%v", want, how, e.Release, s.at[n-1].Sub(t0)))
			}
		}
	}
	s.at = append(s.at, s.node.Now())
	return fetched(fmt.Sprintf("v%d", len(s.at)), fmt.Sprintf(`"e%d"`, len(s.at)))
}

// TestRedisClockSteps runs a poller at the production timing for five hours
// on the fake clock while Redis's clock is an hour off and is then set right,
// each way: the poller tells time by Redis, and a correction that moves its
// time must stretch no wait (they are measured on its node's clock) and make
// no fetch written meanwhile look fresh or newer than an honest one. So no
// gap between two requests exceeds the interval and a tick, and the release
// of the first request after the step is shared and passed on at once.
func TestRedisClockSteps(t *testing.T) {
	for _, off := range []time.Duration{time.Hour, -time.Hour} {
		t.Run(off.String(), func(t *testing.T) {
			node := fakeclock.New(t0)
			node.Skip(-1)
			told := clock.NewCorrected(node)
			redis := &steppingClock{node: node, step: off}
			fleet := newFleet()
			fleet.redis, fleet.of = redis, told
			sink := &fakeSink{}
			source := &releasingSource{node: node, fleet: fleet, sink: sink}
			p, err := poller.New(poller.Config{
				Apps: apps("a"), Timing: timing, Source: source, Fleet: fleet, Coordinate: true,
				Sink: sink, Clock: told, Rand: func() float64 { return 0.5 },
			})
			if err != nil {
				t.Fatal(err)
			}
			stepAt := t0.Add(2*time.Hour + 10*time.Minute)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			node.OnAfter(func(_ time.Duration, now time.Time) {
				if !now.Before(stepAt) {
					redis.set(0)
				}
				if now.Sub(t0) > 5*time.Hour {
					cancel()
				}
			})
			if err := p.Run(ctx); err != nil {
				t.Fatalf("Run() = %v, want nil", err)
			}

			source.mu.Lock()
			asked := source.at
			source.mu.Unlock()
			if len(asked) < 8 {
				t.Fatalf("asked GitHub %d times in 5 h, want about 10", len(asked))
			}
			var longest time.Duration
			for i := 1; i < len(asked); i++ {
				longest = max(longest, asked[i].Sub(asked[i-1]))
			}
			t.Logf("longest gap between two requests: %v", longest)
			if limit := timing.Interval + timing.Tick + timing.Tick/10; longest > limit {
				t.Errorf("longest gap between two requests %v, want at most %v", longest, limit)
			}
			if len(source.lost) > 0 {
				t.Errorf("%d releases not passed on before the next request, the first: %q", len(source.lost), source.lost[:min(2, len(source.lost))])
			}
		})
	}
}
