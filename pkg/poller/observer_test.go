package poller_test

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/storytold/craft-releases/pkg/release"
	"github.com/storytold/craft-releases/pkg/schedule"
)

// quota returns a with the quota GitHub announced on it.
func quota(a release.Answer, remaining int, reset time.Time) release.Answer {
	a.Remaining, a.Reset = remaining, reset
	return a
}

func TestObserver(t *testing.T) {
	redisDown := errors.New("dial tcp 127.0.0.1:6379: connection refused")
	seeded := func(seed func(f *fakeFleet)) func() *fakeFleet {
		return func() *fakeFleet {
			f := newFleet()
			seed(f)
			return f
		}
	}
	failing := func(op string) func() *fakeFleet {
		return seeded(func(f *fakeFleet) { f.setErr(op, redisDown) })
	}
	tests := []scenario{
		{
			name: "standalone: every answer with its quota, and every round with its backoff",
			apps: []string{"a", "b", "c", "d"},
			steps: []step{
				{
					answers: map[string]release.Answer{
						"a": quota(fetched("v1", "e1"), 59, at(time.Hour)),
						// No ETag was sent: the 304 counts as a failure, its quota stays.
						"b": quota(notModified(), 58, at(time.Hour)),
						"c": failed(),
						"d": quota(rateLimited(at(50*time.Minute)), 0, at(50*time.Minute)),
					},
					asked: []string{"a", "b", "c", "d"}, sets: []string{"a", "b", "c"},
					warns: []string{"github request failed", "github request failed", "github rate limit"},
					round: round("standalone", 1, 0, 2, true, 50*time.Minute+57*s, 1),
					observed: []string{
						"answer a fetched 59 1h0m0s", "fetched a 0s",
						"answer b failed 58 1h0m0s",
						"answer c failed -1 never",
						"answer d rate_limited 0 50m0s",
						"round standalone 3s 51m0s 1",
					},
				},
				{at: 10 * time.Minute, observed: []string{"round standalone 0s 51m0s 1"}},
				{
					at: 52 * time.Minute,
					answers: map[string]release.Answer{
						"a": quota(notModified(), 57, at(2*time.Hour)), "b": fetched("", ""),
						"c": fetched("v3", "e3"), "d": fetched("v4", "e4"),
					},
					asked: []string{"a(e1)", "b", "c", "d"}, sets: []string{"a", "b", "c", "d"},
					round: round("standalone", 3, 1, 0, false, 0, 0),
					observed: []string{
						"answer a not_modified 57 2h0m0s", "fetched a 52m0s",
						"answer b fetched -1 never", "fetched b 52m1s",
						"answer c fetched -1 never", "fetched c 52m2s",
						"answer d fetched -1 never", "fetched d 52m3s",
						"round standalone 3s never 0",
					},
				},
				{at: 53 * time.Minute, round: idle("standalone"), observed: []string{"round standalone 0s never 0"}},
			},
		},
		{
			name: "coordinated: what the fleet knows, claims won and lost, refused writes of each kind",
			apps: []string{"a", "b", "c", "d", "e"}, coordinate: true,
			fleet: seeded(func(f *fakeFleet) {
				f.set("a", release.Entry{ClaimedAt: at(-10 * s)})
				f.set("b", release.Entry{FetchedAt: at(-10 * s), ETag: "x1", Release: rel("vX")})
				f.set("d", release.Entry{FetchedAt: at(-1800 * s), ETag: "e0", Release: rel("v0")})
				f.during = func(f *fakeFleet, op, arg string) {
					switch op + " " + arg {
					case "PutFetch c":
						f.set("c", release.Entry{FetchedAt: at(9 * s), ETag: "x3", Release: rel("vY")})
					case "PutNotModified d":
						f.set("d", release.Entry{FetchedAt: at(9 * s), ETag: "x4", Release: rel("vZ")})
					case "PutFailure e":
						f.set("e", release.Entry{FailedAt: at(9 * s), Failures: 1})
					}
				}
			}),
			steps: []step{
				{
					answers: map[string]release.Answer{"c": fetched("v1", "e1"), "d": notModified(), "e": failed()},
					asked:   []string{"c", "d(e0)", "e"},
					calls: []string{"Load", "LoadApp a", "Claim a", "LoadApp c", "Claim c", "PutFetch c",
						"LoadApp d", "Claim d", "PutNotModified d", "LoadApp e", "Claim e", "PutFailure e"},
					sets: []string{"b", "d", "c", "d", "e"}, warns: []string{"github request failed"},
					round: round("coordinated", 1, 1, 1, false, 0, 0),
					observed: []string{
						"fetched b -10s", "fetched d -30m0s",
						"claim lost",
						"claim won", "answer c fetched -1 never", "refused put_fetch", "fetched c 0s",
						"claim won", "answer d not_modified -1 never", "refused put_not_modified", "fetched d 1s",
						"claim won", "answer e failed -1 never", "refused put_failure",
						"round coordinated 2s never 0",
					},
				},
			},
		},
		{
			name: "coordinated: the fleet backoff ends the tick, and is reported",
			apps: []string{"a"}, coordinate: true,
			fleet: seeded(func(f *fakeFleet) { f.setBackoff(schedule.Backoff{Until: at(10 * time.Minute), Trouble: 2}) }),
			steps: []step{{calls: []string{"Load"}, observed: []string{"round coordinated 0s 10m0s 2"}}},
		},
		{
			name: "uncoordinated rounds",
			apps: []string{"a"}, fleet: newFleet,
			steps: []step{{
				answers: map[string]release.Answer{"a": fetched("v1", "e1")}, asked: []string{"a"},
				calls: []string{"PutFetch a"}, sets: []string{"a"},
				round:    round("uncoordinated", 1, 0, 0, false, 0, 0),
				observed: []string{"answer a fetched -1 never", "fetched a 0s", "round uncoordinated 0s never 0"},
			}},
		},
		{
			name: "redis error on load",
			apps: []string{"a"}, coordinate: true, fleet: failing("Load"),
			steps: []step{{
				answers: map[string]release.Answer{"a": fetched("v1", "e1")}, asked: []string{"a"},
				calls: []string{"Load"}, sets: []string{"a"}, warns: []string{"redis unavailable"},
				round:    round("standalone", 1, 0, 0, false, 0, 0),
				observed: []string{"redis_error load", "answer a fetched -1 never", "fetched a 0s", "round standalone 0s never 0"},
			}},
		},
		{
			name: "redis error on load_app",
			apps: []string{"a"}, coordinate: true, fleet: failing("LoadApp"),
			steps: []step{{
				answers: map[string]release.Answer{"a": fetched("v1", "e1")}, asked: []string{"a"},
				calls: []string{"Load", "LoadApp a"}, sets: []string{"a"}, warns: []string{"redis unavailable"},
				round:    round("standalone", 1, 0, 0, false, 0, 0),
				observed: []string{"redis_error load_app", "answer a fetched -1 never", "fetched a 0s", "round standalone 0s never 0"},
			}},
		},
		{
			name: "redis error on claim",
			apps: []string{"a"}, coordinate: true, fleet: failing("Claim"),
			steps: []step{{
				answers: map[string]release.Answer{"a": fetched("v1", "e1")}, asked: []string{"a"},
				calls: []string{"Load", "LoadApp a", "Claim a"}, sets: []string{"a"}, warns: []string{"redis unavailable"},
				round:    round("standalone", 1, 0, 0, false, 0, 0),
				observed: []string{"redis_error claim", "answer a fetched -1 never", "fetched a 0s", "round standalone 0s never 0"},
			}},
		},
		{
			name: "redis error on put_fetch",
			apps: []string{"a"}, coordinate: true, fleet: failing("PutFetch"),
			steps: []step{{
				answers: map[string]release.Answer{"a": fetched("v1", "e1")}, asked: []string{"a"},
				calls: []string{"Load", "LoadApp a", "Claim a", "PutFetch a"}, sets: []string{"a"}, warns: []string{"redis unavailable"},
				round:    round("standalone", 1, 0, 0, false, 0, 0),
				observed: []string{"claim won", "answer a fetched -1 never", "redis_error put_fetch", "fetched a 0s", "round standalone 0s never 0"},
			}},
		},
		{
			name: "redis error on put_not_modified",
			apps: []string{"a"}, coordinate: true,
			fleet: seeded(func(f *fakeFleet) {
				f.set("a", release.Entry{FetchedAt: at(-1800 * s), ETag: "e0", Release: rel("v0")})
				f.setErr("PutNotModified", redisDown)
			}),
			steps: []step{{
				answers: map[string]release.Answer{"a": notModified()}, asked: []string{"a(e0)"},
				calls: []string{"Load", "LoadApp a", "Claim a", "PutNotModified a"}, sets: []string{"a", "a"},
				warns: []string{"redis unavailable"}, round: round("standalone", 0, 1, 0, false, 0, 0),
				observed: []string{"fetched a -30m0s", "claim won", "answer a not_modified -1 never", "redis_error put_not_modified",
					"fetched a 0s", "round standalone 0s never 0"},
			}},
		},
		{
			name: "redis error on put_failure",
			apps: []string{"a", "b"}, coordinate: true, fleet: failing("PutFailure"),
			steps: []step{{
				answers: map[string]release.Answer{"a": failed(), "b": fetched("v1", "e1")}, asked: []string{"a", "b"},
				calls: []string{"Load", "LoadApp a", "Claim a", "PutFailure a"}, sets: []string{"a", "b"},
				warns: []string{"redis unavailable", "github request failed"}, round: round("standalone", 1, 0, 1, false, 0, 0),
				observed: []string{"claim won", "answer a failed -1 never", "redis_error put_failure",
					"answer b fetched -1 never", "fetched b 1s", "round standalone 1s never 0"},
			}},
		},
		{
			name: "redis error on put_backoff",
			apps: []string{"a"}, coordinate: true, fleet: failing("PutBackoff"),
			steps: []step{{
				answers: map[string]release.Answer{"a": failed()}, asked: []string{"a"},
				calls: []string{"Load", "LoadApp a", "Claim a", "PutFailure a", "PutBackoff until 1m0s trouble 1"},
				sets:  []string{"a"}, warns: []string{"redis unavailable", "github request failed"},
				round:    round("standalone", 0, 0, 1, false, time.Minute, 1),
				observed: []string{"claim won", "answer a failed -1 never", "redis_error put_backoff", "round standalone 0s 1m0s 1"},
			}},
		},
	}
	for _, sc := range tests {
		t.Run(sc.name, func(t *testing.T) { runScenario(t, sc) })
	}
}

