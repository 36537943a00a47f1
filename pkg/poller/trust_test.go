package poller_test

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/storytold/craft-releases/pkg/clock"
	"github.com/storytold/craft-releases/pkg/poller"
	"github.com/storytold/craft-releases/pkg/release"
)

// TestNotFoundKeepsTheRelease: at the defaults (I = 30 min, F = 60 s), a
// repository that answers 404 for good keeps its release through the per-app
// retries, each 404 a failure that names the status, until the 404s have
// lasted a whole interval and three requests: then "no release", once, with
// a warning that names the tag it drops. Before, a 404 or two between good
// answers loses nothing, and the run of 404s starts again after a good one.
func TestNotFoundKeepsTheRelease(t *testing.T) {
	h := newHarness(t, []string{"a"}, nil, false)
	h.tick(t, 0, answers{"a": fetched("v1", "e1")})
	const blips = 6 * time.Hour // two 404s in every other interval, 304s between
	h.ticks(t, timing.Interval-timing.Tick, blips, func(d time.Duration) release.Answer {
		return map[bool]release.Answer{true: notFound(), false: notModified()}[(d/timing.Interval)%2 == 0]
	}, func(d time.Duration) {
		if e := h.sink.entry("a"); e.Release == nil || e.Release.Tag != "v1" {
			t.Fatalf("at %v: release lost to a blip: %+v", d, e)
		}
	})
	if n := h.obs.take(""); len(mentions(n, "answer a failed")) < 2*int(blips/timing.Interval/2)-2 {
		t.Fatalf("blips observed %q, want two 404s in every other interval", n)
	}
	h.logs.TakeAll()
	h.obs.take("entry")
	h.source.take()

	var firstAsked, dropped time.Duration
	var fourOhFours int
	h.ticks(t, blips, blips+3*time.Hour, func(time.Duration) release.Answer { return notFound() }, func(d time.Duration) {
		if len(h.source.takeAsked()) == 0 {
			return
		}
		if firstAsked == 0 {
			firstAsked = d
		}
		e := h.sink.entry("a")
		_, warns, logs := h.tickLogs(t)
		switch {
		case dropped != 0:
			if e.Release != nil || !e.Fetched() {
				t.Fatalf("at %v: a dropped release came back: %+v", d, e)
			}
		case e.Release == nil:
			dropped = d
			fourOhFours++
			if len(warns) != 1 || warns[0] != "release dropped after 404s" || fields(logs, warns[0])["tag"] != "v1" {
				t.Errorf("at %v: warnings %q, want one that the release v1 was dropped", d, warns)
			}
		default:
			fourOhFours++
			if e.Release.Tag != "v1" || e.Failures != fourOhFours || !e.FailedAt.Equal(at(d)) {
				t.Fatalf("at %v: entry %+v, want release v1 kept and %d failures", d, e, fourOhFours)
			}
			if len(warns) != 1 || warns[0] != "github request failed" ||
				!strings.Contains(fmt.Sprint(fields(logs, warns[0])["err"]), "HTTP 404") {
				t.Fatalf("at %v: warnings %q, want a failed request that names the 404", d, warns)
			}
		}
	})
	// The per-app retries (1, 2, 4, 8, 16 min, then I) reach an interval of
	// 404s at the sixth request, 31 minutes after the first.
	if got, want := dropped-firstAsked, 31*time.Minute; dropped == 0 || got != want || fourOhFours != 6 {
		t.Errorf("release dropped %v after the first 404, on the %d-th request; want %v, the 6th", got, fourOhFours, want)
	}
	failedAnswers := 0
	for _, c := range h.obs.take("") {
		if strings.HasPrefix(c, "answer a failed ") {
			failedAnswers++
		}
	}
	if failedAnswers != 5 {
		t.Errorf("observed %d failed answers, want the 5 404s that kept the release", failedAnswers)
	}
	if got := h.obs.take("entry"); len(got) == 0 || got[len(got)-1] != "a none ok" {
		t.Errorf("entries observed %q, want the last one without a release", got)
	}
}

