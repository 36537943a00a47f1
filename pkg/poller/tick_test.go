package poller_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
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
	waits   []time.Duration           // the clock's waits; nil: unchecked
	// observed are the Observer calls in order; nil: unchecked.
	observed []string
	// entries are the entries wanted after the tick, by app: in the sink,
	// or shared for "shared app".
	entries map[string]release.Entry
}

// scenario is a poller over apps, ticked step by step.
type scenario struct {
	name       string
	apps       []string
	fleet      func(f *fakeFleet) // seeds the fleet; nil: standalone
	coordinate bool
	steps      []step
}

func runScenarios(t *testing.T, tests []scenario) {
	for _, sc := range tests {
		t.Run(sc.name, func(t *testing.T) { runScenario(t, sc) })
	}
}

func runScenario(t *testing.T, sc scenario) {
	var fleet *fakeFleet
	if sc.fleet != nil {
		fleet = newFleet()
		sc.fleet(fleet)
	}
	h := newHarness(t, sc.apps, fleet, sc.coordinate)
	for i, st := range sc.steps {
		setClock(t, h.clock, at(st.at))
		if st.before != nil {
			st.before(h)
		}
		h.waits = nil
		h.tick(t, st.at, st.answers)
		where := fmt.Sprintf("step %d (at %v): ", i, st.at)
		wantList(t, where+"asked", h.source.takeAsked(), st.asked)
		if fleet != nil {
			wantList(t, where+"fleet calls", fleet.calls.take(), st.calls)
		}
		wantList(t, where+"sink sets", h.sink.sets.take(), st.sets)
		rounds, warns, _ := h.tickLogs(t)
		var want []roundLine
		if st.round != nil {
			want = []roundLine{*st.round}
		}
		if !slices.Equal(rounds, want) {
			t.Errorf("step %d (at %v): round lines %#v, want %#v", i, st.at, rounds, want)
		}
		wantList(t, where+"warnings", warns, st.warns)
		if got := h.obs.take(""); st.observed != nil {
			wantList(t, where+"observed", got, st.observed)
		}
		if st.waits != nil && !slices.Equal(h.waits, st.waits) {
			t.Errorf("step %d (at %v): waits %v, want %v", i, st.at, h.waits, st.waits)
		}
		for app, want := range st.entries {
			got := h.sink.entry(app)
			if key, ok := strings.CutPrefix(app, "shared "); ok {
				got = fleet.entry(key)
			}
			if show(got) != show(want) {
				t.Errorf("step %d (at %v): %s = %s, want %s", i, st.at, app, show(got), show(want))
			}
		}
	}
}

// show is what an entry says that a step can want.
func show(e release.Entry) string {
	return fmt.Sprintf("fetched %s etag %q release %s failed %s failures %d",
		since(e.FetchedAt), e.ETag, tagOf(e.Release), since(e.FailedAt), e.Failures)
}

func round(mode string, fetched, unchanged, failed int64, rateLimited bool, backoff time.Duration, trouble int64) *roundLine {
	return &roundLine{mode, fetched, unchanged, failed, rateLimited, backoff, trouble}
}

// idle is the round line of a tick in which nothing was due.
func idle(mode string) *roundLine { return round(mode, 0, 0, 0, false, 0, 0) }

func quota(a release.Answer, remaining int, reset time.Time) release.Answer {
	a.Remaining, a.Reset = remaining, reset
	return a
}

var (
	errRedisDown = errors.New("dial tcp 127.0.0.1:6379: connection refused")
	//nolint:revive,staticcheck // Redis's own words, as rueidis returns them.
	errReadOnly = errors.New("READONLY You can't write against a read only replica.")
)

type answers = map[string]release.Answer

