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

// step is one tick of a scenario and what it must do.
type step struct {
	at      time.Duration             // when the tick starts, after t0
	before  func(h *harness)          // what changes before the tick
	answers map[string]release.Answer // GitHub's answer per app in this tick
	asked   []string                  // requests in order: "app" or "app(etag)"
	calls   []string                  // Fleet calls in order (scenarios with a fleet)
	sets    []string                  // Sink.Set calls in order
	round   *roundLine                // the round's log line; nil: no round (backoff)
	warns   []string                  // warning messages, in order
	// observed are the Observer calls in order (fakeObserver's format);
	// nil leaves them unchecked.
	observed []string
	check    func(t *testing.T, h *harness)
}

// scenario is a poller over apps, ticked step by step.
type scenario struct {
	name       string
	apps       []string
	fleet      func() *fakeFleet // nil: standalone
	coordinate bool
	steps      []step
}

func runScenario(t *testing.T, sc scenario) {
	t.Helper()
	var fleet *fakeFleet
	if sc.fleet != nil {
		fleet = sc.fleet()
	}
	h := newHarness(t, sc.apps, fleet, sc.coordinate)
	for i, st := range sc.steps {
		setClock(t, h.clock, t0.Add(st.at))
		if st.before != nil {
			st.before(h)
		}
		h.source.script = st.answers
		h.p.Tick(context.Background())

		asked, _ := h.source.take()
		if !slices.Equal(asked, st.asked) {
			t.Errorf("step %d (at %v): asked %q, want %q", i, st.at, asked, st.asked)
		}
		if fleet != nil {
			if got := fleet.takeCalls(); !slices.Equal(got, st.calls) {
				t.Errorf("step %d (at %v): fleet calls %q, want %q", i, st.at, got, st.calls)
			}
		}
		if got := h.sink.takeSets(); !slices.Equal(got, st.sets) {
			t.Errorf("step %d (at %v): sink sets %q, want %q", i, st.at, got, st.sets)
		}
		rounds, warns, _ := h.tickLogs(t)
		var want []roundLine
		if st.round != nil {
			want = []roundLine{*st.round}
		}
		if !slices.Equal(rounds, want) {
			t.Errorf("step %d (at %v): round lines %+v, want %+v", i, st.at, rounds, want)
		}
		if !slices.Equal(warns, st.warns) {
			t.Errorf("step %d (at %v): warnings %q, want %q", i, st.at, warns, st.warns)
		}
		if got := h.obs.take(); st.observed != nil && !slices.Equal(got, st.observed) {
			t.Errorf("step %d (at %v): observed\n%q\nwant\n%q", i, st.at, got, st.observed)
		}
		if st.check != nil {
			st.check(t, h)
		}
	}
}

func round(mode string, fetched, unchanged, failed int64, rateLimited bool, backoff time.Duration, trouble int64) *roundLine {
	return &roundLine{mode, fetched, unchanged, failed, rateLimited, backoff, trouble}
}

// idle is the round line of a tick in which nothing was due.
func idle(mode string) *roundLine { return round(mode, 0, 0, 0, false, 0, 0) }

func wantEntry(t *testing.T, what string, got release.Entry, want release.Entry) {
	t.Helper()
	tag := func(r *release.Release) string {
		if r == nil {
			return "<nil>"
		}
		return r.Tag
	}
	if !got.FetchedAt.Equal(want.FetchedAt) || got.ETag != want.ETag || tag(got.Release) != tag(want.Release) ||
		!got.FailedAt.Equal(want.FailedAt) || got.Failures != want.Failures {
		t.Errorf("%s = fetched %v etag %q release %s failed %v failures %d, want fetched %v etag %q release %s failed %v failures %d",
			what, got.FetchedAt.Sub(t0), got.ETag, tag(got.Release), got.FailedAt.Sub(t0), got.Failures,
			want.FetchedAt.Sub(t0), want.ETag, tag(want.Release), want.FailedAt.Sub(t0), want.Failures)
	}
}

func at(d time.Duration) time.Time { return t0.Add(d) }

func rel(tag string) *release.Release { return &release.Release{Tag: tag} }

const s = time.Second

