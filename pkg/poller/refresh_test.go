package poller_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/storytold/craft-releases/pkg/poller"
	"github.com/storytold/craft-releases/pkg/release"
	"github.com/storytold/craft-releases/pkg/schedule"
)

// refreshHarness is a poller over photocraft and vectorcraft that fetched
// both at t0 (v1, "e1"), with the clock a minute later: fresh for another
// half hour at the production timing.
func refreshHarness(t *testing.T, fleet *fakeFleet) *harness {
	t.Helper()
	h := newHarness(t, []string{"photocraft", "vectorcraft"}, fleet, fleet != nil)
	h.tick(t, 0, answers{"photocraft": fetched("v1", `"e1"`), "vectorcraft": fetched("v1", `"e1"`)})
	h.source.take()
	h.obs.take("")
	h.logs.TakeAll()
	if fleet != nil {
		fleet.calls.take()
	}
	setClock(t, h.clock, at(time.Minute))
	return h
}

const none = time.Duration(-1)

// refreshRound moves the clock to d, runs one RefreshRound with answers and
// returns what it asked GitHub and when it says the next attempt is (none).
func refreshRound(t *testing.T, h *harness, d time.Duration, answers answers) (asked []string, next time.Duration) {
	t.Helper()
	setClock(t, h.clock, at(d))
	h.source.script = answers
	n := h.p.RefreshRound(context.Background())
	if next = none; !n.IsZero() {
		next = n.Sub(t0)
	}
	return h.source.takeAsked(), next
}

func request(h *harness, app string, d time.Duration, tag string) {
	h.p.Refresh(app, release.Refresh{At: at(d), Tag: tag})
}