func TestTickStandalone(t *testing.T) {
	const sa = "standalone"
	failedWarn := []string{"github request failed"}
	runScenarios(t, []scenario{
		{name: "due apps are asked in order, one spacing apart", apps: []string{"a", "b", "c"}, steps: []step{{
			answers: answers{"a": fetched("v1", "e1"), "b": fetched("v1", "e1"), "c": fetched("", "")},
			asked:   []string{"a", "b", "c"}, sets: []string{"a", "b", "c"}, round: round(sa, 3, 0, 0, false, 0, 0),
			waits: []time.Duration{s, s},
			entries: map[string]release.Entry{
				"a": {FetchedAt: t0, ETag: "e1", Release: rel("v1")}, "b": {FetchedAt: at(1 * s), ETag: "e1", Release: rel("v1")},
				"c": {FetchedAt: at(2 * s)}}}}},
		{name: "one app's entry through every answer", apps: []string{"a"}, steps: []step{
			{answers: answers{"a": notFound()}, asked: []string{"a"}, sets: []string{"a"}, round: round(sa, 1, 0, 0, false, 0, 0),
				waits: []time.Duration{}, entries: map[string]release.Entry{"a": {FetchedAt: t0}}, // never had a release: no failure
			},
			{at: 1800 * s, answers: answers{"a": notModified()}, asked: []string{"a"}, sets: []string{"a"}, warns: failedWarn,
				round:   round(sa, 0, 0, 1, false, time.Minute, 1), // a 304 to a request without an etag
				entries: map[string]release.Entry{"a": {FetchedAt: t0, FailedAt: at(1800 * s), Failures: 1}}},
			{at: 1859 * s},
			{at: 1860 * s, answers: answers{"a": fetched("v1", "e1")}, asked: []string{"a"}, sets: []string{"a"},
				round:   round(sa, 1, 0, 0, false, 0, 0),
				entries: map[string]release.Entry{"a": {FetchedAt: at(1860 * s), ETag: "e1", Release: rel("v1"), FailedAt: at(1800 * s), Failures: 1}},
			},
			{at: 3630 * s, answers: answers{"a": failed()}, asked: []string{"a(e1)"}, sets: []string{"a"}, warns: failedWarn,
				round:   round(sa, 0, 0, 1, false, time.Minute, 1), // keeps the good release
				entries: map[string]release.Entry{"a": {FetchedAt: at(1860 * s), ETag: "e1", Release: rel("v1"), FailedAt: at(3630 * s), Failures: 1}},
			},
			{at: 3690 * s, answers: answers{"a": notModified()}, asked: []string{"a(e1)"}, sets: []string{"a"},
				round:   round(sa, 0, 1, 0, false, 0, 0), // only moves the fetch time
				entries: map[string]release.Entry{"a": {FetchedAt: at(3690 * s), ETag: "e1", Release: rel("v1"), FailedAt: at(3630 * s), Failures: 1}},
			},
			{at: 5490 * s, answers: answers{"a": fetched("", "")}, asked: []string{"a(e1)"}, sets: []string{"a"},
				round:   round(sa, 1, 0, 0, false, 0, 0), // forgets the release and the etag
				entries: map[string]release.Entry{"a": {FetchedAt: at(5490 * s), FailedAt: at(3630 * s), Failures: 1}}}}},
		{
			// A round whose only request failed, beside a healthy app, sets no fleet backoff.
			name: "a failing app counts its failures in a row, and alone sets no backoff", apps: []string{"a", "b"}, steps: []step{
				{answers: answers{"a": failed(), "b": fetched("v1", "e1")}, asked: []string{"a", "b"}, sets: []string{"a", "b"},
					warns: failedWarn, round: round(sa, 1, 0, 1, false, 0, 0)},
				{at: 30 * s, answers: answers{"a": failed()}, asked: []string{"a"}, sets: []string{"a"}, warns: failedWarn,
					round: round(sa, 0, 0, 1, false, 0, 0), entries: map[string]release.Entry{"a": {FailedAt: at(30 * s), Failures: 2}}},
				{at: 120 * s, answers: answers{"a": fetched("v1", "e2")}, asked: []string{"a"}, sets: []string{"a"}, round: round(sa, 1, 0, 0, false, 0, 0)},
				{at: 1890 * s, answers: answers{"a": failed(), "b": notModified()}, asked: []string{"a(e2)", "b(e1)"}, sets: []string{"a", "b"},
					warns: failedWarn, round: round(sa, 0, 1, 1, false, 0, 0),
					entries: map[string]release.Entry{"a": {FetchedAt: at(120 * s), ETag: "e2", Release: rel("v1"), FailedAt: at(1890 * s), Failures: 1}},
				}}},
		{name: "all-failed rounds back off, the backoff holds every app, and a good round clears it", apps: []string{"a"}, steps: []step{
			{answers: answers{"a": failed()}, asked: []string{"a"}, sets: []string{"a"}, warns: failedWarn, round: round(sa, 0, 0, 1, false, time.Minute, 1)},
			{at: 59 * s},
			{at: 60 * s, answers: answers{"a": failed()}, asked: []string{"a"}, sets: []string{"a"}, warns: failedWarn, round: round(sa, 0, 0, 1, false, 2*time.Minute, 2)},
			{at: 180 * s, answers: answers{"a": fetched("v1", "e1")}, asked: []string{"a"}, sets: []string{"a"}, round: round(sa, 1, 0, 0, false, 0, 0)},
			// The next bad round starts over.
			{at: 1950 * s, answers: answers{"a": failed()}, asked: []string{"a(e1)"}, sets: []string{"a"}, warns: failedWarn, round: round(sa, 0, 0, 1, false, time.Minute, 1)},
		}},
		{name: "a rate limit stops the round, without another wait, and holds every app until the backoff ends",
			apps: []string{"a", "b", "c"}, steps: []step{
				{answers: answers{"a": fetched("v1", "e1"), "b": rateLimited(at(1*s + 50*time.Minute))},
					asked: []string{"a", "b"}, sets: []string{"a"}, warns: []string{"github rate limit"},
					round: round(sa, 1, 0, 0, true, 51*time.Minute, 1), waits: []time.Duration{s}},
				{at: 51 * time.Minute},
				{at: 51*time.Minute + 1*s, answers: answers{"a": notModified(), "b": fetched("v1", "e1"), "c": fetched("v1", "e1")},
					asked: []string{"a(e1)", "b", "c"}, sets: []string{"a", "b", "c"}, round: round(sa, 2, 1, 0, false, 0, 0)}}},
		{name: "the Observer hears every answer with its quota, every fetch and every round with its backoff",
			apps: []string{"a", "b", "c", "d"}, steps: []step{
				{answers: answers{
					"a": quota(fetched("v1", "e1"), 59, at(time.Hour)),
					// No ETag was sent: the 304 counts as a failure, its quota stays.
					"b": quota(notModified(), 58, at(time.Hour)), "c": failed(),
					"d": quota(rateLimited(at(50*time.Minute)), 0, at(50*time.Minute))},
					asked: []string{"a", "b", "c", "d"}, sets: []string{"a", "b", "c"},
					warns: []string{"github request failed", "github request failed", "github rate limit"},
					round: round(sa, 1, 0, 2, true, 50*time.Minute+57*s, 1),
					observed: []string{
						"answer a fetched 59 1h0m0s", "fetched a 0s", "answer b failed 58 1h0m0s", "answer c failed -1 never",
						"answer d rate_limited 0 50m0s", "round standalone 3s 51m0s 1"}},
				{at: 10 * time.Minute, observed: []string{"round standalone 0s 51m0s 1"}},
				{at: 52 * time.Minute,
					answers: answers{
						"a": quota(notModified(), 57, at(2*time.Hour)), "b": fetched("", ""), "c": fetched("v3", "e3"), "d": fetched("v4", "e4")},
					asked: []string{"a(e1)", "b", "c", "d"}, sets: []string{"a", "b", "c", "d"}, round: round(sa, 3, 1, 0, false, 0, 0),
					observed: []string{
						"answer a not_modified 57 2h0m0s", "fetched a 52m0s", "answer b fetched -1 never", "fetched b 52m1s",
						"answer c fetched -1 never", "fetched c 52m2s", "answer d fetched -1 never", "fetched d 52m3s",
						"round standalone 3s never 0"}},
				{at: 53 * time.Minute, round: idle(sa), observed: []string{"round standalone 0s never 0"}}}},
	})
}

