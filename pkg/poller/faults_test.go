package poller_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/storytold/craft-releases/pkg/poller"
	"github.com/storytold/craft-releases/pkg/release"
	"github.com/storytold/craft-releases/pkg/schedule"
	"github.com/storytold/craft-releases/test/fakeclock"
)

// thirteen are 13 app keys, as many as the default app list.
var thirteen = []string{"a", "b", "c", "d", "e", "f", "g", "h", "i", "j", "k", "l", "m"}

// TestReadOnlyRedisIsOneOutage is Redis after a failover, at the production
// timing: reads work while every write answers READONLY, and some app is due
// at every tick. That is one outage, warned once, and Redis is back only after
// the first whole tick without an error, when every entry is written back.
func TestReadOnlyRedisIsOneOutage(t *testing.T) {
	fleet := newFleet()
	for i, app := range thirteen {
		// Due one after the other, one per tick.
		fleet.set(app, release.Entry{FetchedAt: at(-(timing.Interval - timing.SkewMargin()) + time.Duration(i)*timing.Tick),
			ETag: "x1", Release: rel("v1")})
	}
	//nolint:revive // Redis's own words, as rueidis returns them.
	readOnly := errors.New("READONLY You can't write against a read only replica.")
	for _, op := range []string{"Claim", "PutFetch", "PutNotModified", "PutFailure", "PutBackoff", "ClearBackoff"} {
		fleet.setErr(op, readOnly)
	}
	h := newHarness(t, thirteen, fleet, true)
	answers := func() map[string]release.Answer {
		m := make(map[string]release.Answer, len(thirteen))
		for _, app := range thirteen {
			m[app] = notModified()
		}
		return m
	}
	const outage = 10 * time.Minute
	var tick time.Duration
	for ; tick < outage; tick += timing.Tick {
		setClock(t, h.clock, at(tick))
		h.source.script = answers()
		h.p.Tick(context.Background())
	}
	if asked, _ := h.source.take(); len(asked) != len(thirteen) {
		t.Errorf("asked %d times in %v, want each of the %d apps once: %q", len(asked), outage, len(thirteen), asked)
	}
	if got := h.logs.FilterMessage("redis unavailable").Len(); got != 1 {
		t.Errorf("%d \"redis unavailable\" warnings in %v of READONLY writes, want 1", got, outage)
	}
	if got := h.logs.FilterMessage("redis is back").Len(); got != 0 {
		t.Errorf("%d \"redis is back\" while writes fail, want 0", got)
	}

	for _, op := range []string{"Claim", "PutFetch", "PutNotModified", "PutFailure", "PutBackoff", "ClearBackoff"} {
		fleet.setErr(op, nil)
	}
	setClock(t, h.clock, at(tick))
	h.p.Tick(context.Background())
	if got := h.logs.FilterMessage("redis is back").Len(); got != 1 {
		t.Errorf("%d \"redis is back\" after a tick with writes working, want 1", got)
	}
	for _, app := range thirteen {
		if got, want := fleet.entry(app).FetchedAt, h.sink.entry(app).FetchedAt; !got.Equal(want) {
			t.Errorf("%s: shared fetch at %v, want memory's %v", app, since(got), since(want))
		}
	}
}

// TestOneFailingAppDoesNotPauseTheFleet runs 13 apps for 6 hours at the
// production timing, one of which fails every request: the rounds in which
// it is the only app asked set no fleet backoff, so every healthy app is
// asked again as soon as it is due.
func TestOneFailingAppDoesNotPauseTheFleet(t *testing.T) {
	h := newHarness(t, thirteen, nil, false)
	// Due at I − M, asked at the next tick at the latest.
	limit := timing.Interval - timing.SkewMargin() + timing.Tick
	for tick := time.Duration(0); tick < 6*time.Hour; tick += timing.Tick {
		setClock(t, h.clock, at(tick))
		h.source.script = map[string]release.Answer{}
		for _, app := range thirteen {
			h.source.script[app] = fetched("v1", "e1")
		}
		h.source.script["m"] = failed()
		h.p.Tick(context.Background())
		rounds, _, _ := h.tickLogs(t)
		for _, r := range rounds {
			if r.Backoff != 0 || r.Trouble != 0 {
				t.Fatalf("at %v: round %+v, want no fleet backoff", tick, r)
			}
		}
		for _, app := range thirteen[:12] {
			if age := h.clock.Now().Sub(h.sink.entry(app).FetchedAt); age > limit {
				t.Fatalf("at %v: %s last fetched %v ago, want at most %v", tick, app, age, limit)
			}
		}
	}
	if got, want := h.sink.entry("m").Failures, 13; got < want {
		t.Errorf("the failing app failed %d times in a row, want at least %d: %s", got, want, fmt.Sprint(h.sink.entry("m")))
	}
}

// silentFleet is a Redis that answers no read, for a tick on the fake clock:
// each read fails once its context's deadline has passed, or its own call
// timeout when that comes first, as the Store's reads do. A deadline, set on
// the wall clock, is taken to fall as long after the tick's start on the
// fake clock (fake) as after it on the wall clock (wall).
type silentFleet struct {
	*fakeFleet
	clock      *fakeclock.Clock
	timeout    time.Duration // each read's own
	wall, fake time.Time
}

func (f *silentFleet) silent(ctx context.Context, op string) error {
	end := f.clock.Now().Add(f.timeout)
	if d, ok := ctx.Deadline(); ok {
		if at := f.fake.Add(d.Sub(f.wall)); at.Before(end) {
			end = at
		}
	}
	if end.After(f.clock.Now()) {
		f.clock.Set(end)
	}
	return fmt.Errorf("%s: %w", op, context.DeadlineExceeded)
}

func (f *silentFleet) ClockOffset(ctx context.Context) (time.Duration, error) {
	return 0, f.silent(ctx, "time")
}

func (f *silentFleet) Load(ctx context.Context, _ []string) (map[string]release.Entry, schedule.Backoff, error) {
	return nil, schedule.Backoff{}, f.silent(ctx, "load")
}

// TestSilentRedisCostsATickOneTimeout: with a Redis that has gone silent, a
// tick's reads (the clock's measure, then the load) give up together at the
// call timeout (5 s), and the tick asks GitHub from memory then, not after a
// timeout for each read.
func TestSilentRedisCostsATickOneTimeout(t *testing.T) {
	const timeout = 5 * time.Second
	clk := newClock()
	fleet := &silentFleet{fakeFleet: newFleet(), clock: clk, timeout: timeout}
	src := &fakeSource{clock: clk, script: map[string]release.Answer{"a": fetched("v1", "e1")}}
	p, err := poller.New(poller.Config{Apps: apps("a"), Timing: timing, Source: src, Fleet: fleet,
		Coordinate: true, ReadTimeout: timeout, Clock: clk, Rand: func() float64 { return 0.5 }})
	if err != nil {
		t.Fatal(err)
	}
	fleet.wall, fleet.fake = time.Now(), clk.Now()
	p.Tick(context.Background())
	// The deadline was set a moment after the tick began, on the wall clock.
	slack := time.Since(fleet.wall)
	asked, when := src.take()
	if len(asked) != 1 {
		t.Fatalf("asked GitHub %q, want a", asked)
	}
	if took := when[0].Sub(fleet.fake); took > timeout+slack {
		t.Errorf("asked GitHub %v after the tick began, want within the call timeout, %v", took, timeout)
	}
}