// TestClockSkew: a coordinated poller on a clock.Corrected measures its
// clock against Redis's before every load. Within release.MaxSkew it keeps
// its own time, silently; beyond, it tells time by Redis from that tick on,
// warns once while it lasts, and says so when the clocks agree again.
func TestClockSkew(t *testing.T) {
	for _, skew := range []time.Duration{5 * s, -5 * s, 40 * s, -40 * s, time.Hour, -time.Hour} {
		t.Run(skew.String(), func(t *testing.T) {
			var off atomic.Int64
			off.Store(int64(-skew))
			h, told := correctedHarness(t, &off)
			node, redis := h.clock, h.fleet.redis
			h.source.clock = told
			far := skew.Abs() > release.MaxSkew
			for i := range 3 {
				h.p.Tick(context.Background())
				want := node.Now()
				if far {
					want = redis.Now()
				}
				if got := told.Now(); got.Sub(want).Abs() > time.Second {
					t.Fatalf("tick %d: the poller's time is %v off Redis's, want %v", i, got.Sub(redis.Now()), want.Sub(redis.Now()))
				}
				node.Advance(timing.Tick)
			}
			if got := h.obs.durations(t, "offset"); len(got) != 3 || (got[0]-skew).Abs() > time.Second || (got[2]-skew).Abs() > time.Second {
				t.Errorf("offsets observed %v, want %v at every tick", got, skew)
			}
			want := map[bool]int{false: 0, true: 1}[far]
			wantEq(t, "warnings", h.logged("clock differs from redis's"), want)
			off.Store(0) // the clocks are put right
			h.p.Tick(context.Background())
			wantEq(t, "lines that the clocks agree again", h.logged("clock agrees with redis's again"), want)
			if got := told.Now(); !got.Equal(node.Now()) {
				t.Errorf("after the fix the poller's time is %v off its node's, want its own", got.Sub(node.Now()))
			}
		})
	}
}

type nowFunc func() time.Time

func (f nowFunc) Now() time.Time { return f() }

// correctedHarness is a coordinated poller over a that tells time by a
// clock.Corrected, and Redis's clock off the node's by the offset in off.
func correctedHarness(t *testing.T, off *atomic.Int64) (*harness, *clock.Corrected) {
	var told *clock.Corrected
	h := newHarness(t, []string{"a"}, newFleet(), true, func(c *poller.Config) {
		told = clock.NewCorrected(c.Clock)
		c.Clock = told
	})
	h.fleet.redis = nowFunc(func() time.Time { return h.clock.Now().Add(time.Duration(off.Load())) })
	h.fleet.of = told
	return h, told
}

// TestRedisClockSteps runs a poller at the production timing for five hours
// on the fake clock while Redis's clock is an hour off and is then set right,
// each way: the poller tells time by Redis, and a correction that moves its
// time must stretch no wait (they are measured on its node's clock) and make
// no fetch written meanwhile look fresh or newer than an honest one. So no
// gap between two requests exceeds the interval and a tick, and the release
// of each request is shared and passed on before the next.
func TestRedisClockSteps(t *testing.T) {
	for _, off := range []time.Duration{time.Hour, -time.Hour} {
		t.Run(off.String(), func(t *testing.T) {
			var step atomic.Int64
			step.Store(int64(off))
			h, _ := correctedHarness(t, &step)
			fleet := h.fleet
			var lost []string // "vN shared|sunk as vM": a release not passed on
			n := 0
			h.source.otherwise = func(release.App, string, time.Time) release.Answer {
				if n > 0 {
					want := fmt.Sprintf("v%d", n)
					for how, e := range map[string]release.Entry{"shared": fleet.entry("a"), "sunk": h.sink.entry("a")} {
						if tagOf(e.Release) != want {
							lost = append(lost, fmt.Sprintf("%s %s as %s", want, how, tagOf(e.Release)))
						}
					}
				}
				n++
				return fetched(fmt.Sprintf("v%d", n), fmt.Sprintf(`"e%d"`, n))
			}
			stepAt := at(2*time.Hour + 10*time.Minute)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			h.afterWait = func(now time.Time) {
				if !now.Before(stepAt) {
					step.Store(0)
				}
				if now.Sub(t0) > 5*time.Hour {
					cancel()
				}
			}
			if err := h.p.Run(ctx); err != nil {
				t.Fatalf("Run() = %v, want nil", err)
			}
			_, asked := h.source.take()
			if len(asked) < 8 {
				t.Fatalf("asked GitHub %d times in 5 h, want about 10", len(asked))
			}
			var longest time.Duration
			for i := 1; i < len(asked); i++ {
				longest = max(longest, asked[i].Sub(asked[i-1]))
			}
			if limit := timing.Interval + timing.Tick + timing.Tick/10; longest > limit {
				t.Errorf("longest gap between two requests %v, want at most %v", longest, limit)
			}
			if len(lost) > 0 {
				t.Errorf("%d releases not passed on before the next request, the first: %q", len(lost), lost[:min(2, len(lost))])
			}
		})
	}
}