func TestTickStandalone(t *testing.T) {
	const sa = "standalone"
	tests := []scenario{
		{
			name: "due apps are asked in order, one spacing apart",
			apps: []string{"a", "b", "c"},
			steps: []step{{
				answers: map[string]release.Answer{"a": fetched("v1", "e1"), "b": fetched("v1", "e1"), "c": fetched("", "")},
				asked:   []string{"a", "b", "c"},
				sets:    []string{"a", "b", "c"},
				round:   round(sa, 3, 0, 0, false, 0, 0),
				check: func(t *testing.T, h *harness) {
					wantEntry(t, "a", h.sink.entry("a"), release.Entry{FetchedAt: t0, ETag: "e1", Release: rel("v1")})
					wantEntry(t, "b", h.sink.entry("b"), release.Entry{FetchedAt: at(1 * s), ETag: "e1", Release: rel("v1")})
					wantEntry(t, "c", h.sink.entry("c"), release.Entry{FetchedAt: at(2 * s)})
				},
			}},
		},
		{
			name: "fresh apps are skipped until I − M old",
			apps: []string{"a", "b", "c"},
			steps: []step{
				{
					answers: map[string]release.Answer{"a": fetched("v1", "e1"), "b": fetched("v1", "e1"), "c": fetched("v1", "e1")},
					asked:   []string{"a", "b", "c"}, sets: []string{"a", "b", "c"}, round: round(sa, 3, 0, 0, false, 0, 0),
				},
				{at: 30 * s, round: idle(sa)},
				{at: 1769 * s, round: idle(sa)},
				{
					at: 1770 * s, answers: map[string]release.Answer{"a": notModified()},
					asked: []string{"a(e1)"}, sets: []string{"a"}, round: round(sa, 0, 1, 0, false, 0, 0),
				},
				{
					at: 1772 * s, answers: map[string]release.Answer{"b": notModified(), "c": notModified()},
					asked: []string{"b(e1)", "c(e1)"}, sets: []string{"b", "c"}, round: round(sa, 0, 2, 0, false, 0, 0),
				},
			},
		},
		{
			name: "a 304 only moves the fetch time",
			apps: []string{"a"},
			steps: []step{
				{answers: map[string]release.Answer{"a": fetched("v1", "e1")}, asked: []string{"a"}, sets: []string{"a"}, round: round(sa, 1, 0, 0, false, 0, 0)},
				{
					at: 1800 * s, answers: map[string]release.Answer{"a": notModified()},
					asked: []string{"a(e1)"}, sets: []string{"a"}, round: round(sa, 0, 1, 0, false, 0, 0),
					check: func(t *testing.T, h *harness) {
						wantEntry(t, "a", h.sink.entry("a"), release.Entry{FetchedAt: at(1800 * s), ETag: "e1", Release: rel("v1")})
					},
				},
			},
		},
		{
			name: "a 304 to a request without an etag is a failure",
			apps: []string{"a"},
			steps: []step{{
				answers: map[string]release.Answer{"a": notModified()},
				asked:   []string{"a"}, sets: []string{"a"}, warns: []string{"github request failed"},
				round: round(sa, 0, 0, 1, false, time.Minute, 1),
				check: func(t *testing.T, h *harness) {
					wantEntry(t, "a", h.sink.entry("a"), release.Entry{FailedAt: t0, Failures: 1})
				},
			}},
		},
		{
			name: "a 404 forgets the release and the etag",
			apps: []string{"a"},
			steps: []step{
				{answers: map[string]release.Answer{"a": fetched("v1", "e1")}, asked: []string{"a"}, sets: []string{"a"}, round: round(sa, 1, 0, 0, false, 0, 0)},
				{
					at: 1800 * s, answers: map[string]release.Answer{"a": fetched("", "")},
					asked: []string{"a(e1)"}, sets: []string{"a"}, round: round(sa, 1, 0, 0, false, 0, 0),
					check: func(t *testing.T, h *harness) {
						wantEntry(t, "a", h.sink.entry("a"), release.Entry{FetchedAt: at(1800 * s)})
					},
				},
				{at: 3600 * s, answers: map[string]release.Answer{"a": notModified()}, asked: []string{"a"}, sets: []string{"a"}, warns: []string{"github request failed"}, round: round(sa, 0, 0, 1, false, time.Minute, 1)},
			},
		},
		{
			name: "a failure keeps the good release, and a fetch clears it",
			apps: []string{"a"},
			steps: []step{
				{answers: map[string]release.Answer{"a": fetched("v1", "e1")}, asked: []string{"a"}, sets: []string{"a"}, round: round(sa, 1, 0, 0, false, 0, 0)},
				{
					at: 1770 * s, answers: map[string]release.Answer{"a": failed()},
					asked: []string{"a(e1)"}, sets: []string{"a"}, warns: []string{"github request failed"},
					round: round(sa, 0, 0, 1, false, time.Minute, 1),
					check: func(t *testing.T, h *harness) {
						wantEntry(t, "a", h.sink.entry("a"), release.Entry{FetchedAt: t0, ETag: "e1", Release: rel("v1"), FailedAt: at(1770 * s), Failures: 1})
					},
				},
				{at: 1829 * s},
				{
					at: 1830 * s, answers: map[string]release.Answer{"a": fetched("v2", "e2")},
					asked: []string{"a(e1)"}, sets: []string{"a"}, round: round(sa, 1, 0, 0, false, 0, 0),
					check: func(t *testing.T, h *harness) {
						wantEntry(t, "a", h.sink.entry("a"), release.Entry{FetchedAt: at(1830 * s), ETag: "e2", Release: rel("v2"), FailedAt: at(1770 * s), Failures: 1})
					},
				},
			},
		},
		{
			name: "a failing app is retried after F − M, then after doubling, and its count restarts after a fetch",
			apps: []string{"a", "b"},
			steps: []step{
				{
					answers: map[string]release.Answer{"a": failed(), "b": fetched("v1", "e1")},
					asked:   []string{"a", "b"}, sets: []string{"a", "b"}, warns: []string{"github request failed"},
					round: round(sa, 1, 0, 1, false, 0, 0),
				},
				{at: 29 * s, round: idle(sa)},
				{
					// The round's only request failed, but b is healthy: a's
					// own retry, and no fleet backoff.
					at: 30 * s, answers: map[string]release.Answer{"a": failed()},
					asked: []string{"a"}, sets: []string{"a"}, warns: []string{"github request failed"},
					round: round(sa, 0, 0, 1, false, 0, 0),
					check: func(t *testing.T, h *harness) {
						wantEntry(t, "a", h.sink.entry("a"), release.Entry{FailedAt: at(30 * s), Failures: 2})
					},
				},
				// a's own retry (2F − M) is not over yet.
				{at: 89 * s, round: idle(sa)},
				{at: 119 * s, round: idle(sa)},
				{
					at: 120 * s, answers: map[string]release.Answer{"a": fetched("v1", "e2")},
					asked: []string{"a"}, sets: []string{"a"}, round: round(sa, 1, 0, 0, false, 0, 0),
				},
				{
					at: 1890 * s, answers: map[string]release.Answer{"a": failed(), "b": notModified()},
					asked: []string{"a(e2)", "b(e1)"}, sets: []string{"a", "b"}, warns: []string{"github request failed"},
					round: round(sa, 0, 1, 1, false, 0, 0),
					check: func(t *testing.T, h *harness) {
						wantEntry(t, "a", h.sink.entry("a"), release.Entry{FetchedAt: at(120 * s), ETag: "e2", Release: rel("v1"), FailedAt: at(1890 * s), Failures: 1})
					},
				},
			},
		},
		{
			name: "all-failed rounds back off F, then doubling",
			apps: []string{"a"},
			steps: []step{
				{answers: map[string]release.Answer{"a": failed()}, asked: []string{"a"}, sets: []string{"a"}, warns: []string{"github request failed"}, round: round(sa, 0, 0, 1, false, time.Minute, 1)},
				{at: 30 * s},
				{at: 59 * s},
				{at: 60 * s, answers: map[string]release.Answer{"a": failed()}, asked: []string{"a"}, sets: []string{"a"}, warns: []string{"github request failed"}, round: round(sa, 0, 0, 1, false, 2*time.Minute, 2)},
				{at: 179 * s},
				{at: 180 * s, answers: map[string]release.Answer{"a": failed()}, asked: []string{"a"}, sets: []string{"a"}, warns: []string{"github request failed"}, round: round(sa, 0, 0, 1, false, 4*time.Minute, 3)},
			},
		},
		{
			name: "a rate limit stops the round and holds every app until the backoff ends",
			apps: []string{"a", "b", "c"},
			steps: []step{
				{
					answers: map[string]release.Answer{"a": fetched("v1", "e1"), "b": rateLimited(at(1*s + 50*time.Minute))},
					asked:   []string{"a", "b"}, sets: []string{"a"}, warns: []string{"github rate limit"},
					round: round(sa, 1, 0, 0, true, 51*time.Minute, 1),
				},
				{at: 30 * s},
				{at: 51 * time.Minute},
				{
					at:      51*time.Minute + 1*s,
					answers: map[string]release.Answer{"a": notModified(), "b": fetched("v1", "e1"), "c": fetched("v1", "e1")},
					asked:   []string{"a(e1)", "b", "c"}, sets: []string{"a", "b", "c"},
					round: round(sa, 2, 1, 0, false, 0, 0),
				},
			},
		},
		{
			name: "a good round clears the backoff, so the next bad round starts over",
			apps: []string{"a"},
			steps: []step{
				{answers: map[string]release.Answer{"a": rateLimited(time.Time{})}, asked: []string{"a"}, warns: []string{"github rate limit"}, round: round(sa, 0, 0, 0, true, 30*time.Minute, 1)},
				{at: 30 * time.Minute, answers: map[string]release.Answer{"a": fetched("v1", "e1")}, asked: []string{"a"}, sets: []string{"a"}, round: round(sa, 1, 0, 0, false, 0, 0)},
				{at: 60 * time.Minute, answers: map[string]release.Answer{"a": failed()}, asked: []string{"a(e1)"}, sets: []string{"a"}, warns: []string{"github request failed"}, round: round(sa, 0, 0, 1, false, time.Minute, 1)},
			},
		},
	}
	for _, sc := range tests {
		t.Run(sc.name, func(t *testing.T) { runScenario(t, sc) })
	}
}

