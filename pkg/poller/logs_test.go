package poller_test

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"go.uber.org/zap/zapcore"

	"github.com/storytold/craft-releases/pkg/release"
)

// TestRedisOutageLogs ticks every 30 s while one Fleet call keeps failing,
// then once more with Redis back, and checks the warnings and the line that
// says Redis is back.
func TestRedisOutageLogs(t *testing.T) {
	tests := []struct {
		name      string
		op        string        // the failing Fleet call
		downFor   time.Duration // ticks before this fail
		wantAways []time.Duration
		wantBack  time.Duration
	}{
		{"one failed re-read", "LoadApp", 30 * time.Second, []time.Duration{0}, 30 * time.Second},
		{"reads failing for 9.5 minutes", "Load", 10 * time.Minute, []time.Duration{0}, 10 * time.Minute},
		{"reads failing for 10 minutes", "Load", 10*time.Minute + time.Second, []time.Duration{0, 10 * time.Minute}, 10*time.Minute + 30*time.Second},
		{"reads failing for 25 minutes", "Load", 25 * time.Minute, []time.Duration{0, 10 * time.Minute, 20 * time.Minute}, 25 * time.Minute},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t, []string{"a"}, newFleet(), true)
			h.fleet.setErr(tt.op, errors.New("i/o timeout"))
			h.source.script = map[string]release.Answer{"a": fetched("v1", "e1")}
			var at time.Duration
			var modes []string
			for ; at < tt.downFor; at += 30 * time.Second {
				setClock(t, h.clock, t0.Add(at))
				h.p.Tick(context.Background())
			}
			h.fleet.setErr(tt.op, nil)
			setClock(t, h.clock, t0.Add(at))
			h.p.Tick(context.Background())

			var aways []time.Duration
			var backs []time.Duration
			for _, e := range h.logs.TakeAll() {
				switch {
				case e.Message == "redis unavailable":
					if e.Level != zapcore.WarnLevel || e.ContextMap()["err"] != "i/o timeout" {
						t.Errorf("outage line = %v %v, want a warning with err", e.Level, e.ContextMap())
					}
					aways = append(aways, e.ContextMap()["away"].(time.Duration))
				case e.Message == "redis is back":
					backs = append(backs, e.ContextMap()["away"].(time.Duration))
				case e.Message == "poll round":
					modes = append(modes, e.ContextMap()["mode"].(string))
				}
			}
			if !slices.Equal(aways, tt.wantAways) {
				t.Errorf("warnings with away %v, want %v", aways, tt.wantAways)
			}
			if want := []time.Duration{tt.wantBack}; !slices.Equal(backs, want) {
				t.Errorf("back lines with away %v, want %v", backs, want)
			}
			if len(modes) == 0 || modes[len(modes)-1] != "coordinated" || slices.Contains(modes[:len(modes)-1], "coordinated") {
				t.Errorf("round modes %q, want standalone until the last, coordinated", modes)
			}
		})
	}
}

// TestRedisOutageAgain checks that an outage after Redis came back is a new
// outage, warned at once.
func TestRedisOutageAgain(t *testing.T) {
	h := newHarness(t, []string{"a"}, newFleet(), true)
	h.source.script = map[string]release.Answer{"a": fetched("v1", "e1")}
	for i, down := range []bool{true, false, true} {
		h.fleet.setErr("Load", nil)
		if down {
			h.fleet.setErr("Load", errors.New("i/o timeout"))
		}
		setClock(t, h.clock, t0.Add(time.Duration(i)*time.Minute))
		h.p.Tick(context.Background())
	}
	var got []string
	for _, e := range h.logs.TakeAll() {
		if e.Message != "poll round" && e.Level > zapcore.DebugLevel {
			got = append(got, e.Message)
		}
	}
	// Back at 1 min, the fetch made standalone at 0 is written back.
	want := []string{"redis unavailable", "redis entries written back from memory", "redis is back", "redis unavailable"}
	if !slices.Equal(got, want) {
		t.Errorf("log lines %q, want %q", got, want)
	}
}

