package poller_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/storytold/craft-releases/pkg/poller"
	"github.com/storytold/craft-releases/pkg/release"
	"github.com/storytold/craft-releases/pkg/schedule"
	"github.com/storytold/craft-releases/test/fakeclock"
)

// refreshHarness is a poller over photocraft and vectorcraft that fetched
// both at t0 (v1, "e1"), with the clock a minute later: fresh for another
// half hour at the production timing.
func refreshHarness(t *testing.T, fleet *fakeFleet) *harness {
	t.Helper()
	h := newHarness(t, []string{"photocraft", "vectorcraft"}, fleet, fleet != nil)
	h.source.script = map[string]release.Answer{"photocraft": fetched("v1", `"e1"`), "vectorcraft": fetched("v1", `"e1"`)}
	h.p.Tick(context.Background())
	h.source.take()
	h.obs.take()
	h.logs.TakeAll()
	if fleet != nil {
		fleet.takeCalls()
	}
	setClock(t, h.clock, t0.Add(time.Minute))
	return h
}

// refreshStep moves the clock to at, scripts answers, runs one RefreshRound
// and checks what it asked GitHub and when it says the next attempt is.
func refreshStep(t *testing.T, h *harness, at time.Duration, answers map[string]release.Answer, wantAsked []string, wantNext time.Duration) {
	t.Helper()
	setClock(t, h.clock, t0.Add(at))
	h.source.script = answers
	next := h.p.RefreshRound(context.Background())
	asked, _ := h.source.take()
	if !slices.Equal(asked, wantAsked) {
		t.Errorf("at %v: asked %q, want %q", at, asked, wantAsked)
	}
	gotNext := time.Duration(-1)
	if !next.IsZero() {
		gotNext = next.Sub(t0)
	}
	if gotNext != wantNext {
		t.Errorf("at %v: next attempt at %v, want %v (-1: none)", at, gotNext, wantNext)
	}
}

const none = time.Duration(-1)

func TestRefreshFetchesAFreshAppAtOnce(t *testing.T) {
	h := refreshHarness(t, nil)
	at := t0.Add(time.Minute)
	h.p.Refresh("photocraft", release.Refresh{At: at, Tag: "v2"})
	h.p.Refresh("filmcraft", release.Refresh{At: at}) // not configured: ignored
	refreshStep(t, h, time.Minute, map[string]release.Answer{"photocraft": fetched("v2", `"e2"`)}, []string{`photocraft("e1")`}, none)
	if got := h.sink.entry("photocraft"); got.Release == nil || got.Release.Tag != "v2" {
		t.Errorf("served %+v, want v2", got.Release)
	}
	if got := h.obs.take(); !slices.Contains(got, "refreshed photocraft 0s") {
		t.Errorf("observed %q, want a refreshed photocraft", got)
	}
	// Done: nothing more is asked, even when the same request comes again.
	h.p.Refresh("photocraft", release.Refresh{At: at, Tag: "v2"})
	refreshStep(t, h, 2*time.Minute, nil, nil, none)
}

func TestRefreshRetriesUntilTheTagIsServed(t *testing.T) {
	h := refreshHarness(t, nil)
	h.p.Refresh("photocraft", release.Refresh{At: t0.Add(time.Minute), Tag: "v2"})
	m := time.Minute
	// GitHub answers the previous release, then 304, for a few seconds.
	refreshStep(t, h, m, map[string]release.Answer{"photocraft": notModified()}, []string{`photocraft("e1")`}, m+2*time.Second)
	refreshStep(t, h, m+time.Second, nil, nil, m+2*time.Second)
	refreshStep(t, h, m+2*time.Second, map[string]release.Answer{"photocraft": notModified()}, []string{`photocraft("e1")`}, m+5*time.Second)
	refreshStep(t, h, m+5*time.Second, map[string]release.Answer{"photocraft": fetched("v2", `"e2"`)}, []string{`photocraft("e1")`}, none)
	if got := h.sink.entry("photocraft"); got.Release == nil || got.Release.Tag != "v2" {
		t.Errorf("served %+v, want v2", got.Release)
	}
}

func TestRefreshGivesUpAfter15s(t *testing.T) {
	h := refreshHarness(t, nil)
	h.p.Refresh("photocraft", release.Refresh{At: t0.Add(time.Minute), Tag: "v2"})
	m := time.Minute
	old := func() map[string]release.Answer { return map[string]release.Answer{"photocraft": notModified()} }
	refreshStep(t, h, m, old(), []string{`photocraft("e1")`}, m+2*time.Second)
	refreshStep(t, h, m+2*time.Second, old(), []string{`photocraft("e1")`}, m+5*time.Second)
	refreshStep(t, h, m+5*time.Second, old(), []string{`photocraft("e1")`}, m+15*time.Second)
	refreshStep(t, h, m+15*time.Second, old(), []string{`photocraft("e1")`}, none)
	refreshStep(t, h, m+time.Hour, nil, nil, none)
}