func TestTickCoordinated(t *testing.T) {
	const co, sa = "coordinated", "standalone"
	redisDown := errors.New("dial tcp 127.0.0.1:6379: connection refused")
	seeded := func(seed func(f *fakeFleet)) func() *fakeFleet {
		return func() *fakeFleet {
			f := newFleet()
			seed(f)
			return f
		}
	}
	tests := []scenario{
		{
			name: "every outcome is claimed first and shared",
			apps: []string{"a", "b", "c"}, fleet: newFleet, coordinate: true,
			steps: []step{
				{
					answers: map[string]release.Answer{"a": fetched("v1", "e1"), "b": fetched("v1", "e1"), "c": failed()},
					asked:   []string{"a", "b", "c"},
					calls: []string{"Load", "LoadApp a", "Claim a", "PutFetch a", "LoadApp b", "Claim b", "PutFetch b",
						"LoadApp c", "Claim c", "PutFailure c"},
					sets: []string{"a", "b", "c"}, warns: []string{"github request failed"},
					round: round(co, 2, 0, 1, false, 0, 0),
					check: func(t *testing.T, h *harness) {
						wantEntry(t, "shared a", h.fleet.entry("a"), release.Entry{FetchedAt: t0, ETag: "e1", Release: rel("v1")})
						wantEntry(t, "shared c", h.fleet.entry("c"), release.Entry{FailedAt: at(2 * s), Failures: 1})
					},
				},
				{
					at:      1772 * s,
					answers: map[string]release.Answer{"a": notModified(), "b": notModified(), "c": failed()},
					asked:   []string{"a(e1)", "b(e1)", "c"},
					calls: []string{"Load", "LoadApp a", "Claim a", "PutNotModified a", "LoadApp b", "Claim b", "PutNotModified b",
						"LoadApp c", "Claim c", "PutFailure c"},
					sets: []string{"a", "b", "c"}, warns: []string{"github request failed"},
					round: round(co, 0, 2, 1, false, 0, 0),
					check: func(t *testing.T, h *harness) {
						wantEntry(t, "shared a", h.fleet.entry("a"), release.Entry{FetchedAt: at(1772 * s), ETag: "e1", Release: rel("v1")})
						wantEntry(t, "shared c", h.fleet.entry("c"), release.Entry{FailedAt: at(1774 * s), Failures: 2})
					},
				},
			},
		},
		{
			name: "another pod's fresh fetch makes the app not due",
			apps: []string{"a", "b"}, coordinate: true,
			fleet: seeded(func(f *fakeFleet) {
				f.set("a", release.Entry{FetchedAt: at(-10 * s), ETag: "x1", Release: rel("vX")})
			}),
			steps: []step{{
				answers: map[string]release.Answer{"b": fetched("v1", "e1")},
				asked:   []string{"b"},
				calls:   []string{"Load", "LoadApp b", "Claim b", "PutFetch b"},
				sets:    []string{"a", "b"},
				round:   round(co, 1, 0, 0, false, 0, 0),
				check: func(t *testing.T, h *harness) {
					wantEntry(t, "a", h.sink.entry("a"), release.Entry{FetchedAt: at(-10 * s), ETag: "x1", Release: rel("vX")})
				},
			}},
		},
		{
			name: "another pod's fetch seen on the re-read skips the app",
			apps: []string{"a", "b"}, coordinate: true,
			fleet: seeded(func(f *fakeFleet) {
				f.during = func(f *fakeFleet, op, arg string) {
					if op == "LoadApp" && arg == "a" {
						f.set("a", release.Entry{FetchedAt: t0, ETag: "x1", Release: rel("vX")})
					}
				}
			}),
			steps: []step{{
				answers: map[string]release.Answer{"b": fetched("v1", "e1")},
				asked:   []string{"b"},
				calls:   []string{"Load", "LoadApp a", "LoadApp b", "Claim b", "PutFetch b"},
				sets:    []string{"a", "b"},
				round:   round(co, 1, 0, 0, false, 0, 0),
			}},
		},
		{
			name: "a refused claim skips the app until the claim lapses",
			apps: []string{"a", "b"}, coordinate: true,
			fleet: seeded(func(f *fakeFleet) { f.set("a", release.Entry{ClaimedAt: at(-10 * s)}) }),
			steps: []step{
				{
					answers: map[string]release.Answer{"b": fetched("v1", "e1")},
					asked:   []string{"b"},
					calls:   []string{"Load", "LoadApp a", "Claim a", "LoadApp b", "Claim b", "PutFetch b"},
					sets:    []string{"b"},
					round:   round(co, 1, 0, 0, false, 0, 0),
				},
				{at: 49 * s, calls: []string{"Load", "LoadApp a", "Claim a"}, round: idle(co)},
				{
					at: 50 * s, answers: map[string]release.Answer{"a": fetched("v1", "e1")},
					asked: []string{"a"}, calls: []string{"Load", "LoadApp a", "Claim a", "PutFetch a"},
					sets: []string{"a"}, round: round(co, 1, 0, 0, false, 0, 0),
				},
			},
		},
		{
			name: "the fleet backoff is honoured, and a good round deletes it",
			apps: []string{"a"}, coordinate: true,
			fleet: seeded(func(f *fakeFleet) {
				f.setBackoff(schedule.Backoff{Until: at(10 * time.Minute), Trouble: 2})
			}),
			steps: []step{
				{calls: []string{"Load"}},
				{at: 10*time.Minute - 1, calls: []string{"Load"}},
				{
					at: 10 * time.Minute, answers: map[string]release.Answer{"a": fetched("v1", "e1")},
					asked: []string{"a"}, calls: []string{"Load", "LoadApp a", "Claim a", "PutFetch a", "ClearBackoff read 10m0s trouble 2"},
					sets: []string{"a"}, round: round(co, 1, 0, 0, false, 0, 0),
				},
			},
		},
		{
			name: "a backoff that another pod sets mid-round stops the round and stands",
			apps: []string{"a", "b"}, coordinate: true,
			fleet: seeded(func(f *fakeFleet) {
				f.during = func(f *fakeFleet, op, arg string) {
					if op == "LoadApp" && arg == "b" {
						f.setBackoff(schedule.Backoff{Until: at(time.Hour), Trouble: 3})
					}
				}
			}),
			steps: []step{{
				answers: map[string]release.Answer{"a": fetched("v1", "e1")},
				asked:   []string{"a"},
				calls:   []string{"Load", "LoadApp a", "Claim a", "PutFetch a", "LoadApp b"},
				sets:    []string{"a"},
				// b's re-check comes after the spacing, so the round ends 1 s in.
				round: round(co, 1, 0, 0, false, time.Hour-time.Second, 3),
				check: func(t *testing.T, h *harness) {
					if got, want := h.fleet.backoff, (schedule.Backoff{Until: at(time.Hour), Trouble: 3}); got != want {
						t.Errorf("fleet backoff = %+v, want %+v", got, want)
					}
				},
			}},
		},
		{
			name: "a rate limit is shared as the fleet backoff",
			apps: []string{"a"}, fleet: newFleet, coordinate: true,
			steps: []step{
				{
					answers: map[string]release.Answer{"a": rateLimited(at(50 * time.Minute))},
					asked:   []string{"a"},
					calls:   []string{"Load", "LoadApp a", "Claim a", "PutBackoff until 51m0s trouble 1"},
					warns:   []string{"github rate limit"},
					round:   round(co, 0, 0, 0, true, 51*time.Minute, 1),
				},
				{at: 50 * time.Minute, calls: []string{"Load"}},
			},
		},
		{
			name: "a failed read runs the tick standalone",
			apps: []string{"a", "b"}, coordinate: true,
			fleet: seeded(func(f *fakeFleet) {
				f.setErr("Load", redisDown)
				f.setBackoff(schedule.Backoff{Until: at(time.Hour), Trouble: 1})
			}),
			steps: []step{{
				answers: map[string]release.Answer{"a": fetched("v1", "e1"), "b": failed()},
				asked:   []string{"a", "b"},
				calls:   []string{"Load"},
				sets:    []string{"a", "b"},
				warns:   []string{"redis unavailable", "github request failed"},
				round:   round(sa, 1, 0, 1, false, 0, 0),
			}},
		},
		{
			name: "a failed re-read: the app is still asked, the rest of the round is standalone",
			apps: []string{"a", "b"}, coordinate: true,
			fleet: seeded(func(f *fakeFleet) { f.setErr("LoadApp", redisDown) }),
			steps: []step{{
				answers: map[string]release.Answer{"a": rateLimited(time.Time{})},
				asked:   []string{"a"},
				calls:   []string{"Load", "LoadApp a"},
				warns:   []string{"redis unavailable", "github rate limit"},
				round:   round(sa, 0, 0, 0, true, 30*time.Minute, 1),
			}},
		},
		{
			name: "a failed claim: the app is still asked, the rest of the round is standalone",
			apps: []string{"a", "b"}, coordinate: true,
			fleet: seeded(func(f *fakeFleet) { f.setErr("Claim", redisDown) }),
			steps: []step{{
				answers: map[string]release.Answer{"a": fetched("v1", "e1"), "b": fetched("v1", "e1")},
				asked:   []string{"a", "b"},
				calls:   []string{"Load", "LoadApp a", "Claim a"},
				sets:    []string{"a", "b"},
				warns:   []string{"redis unavailable"},
				round:   round(sa, 2, 0, 0, false, 0, 0),
			}},
		},
		{
			name: "a failed shared write: memory still moves, the rest of the round is standalone",
			apps: []string{"a", "b"}, coordinate: true,
			fleet: seeded(func(f *fakeFleet) { f.setErr("PutFetch", redisDown) }),
			steps: []step{{
				answers: map[string]release.Answer{"a": fetched("v1", "e1"), "b": failed()},
				asked:   []string{"a", "b"},
				calls:   []string{"Load", "LoadApp a", "Claim a", "PutFetch a"},
				sets:    []string{"a", "b"},
				warns:   []string{"redis unavailable", "github request failed"},
				round:   round(sa, 1, 0, 1, false, 0, 0),
				check: func(t *testing.T, h *harness) {
					wantEntry(t, "a", h.sink.entry("a"), release.Entry{FetchedAt: t0, ETag: "e1", Release: rel("v1")})
				},
			}},
		},
		{
			name: "an older shared entry never moves memory back",
			apps: []string{"a"}, fleet: newFleet, coordinate: true,
			steps: []step{
				{
					answers: map[string]release.Answer{"a": fetched("v1", "e1")}, asked: []string{"a"},
					calls: []string{"Load", "LoadApp a", "Claim a", "PutFetch a"}, sets: []string{"a"},
					round: round(co, 1, 0, 0, false, 0, 0),
				},
				{
					at: 1770 * s, before: func(h *harness) { h.fleet.setErr("PutNotModified", redisDown) },
					answers: map[string]release.Answer{"a": notModified()}, asked: []string{"a(e1)"},
					calls: []string{"Load", "LoadApp a", "Claim a", "PutNotModified a"}, sets: []string{"a"},
					warns: []string{"redis unavailable"}, round: round(sa, 0, 1, 0, false, 0, 0),
				},
				{
					// The shared entry is older than memory: written back.
					at: 1800 * s, before: func(h *harness) { h.fleet.setErr("PutNotModified", nil) },
					calls: []string{"Load", "PutFetch a"}, round: idle(co),
					check: func(t *testing.T, h *harness) {
						wantEntry(t, "a", h.sink.entry("a"), release.Entry{FetchedAt: at(1770 * s), ETag: "e1", Release: rel("v1")})
						wantEntry(t, "shared a", h.fleet.entry("a"), release.Entry{FetchedAt: at(1770 * s), ETag: "e1", Release: rel("v1")})
					},
				},
			},
		},
		{
			name: "a flushed fleet is written back from memory at the next tick, without asking GitHub",
			apps: []string{"a", "b", "c"}, fleet: newFleet, coordinate: true,
			steps: []step{
				{
					answers: map[string]release.Answer{"a": fetched("v1", "e1"), "b": fetched("v2", "e2"), "c": failed()},
					asked:   []string{"a", "b", "c"},
					calls: []string{"Load", "LoadApp a", "Claim a", "PutFetch a", "LoadApp b", "Claim b", "PutFetch b",
						"LoadApp c", "Claim c", "PutFailure c"},
					sets: []string{"a", "b", "c"}, warns: []string{"github request failed"},
					round: round(co, 2, 0, 1, false, 0, 0),
				},
				{
					// FLUSHALL: c was never fetched, so there is nothing to write back.
					at: 30 * s, before: func(h *harness) { h.fleet.entries = map[string]release.Entry{} },
					calls: []string{"Load", "PutFetch a", "PutFetch b"}, round: idle(co),
					check: func(t *testing.T, h *harness) {
						wantEntry(t, "shared a", h.fleet.entry("a"), release.Entry{FetchedAt: t0, ETag: "e1", Release: rel("v1")})
						wantEntry(t, "shared b", h.fleet.entry("b"), release.Entry{FetchedAt: at(1 * s), ETag: "e2", Release: rel("v2")})
					},
				},
				{
					at: 60 * s, answers: map[string]release.Answer{"c": fetched("v3", "e3")}, asked: []string{"c"},
					calls: []string{"Load", "LoadApp c", "Claim c", "PutFetch c"}, sets: []string{"c"},
					round: round(co, 1, 0, 0, false, 0, 0),
				},
				{
					// A write lost in a failover: the shared fetch is older than memory's.
					at: 90 * s, before: func(h *harness) {
						h.fleet.set("a", release.Entry{FetchedAt: at(-time.Hour), ETag: "e0", Release: rel("v0")})
					},
					calls: []string{"Load", "PutFetch a"}, round: idle(co),
					check: func(t *testing.T, h *harness) {
						wantEntry(t, "shared a", h.fleet.entry("a"), release.Entry{FetchedAt: t0, ETag: "e1", Release: rel("v1")})
					},
				},
			},
		},
		{
			name: "entries are written back during a fleet backoff too",
			apps: []string{"a"}, fleet: newFleet, coordinate: true,
			steps: []step{
				{
					answers: map[string]release.Answer{"a": fetched("v1", "e1")}, asked: []string{"a"},
					calls: []string{"Load", "LoadApp a", "Claim a", "PutFetch a"}, sets: []string{"a"},
					round: round(co, 1, 0, 0, false, 0, 0),
				},
				{
					at: 30 * s, before: func(h *harness) {
						h.fleet.entries = map[string]release.Entry{}
						h.fleet.setBackoff(schedule.Backoff{Until: at(time.Hour), Trouble: 1})
					},
					calls: []string{"Load", "PutFetch a"},
					check: func(t *testing.T, h *harness) {
						wantEntry(t, "shared a", h.fleet.entry("a"), release.Entry{FetchedAt: t0, ETag: "e1", Release: rel("v1")})
					},
				},
			},
		},
		{
			name: "a Redis error while writing back makes the round standalone",
			apps: []string{"a", "b"}, fleet: newFleet, coordinate: true,
			steps: []step{
				{
					answers: map[string]release.Answer{"a": fetched("v1", "e1"), "b": fetched("v1", "e1")}, asked: []string{"a", "b"},
					calls: []string{"Load", "LoadApp a", "Claim a", "PutFetch a", "LoadApp b", "Claim b", "PutFetch b"},
					sets:  []string{"a", "b"}, round: round(co, 2, 0, 0, false, 0, 0),
				},
				{
					at: 30 * s, before: func(h *harness) {
						h.fleet.entries = map[string]release.Entry{}
						//nolint:revive // Redis's own words, as rueidis returns them.
						h.fleet.setErr("PutFetch", errors.New("READONLY You can't write against a read only replica."))
					},
					calls: []string{"Load", "PutFetch a"}, warns: []string{"redis unavailable"}, round: idle(sa),
				},
			},
		},
		{
			name: "a good round leaves a backoff that another pod wrote after our read",
			apps: []string{"a"}, coordinate: true,
			fleet: seeded(func(f *fakeFleet) {
				f.setBackoff(schedule.Backoff{Until: at(-time.Minute), Trouble: 1})
				f.during = func(f *fakeFleet, op, _ string) {
					if op == "PutFetch" {
						f.setBackoff(schedule.Backoff{Until: at(time.Hour), Trouble: 2})
					}
				}
			}),
			steps: []step{{
				answers: map[string]release.Answer{"a": fetched("v1", "e1")}, asked: []string{"a"},
				calls: []string{"Load", "LoadApp a", "Claim a", "PutFetch a", "ClearBackoff read -1m0s trouble 1"},
				sets:  []string{"a"}, round: round(co, 1, 0, 0, false, 0, 0),
				check: func(t *testing.T, h *harness) {
					if b := h.fleet.backoff; !b.Until.Equal(at(time.Hour)) || b.Trouble != 2 {
						t.Errorf("shared backoff = %+v, want the other pod's, until 1h trouble 2", b)
					}
				},
			}},
		},
		{
			name: "a refused shared write still moves memory",
			apps: []string{"a"}, coordinate: true,
			fleet: seeded(func(f *fakeFleet) {
				f.during = func(f *fakeFleet, op, arg string) {
					if op == "PutFetch" {
						f.set("a", release.Entry{FetchedAt: at(5 * s), ETag: "x1", Release: rel("vX")})
					}
				}
			}),
			steps: []step{
				{
					answers: map[string]release.Answer{"a": fetched("v1", "e1")},
					asked:   []string{"a"},
					calls:   []string{"Load", "LoadApp a", "Claim a", "PutFetch a"},
					sets:    []string{"a"},
					round:   round(co, 1, 0, 0, false, 0, 0),
					check: func(t *testing.T, h *harness) {
						wantEntry(t, "a", h.sink.entry("a"), release.Entry{FetchedAt: t0, ETag: "e1", Release: rel("v1")})
						wantEntry(t, "shared a", h.fleet.entry("a"), release.Entry{FetchedAt: at(5 * s), ETag: "x1", Release: rel("vX")})
					},
				},
				{at: 30 * s, calls: []string{"Load"}, sets: []string{"a"}, round: idle(co)},
			},
		},
		{
			name: "a failed backoff write is Redis trouble",
			apps: []string{"a"}, coordinate: true,
			fleet: seeded(func(f *fakeFleet) { f.setErr("PutBackoff", redisDown) }),
			steps: []step{{
				answers: map[string]release.Answer{"a": failed()},
				asked:   []string{"a"},
				calls:   []string{"Load", "LoadApp a", "Claim a", "PutFailure a", "PutBackoff until 1m0s trouble 1"},
				sets:    []string{"a"},
				warns:   []string{"redis unavailable", "github request failed"},
				round:   round(sa, 0, 0, 1, false, time.Minute, 1),
			}},
		},
		{
			name: "uncoordinated pollers never read the fleet but share their results",
			apps: []string{"a", "b"}, coordinate: false,
			fleet: seeded(func(f *fakeFleet) {
				f.set("a", release.Entry{FetchedAt: at(-10 * s), ETag: "x1", Release: rel("vX"), ClaimedAt: at(-10 * s)})
				f.setBackoff(schedule.Backoff{Until: at(time.Hour), Trouble: 1})
			}),
			steps: []step{
				{
					answers: map[string]release.Answer{"a": fetched("v1", "e1"), "b": rateLimited(time.Time{})},
					asked:   []string{"a", "b"},
					calls:   []string{"PutFetch a"},
					sets:    []string{"a"},
					warns:   []string{"github rate limit"},
					round:   round("uncoordinated", 1, 0, 0, true, 30*time.Minute, 1),
				},
				{at: 30 * time.Minute},
				{
					at: 30*time.Minute + 1*s, answers: map[string]release.Answer{"a": notModified(), "b": failed()},
					asked: []string{"a(e1)", "b"}, calls: []string{"PutNotModified a", "PutFailure b"}, sets: []string{"a", "b"},
					warns: []string{"github request failed"},
					round: round("uncoordinated", 0, 1, 1, false, 0, 0),
				},
			},
		},
	}
	for _, sc := range tests {
		t.Run(sc.name, func(t *testing.T) { runScenario(t, sc) })
	}
}