func TestGitHubWarnings(t *testing.T) {
	tests := []struct {
		name   string
		answer release.Answer
		msg    string
		fields map[string]any
	}{
		{
			name:   "a failure",
			answer: failed(),
			msg:    "github request failed",
			fields: map[string]any{"app": "a", "repo": "storytold/a", "failures": int64(1), "err": "HTTP 502"},
		},
		{
			name:   "a rate limit",
			answer: rateLimited(t0.Add(time.Hour)),
			msg:    "github rate limit",
			fields: map[string]any{"app": "a", "repo": "storytold/a", "retry_at": t0.Add(time.Hour), "err": "HTTP 403"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t, []string{"a"}, nil, false)
			h.source.script = map[string]release.Answer{"a": tt.answer}
			h.p.Tick(context.Background())
			warns := h.logs.FilterLevelExact(zapcore.WarnLevel).All()
			if len(warns) != 1 {
				t.Fatalf("%d warnings, want 1: %v", len(warns), warns)
			}
			if got := warns[0].Message; got != tt.msg {
				t.Errorf("warning %q, want %q", got, tt.msg)
			}
			got := warns[0].ContextMap()
			for k, want := range tt.fields {
				if g, ok := got[k]; !ok || g != want {
					if gt, ok := g.(time.Time); ok && gt.Equal(want.(time.Time)) {
						continue
					}
					t.Errorf("field %s = %v, want %v", k, g, want)
				}
			}
		})
	}
}

// TestRedisAwayCountsTheFailingCall checks that an outage is counted from the
// start of its first failing call, which may have waited out its whole
// timeout, not from when the failure came back.
func TestRedisAwayCountsTheFailingCall(t *testing.T) {
	const timeout = 5 * time.Second
	h := newHarness(t, []string{"a"}, newFleet(), true)
	h.source.script = map[string]release.Answer{"a": fetched("v1", "e1")}
	h.fleet.setErr("Load", errors.New("i/o timeout"))
	h.fleet.during = func(_ *fakeFleet, op, _ string) {
		if op == "Load" {
			h.clock.Advance(timeout) // the call hangs until its deadline
		}
	}
	h.p.Tick(context.Background()) // fails 0 s…5 s
	h.fleet.setErr("Load", nil)
	setClock(t, h.clock, t0.Add(30*time.Second))
	h.p.Tick(context.Background()) // works at 30 s…35 s

	var got []time.Duration
	for _, e := range h.logs.FilterMessage("redis is back").All() {
		got = append(got, e.ContextMap()["away"].(time.Duration))
	}
	if want := []time.Duration{35 * time.Second}; !slices.Equal(got, want) {
		t.Errorf("redis is back with away %v, want %v", got, want)
	}
}

// TestAllFailedRoundLogsOneLine checks how a round's failed requests are
// logged: one line when every request of the round failed (a first run with
// no network: 13 identical warnings before), one warning per app otherwise.
func TestAllFailedRoundLogsOneLine(t *testing.T) {
	answers := func(failing ...string) map[string]release.Answer {
		m := make(map[string]release.Answer, len(thirteen))
		for _, app := range thirteen {
			m[app] = fetched("v1", "e1")
		}
		for _, app := range failing {
			m[app] = failed()
		}
		return m
	}
	tests := []struct {
		name   string
		before map[string]release.Answer // a first round at t0, nil for none
		now    map[string]release.Answer // the round at I
		want   []string                  // the warnings
		fields map[string]any            // of the last warning
	}{
		{
			name:   "first run, GitHub unreachable",
			now:    answers(thirteen...),
			want:   []string{"every github request failed, no app has a release yet"},
			fields: map[string]any{"failed": int64(13), "no_release_yet": int64(13), "err": "HTTP 502", "retry_in": time.Minute},
		},
		{
			name:   "every request failing after releases were fetched",
			before: answers(),
			now:    answers(thirteen...),
			want:   []string{"every github request failed, serving the last releases fetched"},
			fields: map[string]any{"failed": int64(13), "no_release_yet": int64(0), "err": "HTTP 502", "retry_in": time.Minute},
		},
		{
			name:   "one app failing among healthy ones",
			now:    answers("m"),
			want:   []string{"github request failed"},
			fields: map[string]any{"app": "m", "repo": "storytold/m", "failures": int64(1), "err": "HTTP 502"},
		},
		{
			name:   "two apps failing among healthy ones",
			now:    answers("c", "m"),
			want:   []string{"github request failed", "github request failed"},
			fields: map[string]any{"app": "m", "repo": "storytold/m"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t, thirteen, nil, false)
			if tt.before != nil {
				h.source.script = tt.before
				h.p.Tick(context.Background())
			}
			h.logs.TakeAll()
			setClock(t, h.clock, t0.Add(timing.Interval))
			h.source.script = tt.now
			h.p.Tick(context.Background())
			warns := h.logs.FilterLevelExact(zapcore.WarnLevel).All()
			var got []string
			for _, w := range warns {
				got = append(got, w.Message)
			}
			if !slices.Equal(got, tt.want) {
				t.Fatalf("warnings %q, want %q", got, tt.want)
			}
			last := warns[len(warns)-1].ContextMap()
			for k, want := range tt.fields {
				if g := last[k]; g != want {
					t.Errorf("field %s = %v, want %v", k, g, want)
				}
			}
		})
	}
}