func TestTickCoordinated(t *testing.T) {
	const co, sa = "coordinated", "standalone"
	failedWarn := []string{"github request failed"}
	fetchA := step{
		answers: answers{"a": fetched("v1", "e1")}, asked: []string{"a"},
		calls: []string{"Load", "LoadApp a", "Claim a", "PutFetch a"}, sets: []string{"a"}, round: round(co, 1, 0, 0, false, 0, 0),
	}
	runScenarios(t, []scenario{
		{name: "every outcome is claimed first and shared", apps: []string{"a", "b", "c"}, fleet: func(*fakeFleet) {}, coordinate: true,
			steps: []step{
				{answers: answers{"a": fetched("v1", "e1"), "b": fetched("v1", "e1"), "c": failed()}, asked: []string{"a", "b", "c"},
					calls: []string{"Load", "LoadApp a", "Claim a", "PutFetch a", "LoadApp b", "Claim b", "PutFetch b",
						"LoadApp c", "Claim c", "PutFailure c"},
					sets: []string{"a", "b", "c"}, warns: failedWarn, round: round(co, 2, 0, 1, false, 0, 0),
					entries: map[string]release.Entry{
						"shared a": {FetchedAt: t0, ETag: "e1", Release: rel("v1")}, "shared c": {FailedAt: at(2 * s), Failures: 1}}},
				{at: 1772 * s, answers: answers{"a": notModified(), "b": notModified(), "c": failed()},
					asked: []string{"a(e1)", "b(e1)", "c"},
					calls: []string{"Load", "LoadApp a", "Claim a", "PutNotModified a", "LoadApp b", "Claim b", "PutNotModified b",
						"LoadApp c", "Claim c", "PutFailure c"},
					sets: []string{"a", "b", "c"}, warns: failedWarn, round: round(co, 0, 2, 1, false, 0, 0),
					entries: map[string]release.Entry{
						"shared a": {FetchedAt: at(1772 * s), ETag: "e1", Release: rel("v1")},
						"shared c": {FailedAt: at(1774 * s), Failures: 2}}}}},
		{name: "the Observer hears what the fleet knows, claims won and lost, and refused writes of each kind",
			apps: []string{"a", "b", "c", "d", "e"}, coordinate: true,
			fleet: func(f *fakeFleet) {
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
			},
			steps: []step{{
				answers: answers{"c": fetched("v1", "e1"), "d": notModified(), "e": failed()}, asked: []string{"c", "d(e0)", "e"},
				calls: []string{"Load", "LoadApp a", "Claim a", "LoadApp c", "Claim c", "PutFetch c",
					"LoadApp d", "Claim d", "PutNotModified d", "LoadApp e", "Claim e", "PutFailure e"},
				sets: []string{"b", "d", "c", "d", "e"}, warns: failedWarn, round: round(co, 1, 1, 1, false, 0, 0),
				observed: []string{
					"fetched b -10s", "fetched d -30m0s", "claim lost",
					"claim won", "answer c fetched -1 never", "refused put_fetch", "fetched c 0s",
					"claim won", "answer d not_modified -1 never", "refused put_not_modified", "fetched d 1s",
					"claim won", "answer e failed -1 never", "refused put_failure", "round coordinated 2s never 0"},
				// A refused write still moves memory.
				entries: map[string]release.Entry{"c": {FetchedAt: t0, ETag: "e1", Release: rel("v1")}}}}},
		{name: "another pod's fresh fetch, read at the load or at the re-read, makes the app not due",
			apps: []string{"a", "b", "c"}, coordinate: true,
			fleet: func(f *fakeFleet) {
				f.set("a", release.Entry{FetchedAt: at(-10 * s), ETag: "x1", Release: rel("vX")})
				f.during = func(f *fakeFleet, op, arg string) {
					if op == "LoadApp" && arg == "b" {
						f.set("b", release.Entry{FetchedAt: t0, ETag: "x1", Release: rel("vX")})
					}
				}
			},
			steps: []step{{
				answers: answers{"c": fetched("v1", "e1")}, asked: []string{"c"},
				calls: []string{"Load", "LoadApp b", "LoadApp c", "Claim c", "PutFetch c"}, sets: []string{"a", "b", "c"},
				round: round(co, 1, 0, 0, false, 0, 0), entries: map[string]release.Entry{"a": {FetchedAt: at(-10 * s), ETag: "x1", Release: rel("vX")}},
			}}},
		{name: "a refused claim skips the app until the claim lapses", apps: []string{"a", "b"}, coordinate: true,
			fleet: func(f *fakeFleet) { f.set("a", release.Entry{ClaimedAt: at(-10 * s)}) }, steps: []step{
				{answers: answers{"b": fetched("v1", "e1")}, asked: []string{"b"},
					calls: []string{"Load", "LoadApp a", "Claim a", "LoadApp b", "Claim b", "PutFetch b"}, sets: []string{"b"}, round: round(co, 1, 0, 0, false, 0, 0),
				},
				{at: 49 * s, calls: []string{"Load", "LoadApp a", "Claim a"}, round: idle(co)},
				func() step { st := fetchA; st.at = 50 * s; return st }()}},
		{name: "the fleet backoff is honoured and reported, and a good round deletes the one it read, not another pod's",
			apps: []string{"a"}, coordinate: true,
			fleet: func(f *fakeFleet) {
				f.setBackoff(schedule.Backoff{Until: at(10 * time.Minute), Trouble: 2})
				f.during = func(f *fakeFleet, op, _ string) {
					if op == "PutFetch" {
						f.setBackoff(schedule.Backoff{Until: at(time.Hour), Trouble: 3})
					}
				}
			},
			steps: []step{
				{calls: []string{"Load"}, observed: []string{"round coordinated 0s 10m0s 2"}},
				{at: 10*time.Minute - 1, calls: []string{"Load"}},
				{at: 10 * time.Minute, answers: answers{"a": fetched("v1", "e1")}, asked: []string{"a"},
					calls: []string{"Load", "LoadApp a", "Claim a", "PutFetch a", "ClearBackoff read 10m0s trouble 2"},
					sets:  []string{"a"}, round: round(co, 1, 0, 0, false, 0, 0)},
				{at: 10*time.Minute + 30*s, calls: []string{"Load"}, observed: []string{"round coordinated 0s 1h0m0s 3"}}}},
		{name: "a backoff that another pod sets mid-round stops the round and stands", apps: []string{"a", "b"}, coordinate: true,
			fleet: func(f *fakeFleet) {
				f.during = func(f *fakeFleet, op, arg string) {
					if op == "LoadApp" && arg == "b" {
						f.setBackoff(schedule.Backoff{Until: at(time.Hour), Trouble: 3})
					}
				}
			},
			steps: []step{
				{answers: answers{"a": fetched("v1", "e1")}, asked: []string{"a"},
					calls: []string{"Load", "LoadApp a", "Claim a", "PutFetch a", "LoadApp b"}, sets: []string{"a"},
					// b's re-check comes after the spacing, so the round ends 1 s in.
					round: round(co, 1, 0, 0, false, time.Hour-time.Second, 3)},
				// It stands: the next tick reads it, unchanged.
				{at: 30 * s, calls: []string{"Load"}, observed: []string{"round coordinated 0s 1h0m0s 3"}}}},
		{name: "a rate limit is shared as the fleet backoff", apps: []string{"a"}, fleet: func(*fakeFleet) {}, coordinate: true,
			steps: []step{
				{answers: answers{"a": rateLimited(at(50 * time.Minute))}, asked: []string{"a"},
					calls: []string{"Load", "LoadApp a", "Claim a", "PutBackoff until 51m0s trouble 1"},
					warns: []string{"github rate limit"}, round: round(co, 0, 0, 0, true, 51*time.Minute, 1)},
				{at: 50 * time.Minute, calls: []string{"Load"}}}},
		{name: "a failed read runs the tick standalone, without the fleet backoff", apps: []string{"a", "b"}, coordinate: true,
			fleet: func(f *fakeFleet) {
				f.setErr(errRedisDown, "Load")
				f.setBackoff(schedule.Backoff{Until: at(time.Hour), Trouble: 1})
			},
			steps: []step{{
				answers: answers{"a": fetched("v1", "e1"), "b": failed()}, asked: []string{"a", "b"},
				calls: []string{"Load"}, sets: []string{"a", "b"}, warns: []string{"redis unavailable", "github request failed"},
				round: round(sa, 1, 0, 1, false, 0, 0),
				observed: []string{"redis_error load", "answer a fetched -1 never", "fetched a 0s", "answer b failed -1 never",
					"round standalone 1s never 0"}}}},
		{name: "a failed re-read: the app is still asked, the rest of the round is standalone",
			apps: []string{"a", "b"}, coordinate: true, fleet: func(f *fakeFleet) { f.setErr(errRedisDown, "LoadApp") }, steps: []step{{
				answers: answers{"a": rateLimited(time.Time{})}, asked: []string{"a"},
				calls: []string{"Load", "LoadApp a"}, warns: []string{"redis unavailable", "github rate limit"},
				round:    round(sa, 0, 0, 0, true, 30*time.Minute, 1),
				observed: []string{"redis_error load_app", "answer a rate_limited 0 never", "round standalone 0s 30m0s 1"}}}},
		{name: "a failed claim: the app is still asked, the rest of the round is standalone", apps: []string{"a", "b"}, coordinate: true,
			fleet: func(f *fakeFleet) { f.setErr(errRedisDown, "Claim") }, steps: []step{{
				answers: answers{"a": fetched("v1", "e1"), "b": fetched("v1", "e1")}, asked: []string{"a", "b"},
				calls: []string{"Load", "LoadApp a", "Claim a"}, sets: []string{"a", "b"}, warns: []string{"redis unavailable"},
				round: round(sa, 2, 0, 0, false, 0, 0),
				observed: []string{"redis_error claim", "answer a fetched -1 never", "fetched a 0s", "answer b fetched -1 never",
					"fetched b 1s", "round standalone 1s never 0"}}}},
		{name: "a failed shared write: memory still moves, the rest of the round is standalone",
			apps: []string{"a", "b"}, coordinate: true, fleet: func(f *fakeFleet) { f.setErr(errRedisDown, "PutFetch") }, steps: []step{{
				answers: answers{"a": fetched("v1", "e1"), "b": failed()}, asked: []string{"a", "b"},
				calls: []string{"Load", "LoadApp a", "Claim a", "PutFetch a"}, sets: []string{"a", "b"},
				warns: []string{"redis unavailable", "github request failed"}, round: round(sa, 1, 0, 1, false, 0, 0),
				observed: []string{"claim won", "answer a fetched -1 never", "redis_error put_fetch", "fetched a 0s",
					"answer b failed -1 never", "round standalone 1s never 0"},
				entries: map[string]release.Entry{"a": {FetchedAt: t0, ETag: "e1", Release: rel("v1")}}}}},
		{name: "a failed failure write: the rest of the round is standalone", apps: []string{"a", "b"}, coordinate: true,
			fleet: func(f *fakeFleet) { f.setErr(errRedisDown, "PutFailure") }, steps: []step{{
				answers: answers{"a": failed(), "b": fetched("v1", "e1")}, asked: []string{"a", "b"},
				calls: []string{"Load", "LoadApp a", "Claim a", "PutFailure a"}, sets: []string{"a", "b"},
				warns: []string{"redis unavailable", "github request failed"}, round: round(sa, 1, 0, 1, false, 0, 0),
				observed: []string{"claim won", "answer a failed -1 never", "redis_error put_failure",
					"answer b fetched -1 never", "fetched b 1s", "round standalone 1s never 0"}}}},
		{name: "a failed backoff write is Redis trouble", apps: []string{"a"}, coordinate: true,
			fleet: func(f *fakeFleet) { f.setErr(errRedisDown, "PutBackoff") }, steps: []step{{
				answers: answers{"a": failed()}, asked: []string{"a"},
				calls: []string{"Load", "LoadApp a", "Claim a", "PutFailure a", "PutBackoff until 1m0s trouble 1"},
				sets:  []string{"a"}, warns: []string{"redis unavailable", "github request failed"},
				round:    round(sa, 0, 0, 1, false, time.Minute, 1),
				observed: []string{"claim won", "answer a failed -1 never", "redis_error put_backoff", "round standalone 0s 1m0s 1"}}}},
		{name: "a failed 304 write leaves memory ahead, and an older shared entry is written back, never read back",
			apps: []string{"a"}, fleet: func(*fakeFleet) {}, coordinate: true, steps: []step{
				fetchA,
				{at: 1770 * s, before: func(h *harness) { h.fleet.setErr(errRedisDown, "PutNotModified") },
					answers: answers{"a": notModified()}, asked: []string{"a(e1)"},
					calls: []string{"Load", "LoadApp a", "Claim a", "PutNotModified a"}, sets: []string{"a"},
					warns: []string{"redis unavailable"}, round: round(sa, 0, 1, 0, false, 0, 0),
					observed: []string{"claim won", "answer a not_modified -1 never", "redis_error put_not_modified",
						"fetched a 29m30s", "round standalone 0s never 0"}},
				{at: 1800 * s, before: func(h *harness) { h.fleet.setErr(nil, "PutNotModified") },
					calls: []string{"Load", "PutFetch a"}, round: idle(co),
					entries: map[string]release.Entry{
						"a":        {FetchedAt: at(1770 * s), ETag: "e1", Release: rel("v1")},
						"shared a": {FetchedAt: at(1770 * s), ETag: "e1", Release: rel("v1")}}}}},
		{name: "a flushed fleet is written back from memory at the next tick, without asking GitHub",
			apps: []string{"a", "b", "c"}, fleet: func(*fakeFleet) {}, coordinate: true, steps: []step{
				{answers: answers{"a": fetched("v1", "e1"), "b": fetched("v2", "e2"), "c": failed()}, asked: []string{"a", "b", "c"},
					calls: []string{"Load", "LoadApp a", "Claim a", "PutFetch a", "LoadApp b", "Claim b", "PutFetch b",
						"LoadApp c", "Claim c", "PutFailure c"},
					sets: []string{"a", "b", "c"}, warns: failedWarn, round: round(co, 2, 0, 1, false, 0, 0)},
				{
					// FLUSHALL: c was never fetched, so there is nothing to write back.
					at: 30 * s, before: func(h *harness) { h.fleet.entries = map[string]release.Entry{} },
					calls: []string{"Load", "PutFetch a", "PutFetch b"}, round: idle(co),
					entries: map[string]release.Entry{
						"shared a": {FetchedAt: t0, ETag: "e1", Release: rel("v1")},
						"shared b": {FetchedAt: at(1 * s), ETag: "e2", Release: rel("v2")}}},
				{at: 60 * s, answers: answers{"c": fetched("v3", "e3")}, asked: []string{"c"},
					calls: []string{"Load", "LoadApp c", "Claim c", "PutFetch c"}, sets: []string{"c"}, round: round(co, 1, 0, 0, false, 0, 0)},
				{
					// A write lost in a failover: the shared fetch is older than memory's.
					at: 90 * s, before: func(h *harness) {
						h.fleet.set("a", release.Entry{FetchedAt: at(-time.Hour), ETag: "e0", Release: rel("v0")})
					},
					calls: []string{"Load", "PutFetch a"}, round: idle(co),
					entries: map[string]release.Entry{"shared a": {FetchedAt: t0, ETag: "e1", Release: rel("v1")}}},
				{
					// A Redis error while writing back makes the round standalone.
					at: 120 * s, before: func(h *harness) {
						h.fleet.entries = map[string]release.Entry{}
						h.fleet.setErr(errReadOnly, "PutFetch")
					},
					calls: []string{"Load", "PutFetch a"}, warns: []string{"redis unavailable"}, round: idle(sa)},
				{
					// Entries are written back during a fleet backoff too.
					at: 150 * s, before: func(h *harness) {
						h.fleet.setErr(nil, "PutFetch")
						h.fleet.setBackoff(schedule.Backoff{Until: at(time.Hour), Trouble: 1})
					},
					calls:   []string{"Load", "PutFetch a", "PutFetch b", "PutFetch c"},
					entries: map[string]release.Entry{"shared c": {FetchedAt: at(60 * s), ETag: "e3", Release: rel("v3")}}}}},
		{name: "a refused shared write still moves memory, and the fleet's newer entry is read next", apps: []string{"a"}, coordinate: true,
			fleet: func(f *fakeFleet) {
				f.during = func(f *fakeFleet, op, _ string) {
					if op == "PutFetch" {
						f.set("a", release.Entry{FetchedAt: at(5 * s), ETag: "x1", Release: rel("vX")})
					}
				}
			},
			steps: []step{
				func() step {
					st := fetchA
					st.entries = map[string]release.Entry{
						"a":        {FetchedAt: t0, ETag: "e1", Release: rel("v1")},
						"shared a": {FetchedAt: at(5 * s), ETag: "x1", Release: rel("vX")},
					}
					return st
				}(),
				{at: 30 * s, calls: []string{"Load"}, sets: []string{"a"}, round: idle(co)}}},
		{name: "uncoordinated pollers never read the fleet but share their results", apps: []string{"a", "b"},
			fleet: func(f *fakeFleet) {
				f.set("a", release.Entry{FetchedAt: at(-10 * s), ETag: "x1", Release: rel("vX"), ClaimedAt: at(-10 * s)})
				f.setBackoff(schedule.Backoff{Until: at(time.Hour), Trouble: 1})
			},
			steps: []step{
				{answers: answers{"a": fetched("v1", "e1"), "b": rateLimited(time.Time{})}, asked: []string{"a", "b"},
					calls: []string{"PutFetch a"}, sets: []string{"a"}, warns: []string{"github rate limit"},
					round: round("uncoordinated", 1, 0, 0, true, 30*time.Minute, 1),
					observed: []string{"answer a fetched -1 never", "fetched a 0s", "answer b rate_limited 0 never",
						"round uncoordinated 1s 30m1s 1"}},
				{at: 30 * time.Minute},
				{at: 30*time.Minute + 1*s, answers: answers{"a": notModified(), "b": failed()},
					asked: []string{"a(e1)", "b"}, calls: []string{"PutNotModified a", "PutFailure b"}, sets: []string{"a", "b"},
					warns: failedWarn, round: round("uncoordinated", 0, 1, 1, false, 0, 0)}}},
	})
}

