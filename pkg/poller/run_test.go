package poller_test

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/storytold/craft-releases/pkg/poller"
	"github.com/storytold/craft-releases/pkg/release"
	"github.com/storytold/craft-releases/pkg/schedule"
	"github.com/storytold/craft-releases/test/fakeclock"
)

func TestNew(t *testing.T) {
	src := &fakeSource{}
	tests := []struct {
		name    string
		c       poller.Config
		wantErr string
	}{
		{"no source", poller.Config{Apps: apps("a"), Timing: timing}, "new poller: no source"},
		{"zero interval", poller.Config{Apps: apps("a"), Timing: schedule.Timing{Tick: time.Second}, Source: src}, "new poller: interval 0s: must be positive"},
		{"zero tick", poller.Config{Apps: apps("a"), Timing: schedule.Timing{Interval: time.Second}, Source: src}, "new poller: tick 0s: must be positive"},
		{"an app listed twice", poller.Config{Apps: apps("a", "b", "a"), Timing: timing, Source: src}, `new poller: app "a" listed twice`},
		{"defaults for the rest", poller.Config{Apps: apps("a"), Timing: timing, Source: src}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := poller.New(tt.c)
			var got string
			if err != nil {
				got = err.Error()
			}
			if got != tt.wantErr {
				t.Fatalf("New() error = %q, want %q", got, tt.wantErr)
			}
			if err == nil && p == nil {
				t.Fatal("New() = nil, nil; want a poller")
			}
		})
	}
}

func TestLoadedBeforeRun(t *testing.T) {
	tests := []struct {
		name       string
		fleet      bool
		coordinate bool
		want       bool
	}{
		{"standalone is loaded at once", false, false, true},
		{"standalone ignores Coordinate", false, true, true},
		{"uncoordinated is loaded at once", true, false, true},
		{"coordinated waits for its start-up load", true, true, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var fleet *fakeFleet
			if tt.fleet {
				fleet = newFleet()
			}
			h := newHarness(t, []string{"a"}, fleet, tt.coordinate)
			if got := isClosed(h.p.Loaded()); got != tt.want {
				t.Errorf("Loaded() closed = %v, want %v", got, tt.want)
			}
		})
	}
}

func isClosed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// TestRunSequence runs the poller until the fake clock passes 50 s and checks
// what happened, in order: with draws of 0.5 the start-up jitter is 15 s and
// every tick 30 s.
func TestRunSequence(t *testing.T) {
	tests := []struct {
		name       string
		fleet      bool
		coordinate bool
		loadErr    error
		want       []string
		warns      []string
	}{
		{
			name:  "coordinated: the start-up load comes before the jitter",
			fleet: true, coordinate: true,
			want: []string{
				"Load", "loaded false", "wait 15s",
				"Load", "loaded true", "LoadApp a", "Claim a", "ask a", "PutFetch a", "wait 30s",
				"Load", "loaded true", "wait 30s",
			},
		},
		{
			name:  "coordinated with Redis down: the load is tried, then the poller goes on alone",
			fleet: true, coordinate: true, loadErr: errors.New("connection refused"),
			want: []string{
				"Load", "loaded false", "wait 15s",
				"Load", "loaded true", "ask a", "wait 30s",
				"Load", "loaded true", "wait 30s",
			},
			warns: []string{"redis unavailable"},
		},
		{
			name: "standalone: no load, the jitter first",
			want: []string{"wait 15s", "ask a", "wait 30s", "wait 30s"},
		},
		{
			name:  "uncoordinated: no load, but results are shared",
			fleet: true,
			want:  []string{"wait 15s", "ask a", "PutFetch a", "wait 30s", "wait 30s"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ev := &events{}
			var fleet *fakeFleet
			if tt.fleet {
				fleet = newFleet()
				fleet.events = ev
				fleet.errs["Load"] = tt.loadErr
			}
			h := newHarness(t, []string{"a"}, fleet, tt.coordinate)
			if fleet != nil {
				fleet.during = func(_ *fakeFleet, op, _ string) {
					if op == "Load" {
						ev.add(fmt.Sprintf("loaded %v", isClosed(h.p.Loaded())))
					}
				}
			}
			h.waits.events, h.source.events = ev, ev
			h.source.script = map[string]release.Answer{"a": fetched("v1", "e1")}

			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			h.afterWait = func(now time.Time) {
				if now.Sub(t0) > 50*time.Second {
					cancel()
				}
			}
			if err := h.p.Run(ctx); err != nil {
				t.Fatalf("Run() = %v, want nil", err)
			}
			if got := ev.all(); !slices.Equal(got, tt.want) {
				t.Errorf("events:\n got %q\nwant %q", got, tt.want)
			}
			if !isClosed(h.p.Loaded()) {
				t.Error("Loaded() still open after Run")
			}
			_, warns, _ := h.tickLogs(t)
			if !slices.Equal(warns, tt.warns) {
				t.Errorf("warnings %q, want %q", warns, tt.warns)
			}
		})
	}
}