func TestRefreshCoalescesABurst(t *testing.T) {
	h := refreshHarness(t, nil)
	m := time.Minute
	for i := range 10 {
		h.p.Refresh("photocraft", release.Refresh{At: t0.Add(m + time.Duration(i)*time.Millisecond)})
	}
	refreshStep(t, h, m+10*time.Millisecond, map[string]release.Answer{"photocraft": notModified()}, []string{`photocraft("e1")`}, none)
	// Ten more while the last fetch is under a second old: one fetch, a
	// second after the last.
	for i := range 10 {
		h.p.Refresh("photocraft", release.Refresh{At: t0.Add(m + 100*time.Millisecond + time.Duration(i)*50*time.Millisecond)})
	}
	refreshStep(t, h, m+600*time.Millisecond, nil, nil, m+1010*time.Millisecond)
	refreshStep(t, h, m+1010*time.Millisecond, map[string]release.Answer{"photocraft": notModified()}, []string{`photocraft("e1")`}, none)
}

func TestRefreshHonoursBackoffAndRetry(t *testing.T) {
	t.Run("fleet backoff", func(t *testing.T) {
		fleet := newFleet()
		h := refreshHarness(t, fleet)
		until := t0.Add(time.Hour)
		fleet.setBackoff(schedule.Backoff{Until: until, Trouble: 1})
		h.p.Tick(context.Background()) // reads the backoff
		h.p.Refresh("photocraft", release.Refresh{At: t0.Add(time.Minute)})
		refreshStep(t, h, time.Minute, nil, nil, time.Hour)
	})
	t.Run("per-app retry", func(t *testing.T) {
		h := refreshHarness(t, nil)
		// vectorcraft is due at I − M; make it fail.
		setClock(t, h.clock, t0.Add(1772*time.Second))
		h.source.script = map[string]release.Answer{"photocraft": fetched("v1", `"e1"`), "vectorcraft": failed()}
		h.p.Tick(context.Background())
		if asked, at := h.source.take(); len(asked) != 2 || !at[1].Equal(t0.Add(1773*time.Second)) {
			t.Fatalf("asked %q at %v, want both, vectorcraft at 1773 s", asked, at)
		}
		failedAt := 1773 * time.Second
		h.p.Refresh("vectorcraft", release.Refresh{At: t0.Add(failedAt + time.Second)})
		// One failure: retried F − M = 30 s after it, not at once.
		refreshStep(t, h, failedAt+time.Second, nil, nil, failedAt+30*time.Second)
		refreshStep(t, h, failedAt+30*time.Second, map[string]release.Answer{"vectorcraft": fetched("v1", `"e1"`)}, []string{`vectorcraft("e1")`}, none)
	})
	t.Run("a rate limit backs the fleet off", func(t *testing.T) {
		fleet := newFleet()
		h := refreshHarness(t, fleet)
		reset := t0.Add(30 * time.Minute)
		h.p.Refresh("photocraft", release.Refresh{At: t0.Add(time.Minute)})
		h.p.Refresh("vectorcraft", release.Refresh{At: t0.Add(time.Minute)})
		refreshStep(t, h, time.Minute, map[string]release.Answer{"photocraft": rateLimited(reset)}, []string{`photocraft("e1")`}, 31*time.Minute)
		if got := fleet.takeCalls(); !slices.Contains(got, "PutBackoff until 31m0s trouble 1") {
			t.Errorf("fleet calls %q, want the backoff shared", got)
		}
	})
}

func TestRefreshClaims(t *testing.T) {
	m := time.Minute
	t.Run("a claim from before the request does not keep us off", func(t *testing.T) {
		fleet := newFleet()
		h := refreshHarness(t, fleet)
		// The tick at t0 claimed both apps, less than the claim window ago.
		h.p.Refresh("photocraft", release.Refresh{At: t0.Add(m)})
		refreshStep(t, h, m, map[string]release.Answer{"photocraft": notModified()}, []string{`photocraft("e1")`}, none)
		if got := fleet.takeCalls(); !slices.Equal(got, []string{"LoadApp photocraft", "Claim photocraft", "PutNotModified photocraft"}) {
			t.Errorf("fleet calls %q", got)
		}
	})
	t.Run("another poller's claim for the request keeps us off until it lapses", func(t *testing.T) {
		fleet := newFleet()
		h := refreshHarness(t, fleet)
		e := fleet.entry("photocraft")
		e.ClaimedAt = t0.Add(m + 10*time.Millisecond)
		fleet.set("photocraft", e)
		h.p.Refresh("photocraft", release.Refresh{At: t0.Add(m)})
		// The re-read shows the claim: wait the window, unless the other
		// poller's fetch arrives first.
		refreshStep(t, h, m+20*time.Millisecond, nil, nil, 2*m+10*time.Millisecond)
		if got := fleet.takeCalls(); !slices.Equal(got, []string{"LoadApp photocraft"}) {
			t.Errorf("fleet calls %q, want a re-read and no claim", got)
		}
		e = fleet.entry("photocraft")
		e.FetchedAt, e.ETag, e.Release = t0.Add(m+50*time.Millisecond), `"e2"`, &release.Release{Tag: "v2", Assets: []release.Asset{}}
		fleet.set("photocraft", e)
		h.p.Tick(context.Background()) // reads it
		refreshStep(t, h, m+time.Second, nil, nil, none)
	})
	t.Run("a claim lost in a race", func(t *testing.T) {
		fleet := newFleet()
		h := refreshHarness(t, fleet)
		fleet.during = func(f *fakeFleet, op, arg string) {
			if op == "Claim" {
				e := f.entries[arg]
				e.ClaimedAt = t0.Add(m + 5*time.Millisecond)
				f.entries[arg] = e
			}
		}
		h.p.Refresh("photocraft", release.Refresh{At: t0.Add(m)})
		refreshStep(t, h, m+10*time.Millisecond, nil, nil, 2*m+10*time.Millisecond)
	})
}