// TestTickCancelled: a tick cut short by shutdown records nothing, neither
// the answer in flight, nor the errors of the cancellation as a Redis
// outage or a GitHub failure, nor a round.
func TestTickCancelled(t *testing.T) {
	tests := []struct {
		name                    string
		backoff                 bool   // a fleet backoff holds, learnt by a tick before
		cancelOn                string // the Fleet call during which shutdown begins
		err                     error  // what that call returns
		calls, observed, logged []string
	}{
		{name: "during the claim", cancelOn: "Claim", err: context.Canceled, calls: []string{"Load", "LoadApp a", "Claim a"}},
		{name: "after the claim, before the answer", cancelOn: "Claim", calls: []string{"Load", "LoadApp a", "Claim a"},
			observed: []string{"claim won"}},
		{name: "during the load, while a backoff holds", backoff: true, cancelOn: "Load", err: context.Canceled, calls: []string{"Load"},
			logged: []string{"backoff active"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t, []string{"a", "b"}, newFleet(), true)
			if tt.backoff {
				h.fleet.setBackoff(schedule.Backoff{Until: at(time.Hour), Trouble: 1})
				h.p.Tick(context.Background())
				if got, want := h.obs.take(""), []string{"round coordinated 0s 1h0m0s 1"}; !slices.Equal(got, want) {
					t.Fatalf("first tick observed %q, want %q", got, want)
				}
				h.fleet.calls.take()
				h.logs.TakeAll()
			}
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			h.fleet.during = func(_ *fakeFleet, op, _ string) {
				if op == tt.cancelOn {
					cancel()
				}
			}
			h.fleet.setErr(tt.err, tt.cancelOn)
			h.source.script = answers{"a": failed()}
			h.p.Tick(ctx)
			wantList(t, "observed", h.obs.take(""), tt.observed)
			wantList(t, "fleet calls", h.fleet.calls.take(), tt.calls)
			wantList(t, "sink sets", h.sink.sets.take(), nil)
			var logged []string
			for _, e := range h.logs.TakeAll() {
				logged = append(logged, e.Message)
			}
			wantList(t, "logged", logged, tt.logged)
		})
	}
}