func TestRunJitter(t *testing.T) {
	tests := []struct {
		name string
		u    float64
		want []time.Duration // the start-up jitter, then two tick waits
	}{
		{"bottom of the draw", 0, []time.Duration{0, 27 * time.Second, 27 * time.Second}},
		{"middle of the draw", 0.5, []time.Duration{15 * time.Second, 30 * time.Second, 30 * time.Second}},
		{"top of the draw", 0.999, []time.Duration{29_970 * time.Millisecond, 32_994 * time.Millisecond, 32_994 * time.Millisecond}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clock := newClock()
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			var waits []time.Duration
			clock.OnAfter(func(d time.Duration, _ time.Time) {
				if waits = append(waits, d); len(waits) == len(tt.want) {
					cancel()
				}
			})
			p, err := poller.New(poller.Config{
				Timing: timing, Source: &fakeSource{clock: clock}, Clock: clock,
				Rand: func() float64 { return tt.u },
			})
			if err != nil {
				t.Fatal(err)
			}
			if err := p.Run(ctx); err != nil {
				t.Fatalf("Run() = %v, want nil", err)
			}
			if got := waits; !slices.Equal(got, tt.want) {
				t.Errorf("waits = %v, want %v", got, tt.want)
			}
		})
	}
}

// TestRunCancel cancels a running poller while it waits and checks that Run
// returns nil, that the tick in progress stops, and that nothing of the
// poller is left running.
func TestRunCancel(t *testing.T) {
	tests := []struct {
		name   string
		fire   int // waits that pass before the one cancelled
		parked time.Duration
		asked  []string
	}{
		{name: "during the start-up jitter", fire: 0, parked: 15 * time.Second},
		{name: "during the spacing of a round", fire: 1, parked: time.Second, asked: []string{"a"}},
		// 30 s from the tick's start, of which the round's spacing took 1 s.
		{name: "between two ticks", fire: 2, parked: 29 * time.Second, asked: []string{"a", "b"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clock := fakeclock.New(t0)
			clock.Skip(tt.fire)
			src := &fakeSource{clock: clock, script: map[string]release.Answer{"a": fetched("v1", "e1"), "b": fetched("v1", "e1")}}
			p, err := poller.New(poller.Config{
				Apps: apps("a", "b"), Timing: timing, Source: src, Clock: clock,
				Logger: zap.NewNop(), Rand: func() float64 { return 0.5 },
			})
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan error)
			go func() { done <- p.Run(ctx) }()
			if got := parked(t, clock, 1); got != tt.parked {
				t.Errorf("parked in a wait of %v, want %v", got, tt.parked)
			}
			cancel()
			if err := <-done; err != nil {
				t.Errorf("Run() = %v, want nil", err)
			}
			if asked, _ := src.take(); !slices.Equal(asked, tt.asked) {
				t.Errorf("asked %q, want %q", asked, tt.asked)
			}
			if leak := pollerGoroutines(); leak != "" {
				t.Errorf("goroutines left after Run returned:\n%s", leak)
			}
		})
	}
}

// pollerGoroutines returns the stacks of the goroutines running code of
// package poller, other than tests.
func pollerGoroutines() string {
	buf := make([]byte, 1<<20)
	buf = buf[:runtime.Stack(buf, true)]
	var leaks []string
	for g := range strings.SplitSeq(string(buf), "\n\n") {
		if strings.Contains(g, "pkg/poller.(*Poller)") {
			leaks = append(leaks, g)
		}
	}
	return strings.Join(leaks, "\n\n")
}

// TestTickCancelled checks that a tick cancelled mid-round records nothing:
// the errors of shutdown are neither a Redis outage nor a GitHub failure.
func TestTickCancelled(t *testing.T) {
	h := newHarness(t, []string{"a", "b"}, newFleet(), true)
	ctx, cancel := context.WithCancel(context.Background())
	h.fleet.during = func(_ *fakeFleet, op, app string) {
		if op == "Claim" && app == "a" {
			cancel()
		}
	}
	h.fleet.errs["Claim"] = context.Canceled
	h.source.script = map[string]release.Answer{"a": failed()}
	h.p.Tick(ctx)
	if got, want := h.fleet.takeCalls(), []string{"Load", "LoadApp a", "Claim a"}; !slices.Equal(got, want) {
		t.Errorf("fleet calls %q, want %q", got, want)
	}
	if got := h.sink.takeSets(); got != nil {
		t.Errorf("sink sets %q, want none", got)
	}
	if _, _, all := h.tickLogs(t); len(all) != 0 {
		t.Errorf("logged %d lines, want none: %v", len(all), all)
	}
}
