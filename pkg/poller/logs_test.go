package poller_test

import (
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"go.uber.org/zap/zapcore"

	"github.com/storytold/craft-releases/pkg/release"
)

// TestRedisOutageLogs ticks while one Fleet call fails or works, and checks
// the lines that say Redis is away and back (outage.Tracker's cadence is
// pinned in its package) and each round's mode.
func TestRedisOutageLogs(t *testing.T) {
	tests := []struct {
		name  string
		op    string        // the failing Fleet call
		down  []bool        // whether it fails, tick by tick
		every time.Duration // between two ticks
		hang  time.Duration // how long each call of op takes
		want  []string      // the lines, with their away
	}{
		{"one failed re-read", "LoadApp", []bool{true, false}, 30 * s, 0,
			[]string{"redis unavailable 0s", "redis entries written back from memory", "redis is back 30s"}},
		{"an outage counts from the start of its first failing call", "Load", []bool{true, false}, 30 * s, 5 * s,
			[]string{"redis unavailable 5s", "redis entries written back from memory", "redis is back 35s"}},
		{"an outage after Redis came back is a new one, warned at once", "Load", []bool{true, false, true}, time.Minute, 0,
			[]string{"redis unavailable 0s", "redis entries written back from memory", "redis is back 1m0s", "redis unavailable 0s"}},
		// After a failover: reads work while every write is refused, and a is
		// due at every tick; the outage's reminders count from its start.
		{"writes refused at every tick are one outage, over once a tick works", "Claim", []bool{true, true, true, false}, timing.Interval, 0,
			[]string{"redis unavailable 0s", "redis entries written back from memory", "redis unavailable 30m0s",
				"redis entries written back from memory", "redis unavailable 1h0m0s", "redis entries written back from memory",
				"redis is back 1h30m0s"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t, []string{"a"}, newFleet(), true)
			h.fleet.during = func(_ *fakeFleet, op, _ string) {
				if op == tt.op {
					h.clock.Advance(tt.hang)
				}
			}
			var wantModes []string
			for i, down := range tt.down {
				h.fleet.setErr(nil, tt.op)
				wantModes = append(wantModes, "coordinated")
				if down {
					h.fleet.setErr(errors.New("i/o timeout"), tt.op)
					wantModes[i] = "standalone"
				}
				h.tick(t, time.Duration(i)*tt.every, answers{"a": fetched("v1", "e1")})
			}
			var got, modes []string
			for _, e := range h.logs.TakeAll() {
				switch {
				case e.Message == "poll round":
					modes = append(modes, e.ContextMap()["mode"].(string))
				case e.Level > zapcore.DebugLevel:
					line := e.Message
					if away, ok := e.ContextMap()["away"]; ok {
						line += fmt.Sprintf(" %v", away)
					}
					got = append(got, line)
					if e.Message == "redis unavailable" && (e.Level != zapcore.WarnLevel || e.ContextMap()["err"] != "i/o timeout") {
						t.Errorf("outage line = %v %v, want a warning with err", e.Level, e.ContextMap())
					}
				}
			}
			wantList(t, "lines", got, tt.want)
			wantList(t, "round modes", modes, wantModes)
		})
	}
}

// TestGitHubWarnings: a round's failed requests are logged as one line when
// every request of the round failed (a first run with no network), one
// warning per app otherwise; a rate limit is one warning.
func TestGitHubWarnings(t *testing.T) {
	good := func() release.Answer { return fetched("v1", "e1") }
	failing := func(apps ...string) answers {
		m := all(thirteen, good)
		for _, app := range apps {
			m[app] = failed()
		}
		return m
	}
	tests := []struct {
		name   string
		before answers // a first round at t0, nil for none
		now    answers // the round at I
		want   []string
		fields map[string]any // of the last warning
	}{
		{name: "first run, GitHub unreachable", now: failing(thirteen...),
			want:   []string{"every github request failed, no app has a release yet"},
			fields: map[string]any{"failed": int64(13), "no_release_yet": int64(13), "err": "HTTP 502", "retry_in": time.Minute}},
		{name: "every request failing after releases were fetched", before: failing(), now: failing(thirteen...),
			want:   []string{"every github request failed, serving the last releases fetched"},
			fields: map[string]any{"failed": int64(13), "no_release_yet": int64(0), "err": "HTTP 502", "retry_in": time.Minute}},
		{name: "one app failing among healthy ones", now: failing("m"), want: []string{"github request failed"},
			fields: map[string]any{"app": "m", "repo": "storytold/m", "failures": int64(1), "err": "HTTP 502"}},
		{name: "two apps failing among healthy ones", now: failing("c", "m"),
			want: []string{"github request failed", "github request failed"}, fields: map[string]any{"app": "m", "repo": "storytold/m"}},
		{name: "a rate limit", now: answers{"a": rateLimited(at(2 * time.Hour))}, want: []string{"github rate limit"},
			fields: map[string]any{"app": "a", "repo": "storytold/a", "retry_at": at(2 * time.Hour), "err": "HTTP 403"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t, thirteen, nil, false)
			if tt.before != nil {
				h.tick(t, 0, tt.before)
			}
			h.logs.TakeAll()
			h.tick(t, timing.Interval, tt.now)
			warns := h.logs.FilterLevelExact(zapcore.WarnLevel).All()
			var got []string
			for _, w := range warns {
				got = append(got, w.Message)
			}
			if !slices.Equal(got, tt.want) {
				t.Fatalf("warnings %q, want %q", got, tt.want)
			}
			wantFields(t, "last warning", warns[len(warns)-1].ContextMap(), tt.fields)
		})
	}
}