// TestRefreshRound: the fetches a round of refresh requests makes, under
// schedule.RefreshAt's rules (pinned in its package): which entry is
// asked, and when RefreshRound says the next attempt is.
func TestRefreshRound(t *testing.T) {
	const m, ms = time.Minute, time.Millisecond
	type rstep struct {
		at, next     time.Duration
		reqs         []release.Refresh // for photocraft, filed before the round (At: the step's when zero)
		before       func(t *testing.T, h *harness)
		answers      answers
		asked, calls []string // calls: the Fleet's calls; nil: unchecked
	}
	tests := []struct {
		name, served string // served: the tag served after the steps; "": unchecked
		fleet        bool
		steps        []rstep
		check        func(t *testing.T, h *harness)
	}{
		{name: "a fresh app is fetched at once, an unknown one ignored, and a request done asks nothing more", steps: []rstep{
			{at: m, before: func(_ *testing.T, h *harness) {
				request(h, "photocraft", m, "v2")
				request(h, "filmcraft", m, "")
			}, answers: answers{"photocraft": fetched("v2", `"e2"`)}, asked: []string{`photocraft("e1")`}, next: none},
			{at: 2 * m, reqs: []release.Refresh{{At: at(m), Tag: "v2"}}, next: none}},
			served: "v2", check: func(t *testing.T, h *harness) {
				if got := h.obs.take(""); !slices.Contains(got, "refreshed photocraft 0s") {
					t.Errorf("observed %q, want a refreshed photocraft", got)
				}
			}},
		{name: "a tag not served yet is asked again at 2, 5 and 15 s, then given up", steps: []rstep{
			{at: m, reqs: []release.Refresh{{Tag: "v2"}},
				answers: answers{"photocraft": notModified()}, asked: []string{`photocraft("e1")`}, next: m + 2*s},
			{at: m + s, next: m + 2*s},
			{at: m + 2*s, answers: answers{"photocraft": notModified()}, asked: []string{`photocraft("e1")`}, next: m + 5*s},
			{at: m + 5*s, answers: answers{"photocraft": notModified()}, asked: []string{`photocraft("e1")`}, next: m + 15*s},
			{at: m + 15*s, answers: answers{"photocraft": notModified()}, asked: []string{`photocraft("e1")`}, next: none},
			{at: m + time.Hour, next: none}}},
		{name: "a retry that gets the tag ends the request", steps: []rstep{
			{at: m, reqs: []release.Refresh{{Tag: "v2"}},
				answers: answers{"photocraft": notModified()}, asked: []string{`photocraft("e1")`}, next: m + 2*s},
			{at: m + 2*s, answers: answers{"photocraft": fetched("v2", `"e2"`)}, asked: []string{`photocraft("e1")`}, next: none}},
			served: "v2"},
		{name: "a burst is one fetch, and one more a second after the last", steps: []rstep{
			{at: m + 10*ms, before: func(_ *testing.T, h *harness) {
				for i := range 10 {
					request(h, "photocraft", m+time.Duration(i)*ms, "")
				}
			}, answers: answers{"photocraft": notModified()}, asked: []string{`photocraft("e1")`}, next: none},
			{at: m + 600*ms, before: func(_ *testing.T, h *harness) {
				for i := range 10 {
					request(h, "photocraft", m+100*ms+time.Duration(i)*50*ms, "")
				}
			}, next: m + 1010*ms},
			{at: m + 1010*ms, answers: answers{"photocraft": notModified()}, asked: []string{`photocraft("e1")`}, next: none}}},
		{name: "the fleet backoff holds a request", fleet: true, steps: []rstep{{at: m, before: func(_ *testing.T, h *harness) {
			h.fleet.setBackoff(schedule.Backoff{Until: at(time.Hour), Trouble: 1})
			h.p.Tick(context.Background()) // reads it
			request(h, "photocraft", m, "")
		}, next: time.Hour}}},
		{name: "a failing app's own retry holds a request", steps: []rstep{
			{at: 1774 * s, before: func(t *testing.T, h *harness) {
				// vectorcraft is due at I − M: it fails 1773 s in, and is retried F − M = 30 s after.
				h.tick(t, 1772*s, answers{"photocraft": fetched("v1", `"e1"`), "vectorcraft": failed()})
				if _, when := h.source.take(); len(when) != 2 || !when[1].Equal(at(1773*s)) {
					t.Fatalf("asked at %v, want both, vectorcraft at 1773 s", when)
				}
				request(h, "vectorcraft", 1774*s, "")
			}, next: 1803 * s},
			{at: 1803 * s, answers: answers{"vectorcraft": fetched("v1", `"e1"`)}, asked: []string{`vectorcraft("e1")`}, next: none}}},
		{name: "a rate limit backs the fleet off", fleet: true, steps: []rstep{{at: m, before: func(_ *testing.T, h *harness) {
			request(h, "photocraft", m, "")
			request(h, "vectorcraft", m, "")
		}, answers: answers{"photocraft": rateLimited(at(30 * m))}, asked: []string{`photocraft("e1")`}, next: 31 * m,
			calls: []string{"LoadApp photocraft", "Claim photocraft", "PutBackoff until 31m0s trouble 1"}}}},
		{name: "a claim from before the request does not keep us off", fleet: true, steps: []rstep{{at: m, reqs: []release.Refresh{{}},
			answers: answers{"photocraft": notModified()}, asked: []string{`photocraft("e1")`}, next: none,
			calls: []string{"LoadApp photocraft", "Claim photocraft", "PutNotModified photocraft"}}}},
		{name: "another poller's claim for the request keeps us off until it lapses or its fetch arrives", fleet: true, steps: []rstep{
			{at: m + 20*ms, before: func(_ *testing.T, h *harness) {
				e := h.fleet.entry("photocraft")
				e.ClaimedAt = at(m + 10*ms)
				h.fleet.set("photocraft", e)
				request(h, "photocraft", m, "")
			}, next: 2*m + 10*ms, calls: []string{"LoadApp photocraft"}},
			{at: m + s, before: func(_ *testing.T, h *harness) {
				e := h.fleet.entry("photocraft")
				e.FetchedAt, e.ETag, e.Release = at(m+50*ms), `"e2"`, &release.Release{Tag: "v2", Assets: []release.Asset{}}
				h.fleet.set("photocraft", e)
				h.p.Tick(context.Background()) // reads it
			}, next: none}}},
		{name: "a claim lost in a race", fleet: true, steps: []rstep{{at: m + 10*ms, before: func(_ *testing.T, h *harness) {
			h.fleet.during = func(f *fakeFleet, op, arg string) {
				if op == "Claim" {
					e := f.entries[arg]
					e.ClaimedAt = at(m + 5*ms)
					f.entries[arg] = e
				}
			}
			request(h, "photocraft", m, "")
		}, next: 2*m + 10*ms}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var fleet *fakeFleet
			if tt.fleet {
				fleet = newFleet()
			}
			h := refreshHarness(t, fleet)
			for _, st := range tt.steps {
				for _, r := range st.reqs {
					if r.At.IsZero() {
						r.At = at(st.at)
					}
					h.p.Refresh("photocraft", r)
				}
				if st.before != nil {
					st.before(t, h)
				}
				if fleet != nil {
					fleet.calls.take()
				}
				asked, next := refreshRound(t, h, st.at, st.answers)
				if !slices.Equal(asked, st.asked) || next != st.next {
					t.Errorf("at %v: asked %q, next attempt at %v; want %q, %v (-1: none)", st.at, asked, next, st.asked, st.next)
				}
				if st.calls != nil {
					wantList(t, fmt.Sprintf("at %v: fleet calls", st.at), fleet.calls.take(), st.calls)
				}
			}
			if got := tagOf(h.sink.entry("photocraft").Release); tt.served != "" && got != tt.served {
				t.Errorf("served %s, want %s", got, tt.served)
			}
			if tt.check != nil {
				tt.check(t, h)
			}
		})
	}
}