func TestTickSpacing(t *testing.T) {
	tests := []struct {
		name    string
		apps    []string
		answers map[string]release.Answer
		waits   []time.Duration
		at      []time.Duration
	}{
		{
			name:    "one request, no wait",
			apps:    []string{"a"},
			answers: map[string]release.Answer{"a": fetched("v1", "e1")},
			at:      []time.Duration{0},
		},
		{
			name:    "three requests, a spacing before each but the first",
			apps:    []string{"a", "b", "c"},
			answers: map[string]release.Answer{"a": fetched("v1", "e1"), "b": failed(), "c": fetched("", "")},
			waits:   []time.Duration{time.Second, time.Second},
			at:      []time.Duration{0, time.Second, 2 * time.Second},
		},
		{
			name:    "a rate limit ends the round without another wait",
			apps:    []string{"a", "b", "c"},
			answers: map[string]release.Answer{"a": rateLimited(time.Time{})},
			at:      []time.Duration{0},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t, tt.apps, nil, false)
			h.source.script = tt.answers
			h.p.Tick(context.Background())
			if got := h.waits.take(); !slices.Equal(got, tt.waits) {
				t.Errorf("waits = %v, want %v", got, tt.waits)
			}
			_, times := h.source.take()
			var got []time.Duration
			for _, at := range times {
				got = append(got, at.Sub(t0))
			}
			if !slices.Equal(got, tt.at) {
				t.Errorf("requests at %v, want %v", got, tt.at)
			}
		})
	}
}