// TestObserverEntries: every change of an app's fetch or failure reaches
// the Observer with the whole entry, its own answers and the fleet's alike,
// so that failures in a row and a release lost to 404s can be exported per
// app; a round that changes nothing reports nothing.
func TestObserverEntries(t *testing.T) {
	t.Run("standalone", func(t *testing.T) {
		h := newHarness(t, []string{"a", "b"}, nil, false)
		h.source.script = map[string]release.Answer{"a": fetched("v1", "e1"), "b": failed()}
		h.p.Tick(context.Background())
		if got, want := h.obs.takeEntries(), []string{"a v1 ok", "b never failing 1"}; !slices.Equal(got, want) {
			t.Fatalf("first round: entries %q, want %q", got, want)
		}
		// b is retried, a is not due: only b's failures move.
		var got []string
		ticks(t, h, timing.Tick, 10*time.Minute, func(time.Duration) release.Answer { return failed() }, func(time.Duration) {
			got = append(got, h.obs.takeEntries()...)
		})
		if len(got) < 2 || got[0] != "b never failing 2" || got[1] != "b never failing 3" {
			t.Fatalf("retries: entries %q, want b failing 2, then 3, …", got)
		}
		setClock(t, h.clock, at(timing.Interval))
		h.source.script = map[string]release.Answer{"a": notFound(), "b": fetched("v2", "e2")}
		h.p.Tick(context.Background())
		if got, want := h.obs.takeEntries(), []string{"a v1 failing 1", "b v2 ok"}; !slices.Equal(got, want) {
			t.Errorf("a 404 and b's recovery: entries %q, want %q", got, want)
		}
	})
	t.Run("a release lost to 404s", func(t *testing.T) {
		h := newHarness(t, []string{"a"}, nil, false)
		h.source.script = map[string]release.Answer{"a": fetched("v1", "e1")}
		h.p.Tick(context.Background())
		h.obs.takeEntries()
		ticks(t, h, timing.Interval-timing.Tick, 3*time.Hour, func(time.Duration) release.Answer { return notFound() }, func(time.Duration) {})
		got := h.obs.takeEntries()
		if len(got) == 0 || got[len(got)-1] != "a none ok" {
			t.Errorf("entries %q, want the last one without a release", got)
		}
	})
	t.Run("coordinated: another poller's failures, read from the fleet", func(t *testing.T) {
		f := newFleet()
		f.set("a", release.Entry{FetchedAt: at(-time.Minute), Release: rel("v1"), ETag: "e1"})
		f.set("b", release.Entry{FailedAt: at(-time.Minute), Failures: 4})
		h := newHarness(t, []string{"a", "b"}, f, true)
		h.p.Tick(context.Background())
		got := h.obs.takeEntries()
		for _, want := range []string{"a v1 ok", "b never failing 4"} {
			if !slices.Contains(got, want) {
				t.Errorf("entries %q, want %q among them", got, want)
			}
		}
		h.p.Tick(context.Background())
		if got := h.obs.takeEntries(); len(got) != 0 {
			t.Errorf("a tick that changed nothing: entries %q, want none", got)
		}
	})
}