// TestRunWakesForARefresh: a request that arrives while Run waits between
// two ticks is fetched at once, and Run goes back to waiting for the tick.
func TestRunWakesForARefresh(t *testing.T) {
	clock := fakeclock.New(t0)
	clock.Skip(1)
	src := &fakeSource{clock: clock, script: map[string]release.Answer{"a": fetched("v1", `"e1"`)}}
	p, err := poller.New(poller.Config{
		Apps: apps("a"), Timing: timing, Source: src, Clock: clock,
		Logger: zap.NewNop(), Rand: func() float64 { return 0.5 },
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- p.Run(ctx) }()
	if got := parked(t, clock, 1); got != 30*time.Second {
		t.Fatalf("parked in a wait of %v, want the 30 s to the next tick", got)
	}
	src.mu.Lock()
	src.script = map[string]release.Answer{"a": fetched("v2", `"e2"`)}
	src.mu.Unlock()
	clock.Advance(time.Second)
	p.Refresh("a", release.Refresh{At: clock.Now(), Tag: "v2"})
	// The abandoned wait counts until the clock passes it, and ends when the new one does.
	if got := parked(t, clock, 2); got != 29*time.Second {
		t.Errorf("parked again in a wait of %v, want the 29 s left to the next tick", got)
	}
	cancel()
	if err := <-done; err != nil {
		t.Errorf("Run() = %v, want nil", err)
	}
	if asked, _ := src.take(); !slices.Equal(asked, []string{"a", `a("e1")`}) {
		t.Errorf("asked %q, want the tick's request and the refresh's", asked)
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
			m := time.Minute
			asked, first := 0, none
			for step := range 600 { // a minute in steps of 100 ms
				at := m + time.Duration(step)*100*time.Millisecond
				for _, h := range hs {
					setClock(t, h.clock, t0.Add(at))
					if step < 300 {
						h.p.Refresh("photocraft", release.Refresh{At: t0.Add(at), Tag: "v2"})
					}
				}
				for _, h := range hs {
					h.source.script = map[string]release.Answer{"photocraft": notModified()}
					h.p.RefreshRound(context.Background())
					got, _ := h.source.take()
					if len(got) > 0 && first == none {
						first = at - m
					}
					asked += len(got)
				}
			}
			t.Logf("%d GitHub requests for 300 deliveries in 30 s, the first %v after it", asked, first)
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
				if h.logs.FilterMessage("webhook refresh held back by budget").Len() == 0 {
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
	keys := make([]string, 60)
	for i := range keys {
		keys[i] = fmt.Sprintf("app%02d", i)
	}
	h := newHarness(t, keys, nil, false)
	script := func(a func() release.Answer) {
		h.source.script = map[string]release.Answer{}
		for _, k := range keys {
			h.source.script[k] = a()
		}
	}
	script(func() release.Answer { return fetched("v1", `"e1"`) })
	h.p.Tick(context.Background())
	h.source.take()
	start := t0.Add(10 * time.Minute)
	setClock(t, h.clock, start)
	for _, k := range keys {
		h.p.Refresh(k, release.Refresh{At: start})
	}
	const window = time.Minute
	asked := 0
	for h.clock.Now().Before(start.Add(window)) {
		script(notModified)
		h.p.RefreshRound(context.Background())
		got, _ := h.source.take()
		asked += len(got)
		setClock(t, h.clock, h.clock.Now().Add(100*time.Millisecond))
	}
	most := schedule.FleetBudget.Burst + int(window/schedule.FleetBudget.Every)
	t.Logf("%d of %d apps asked in %v", asked, len(keys), window)
	if asked < schedule.FleetBudget.Burst || asked > most {
		t.Errorf("%d of %d apps asked in %v, want the fleet's burst %d and at most %d", asked, len(keys), window, schedule.FleetBudget.Burst, most)
	}
	if h.obs.deferredBy(poller.FleetBudget) == 0 {
		t.Error("no refresh counted as held back by the fleet's budget")
	}
}
