package poller_test

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/storytold/craft-releases/pkg/poller"
	"github.com/storytold/craft-releases/pkg/release"
	"github.com/storytold/craft-releases/pkg/schedule"
	"github.com/storytold/craft-releases/pkg/updates/tauri"
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
		{"companions from a source that cannot fetch them",
			poller.Config{Apps: apps("a"), Timing: timing, Source: struct{ poller.Source }{src}, Companions: tauri.Companions},
			"new poller: companions without a source of them (CompanionSource)"},
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

func isClosed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// TestRunSequence runs the poller until the fake clock passes until (50 s
// unless set) and checks what happened, in order: the start-up jitter is
// u × 30 s, and every tick 30 s ±10 % by u. Loaded is closed from the start
// unless the poller coordinates, and after Run in any case.
func TestRunSequence(t *testing.T) {
	tests := []struct {
		name              string
		fleet, coordinate bool
		loadErr           error
		u                 float64
		until             time.Duration
		want, warns       []string
	}{
		{name: "coordinated: the start-up load comes before the jitter", fleet: true, coordinate: true, u: 0.5,
			want: []string{
				"Load", "loaded false", "wait 15s", "Load", "loaded true", "LoadApp a", "Claim a", "ask a", "PutFetch a", "wait 30s",
				"Load", "loaded true", "wait 30s"}},
		{name: "coordinated with Redis down: the load is tried, then the poller goes on alone",
			fleet: true, coordinate: true, loadErr: errors.New("connection refused"), u: 0.5,
			want:  []string{"Load", "loaded false", "wait 15s", "Load", "loaded true", "ask a", "wait 30s", "Load", "loaded true", "wait 30s"},
			warns: []string{"redis unavailable"}},
		{name: "standalone: no load, the jitter first", u: 0.5, want: []string{"wait 15s", "ask a", "wait 30s", "wait 30s"}},
		{name: "uncoordinated: no load, but results are shared", fleet: true, u: 0.5,
			want: []string{"wait 15s", "ask a", "PutFetch a", "wait 30s", "wait 30s"}},
		{name: "standalone, ignoring Coordinate, at the bottom of the draw", coordinate: true, u: 0,
			want: []string{"wait 0s", "ask a", "wait 27s", "wait 27s"}},
		{name: "standalone, at the top of the draw", u: 0.999, until: 90 * s,
			want: []string{"wait 29.97s", "ask a", "wait 32.994s", "wait 32.994s"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ev := &recorder{}
			var fleet *fakeFleet
			if tt.fleet {
				fleet = newFleet()
				fleet.events = ev
				fleet.errs["Load"] = tt.loadErr
			}
			h := newHarness(t, []string{"a"}, fleet, tt.coordinate, func(c *poller.Config) { c.Rand = func() float64 { return tt.u } })
			if fleet != nil {
				fleet.during = func(_ *fakeFleet, op, _ string) {
					if op == "Load" {
						ev.add(fmt.Sprintf("loaded %v", isClosed(h.p.Loaded())))
					}
				}
			}
			if got, want := isClosed(h.p.Loaded()), !tt.fleet || !tt.coordinate; got != want {
				t.Errorf("Loaded() closed before Run = %v, want %v", got, want)
			}
			h.events, h.source.events = ev, ev
			h.source.script = answers{"a": fetched("v1", "e1")}
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			until := tt.until
			if until == 0 {
				until = 50 * s
			}
			h.afterWait = func(now time.Time) {
				if now.Sub(t0) > until {
					cancel()
				}
			}
			if err := h.p.Run(ctx); err != nil {
				t.Fatalf("Run() = %v, want nil", err)
			}
			wantList(t, "events", ev.take(), tt.want)
			if !isClosed(h.p.Loaded()) {
				t.Error("Loaded() still open after Run")
			}
			_, warns, _ := h.tickLogs(t)
			wantList(t, "warnings", warns, tt.warns)
		})
	}
}

// TestRunCancel cancels a running poller while it waits: Run returns nil,
// the tick in progress stops, and nothing of the poller is left running. A
// refresh request that arrives while Run waits between two ticks is fetched
// at once, and Run goes back to waiting for the tick.
func TestRunCancel(t *testing.T) {
	tests := []struct {
		name            string
		fire            int           // waits that pass before the one cancelled
		parked, refresh time.Duration // refresh, if set: a refresh arrives a second in, and Run waits this long again
		asked           []string
	}{
		{name: "during the start-up jitter", fire: 0, parked: 15 * time.Second},
		{name: "during the spacing of a round", fire: 1, parked: time.Second, asked: []string{"a"}},
		// 30 s from the tick's start, of which the round's spacing took 1 s.
		{name: "between two ticks", fire: 2, parked: 29 * time.Second, asked: []string{"a", "b"}},
		// The abandoned wait counts until the clock passes it, and ends when the new one does.
		{name: "between two ticks, after a refresh", fire: 2, parked: 29 * time.Second, refresh: 28 * time.Second,
			asked: []string{"a", "b", `a("e1")`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t, []string{"a", "b"}, nil, false)
			h.clock.Skip(tt.fire)
			h.source.script = answers{"a": fetched("v1", `"e1"`), "b": fetched("v1", `"e1"`)}
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan error)
			go func() { done <- h.p.Run(ctx) }()
			wantEq(t, "parked in a wait", parked(t, h.clock, 1), tt.parked)
			if tt.refresh != 0 {
				h.source.mu.Lock()
				h.source.script = answers{"a": fetched("v2", `"e2"`)}
				h.source.mu.Unlock()
				h.clock.Advance(time.Second)
				h.p.Refresh("a", release.Refresh{At: h.clock.Now(), Tag: "v2"})
				wantEq(t, "parked again in a wait (what is left to the next tick)", parked(t, h.clock, 2), tt.refresh)
			}
			cancel()
			if err := <-done; err != nil {
				t.Errorf("Run() = %v, want nil", err)
			}
			wantList(t, "asked", h.source.takeAsked(), tt.asked)
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