// TestObserverCancelled checks that a tick cut short by shutdown reports
// neither the answer in flight, nor Redis errors caused by the cancellation,
// nor a round.
func TestObserverCancelled(t *testing.T) {
	tests := []struct {
		name     string
		backoff  bool   // a fleet backoff holds, learnt by a tick before
		cancelOn string // the Fleet call during which shutdown begins
		err      error  // what that call returns
		want     []string
	}{
		{name: "during the claim", cancelOn: "Claim", err: context.Canceled},
		{name: "after the claim, before the answer", cancelOn: "Claim", want: []string{"claim won"}},
		{name: "during the load, while a backoff holds", backoff: true, cancelOn: "Load", err: context.Canceled},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t, []string{"a", "b"}, newFleet(), true)
			if tt.backoff {
				h.fleet.setBackoff(schedule.Backoff{Until: at(time.Hour), Trouble: 1})
				h.p.Tick(context.Background())
				if got, want := h.obs.take(), []string{"round coordinated 0s 1h0m0s 1"}; !slices.Equal(got, want) {
					t.Fatalf("first tick observed %q, want %q", got, want)
				}
			}
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			h.fleet.during = func(_ *fakeFleet, op, _ string) {
				if op == tt.cancelOn {
					cancel()
				}
			}
			h.fleet.setErr(tt.cancelOn, tt.err)
			h.source.script = map[string]release.Answer{"a": fetched("v1", "e1")}
			h.p.Tick(ctx)
			if got := h.obs.take(); !slices.Equal(got, tt.want) {
				t.Errorf("observed %q, want %q", got, tt.want)
			}
		})
	}
}