// TestRefreshBudget: 300 distinct deliveries of one app in 30 s, each naming
// a tag GitHub does not serve yet (so every one asks for the 2/5/15 s
// retries), cost at most 12 GitHub requests over the burst and its retries,
// with one poller or two sharing the fleet, and the first delivery is still
// fetched at once. Without the budgets: 35.
func TestRefreshBudget(t *testing.T) {
	for _, pollers := range []int{1, 2} {
		t.Run(fmt.Sprintf("%d pollers", pollers), func(t *testing.T) {
			var fleet *fakeFleet
			if pollers > 1 {
				fleet = newFleet()
			}
			var hs []*harness
			for range pollers {
				hs = append(hs, refreshHarness(t, fleet))
			}
			asked, first := 0, none
			for step := range 600 { // a minute in steps of 100 ms
				d := time.Minute + time.Duration(step)*100*time.Millisecond
				for _, h := range hs {
					setClock(t, h.clock, at(d))
					if step < 300 {
						request(h, "photocraft", d, "v2")
					}
				}
				for _, h := range hs {
					got, _ := refreshRound(t, h, d, answers{"photocraft": notModified()})
					if len(got) > 0 && first == none {
						first = d - time.Minute
					}
					asked += len(got)
				}
			}
			if first != 0 {
				t.Errorf("the first delivery was fetched %v after it, want at once", first)
			}
			if asked > 12 {
				t.Errorf("%d GitHub requests for 300 deliveries of one app in 30 s, want at most 12", asked)
			}
			var held, coalesced int
			for _, h := range hs {
				held += h.obs.deferredBy(poller.AppBudget)
				coalesced += h.obs.deferredBy(poller.Coalesced)
				if h.logged("webhook refresh held back by budget") == 0 {
					t.Error(`no "webhook refresh held back by budget" line`)
				}
			}
			if held == 0 || coalesced == 0 {
				t.Errorf("deferred: %d held back by the app's budget, %d coalesced; want both counted", held, coalesced)
			}
		})
	}
}

// TestFleetBudget: deliveries for 60 apps at once cost the fleet's burst,
// then a request every FleetBudget.Every, whatever the apps' own budgets:
// without it, all 60 in the minute (a second apart).
func TestFleetBudget(t *testing.T) {
	keys := numbered("app", 60, 2)
	h := newHarness(t, keys, nil, false)
	h.tick(t, 0, all(keys, func() release.Answer { return fetched("v1", `"e1"`) }))
	h.source.take()
	start := 10 * time.Minute
	setClock(t, h.clock, at(start))
	for _, k := range keys {
		request(h, k, start, "")
	}
	const window = time.Minute
	asked := 0
	for h.clock.Now().Before(at(start + window)) {
		got, _ := refreshRound(t, h, h.clock.Now().Sub(t0), all(keys, notModified))
		asked += len(got)
		setClock(t, h.clock, h.clock.Now().Add(100*time.Millisecond))
	}
	most := schedule.FleetBudget.Burst + int(window/schedule.FleetBudget.Every)
	if asked < schedule.FleetBudget.Burst || asked > most {
		t.Errorf("%d of %d apps asked in %v, want the fleet's burst %d and at most %d", asked, len(keys), window, schedule.FleetBudget.Burst, most)
	}
	if h.obs.deferredBy(poller.FleetBudget) == 0 {
		t.Error("no refresh counted as held back by the fleet's budget")
	}
}
