package poller_test

import (
	"context"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/storytold/craft-releases/pkg/poller"
	"github.com/storytold/craft-releases/pkg/release"
	"github.com/storytold/craft-releases/pkg/updates/tauri"
	"github.com/storytold/craft-releases/test/testkit"
)

// datedAt returns a release tag published h hours before t0.
func datedAt(tag string, h int) *release.Release {
	return &release.Release{Tag: tag, PublishedAt: release.NewTime(t0.Add(-time.Duration(h) * time.Hour)), Assets: []release.Asset{}}
}

func historyAnswer(etag string, rels ...*release.Release) release.Answer {
	return release.Answer{Outcome: release.Fetched, ETag: etag, History: release.NewHistory(rels), Remaining: -1}
}

// TestRequestsPerEntry: at the production interval, every entry polled
// costs one GitHub request per I − M, the first round included: an app's
// own, its pre-release channel's, and the history of an app with decisions,
// while the history of an app without costs none.
func TestRequestsPerEntry(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name        string
		apps, hours int
		prereleases bool
		decided     []string
		lo, hi      int // requests per entry in that time
	}{
		{name: "13 apps with their pre-releases", apps: 13, prereleases: true, hours: 10, lo: 20, hi: 21},
		{name: "1,000 apps, one with decisions", apps: 1000, decided: []string{"app0421"}, hours: 3, lo: 6, hi: 7},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			list := apps(numbered("app", tt.apps, 4)...)
			for i := range list {
				list[i].Prereleases = tt.prereleases
			}
			h := newHarness(t, nil, nil, false, func(c *poller.Config) { c.Apps, c.Logger = release.Entries(list), zap.NewNop() })
			h.source.otherwise = steady
			h.p.SetDecided(tt.decided)
			for end := at(time.Duration(tt.hours) * time.Hour); h.clock.Now().Before(end); {
				h.p.Tick(context.Background())
				setClock(t, h.clock, h.clock.Now().Add(timing.Tick))
			}
			n := map[string]int{}
			byChannel := map[release.Channel]int{}
			for _, call := range h.source.takeAsked() {
				key, _, _ := strings.Cut(call, "(")
				n[key]++
				_, ch := release.AppOf(key)
				byChannel[ch]++
			}
			var want []string
			for _, e := range release.Entries(list) {
				if app, ch := release.AppOf(e.Key); ch != release.HistoryChannel || slices.Contains(tt.decided, app) {
					want = append(want, e.Key)
				}
			}
			if len(n) != len(want) {
				t.Errorf("%d entries asked about, want %d", len(n), len(want))
			}
			for _, key := range want {
				if n[key] < tt.lo || n[key] > tt.hi {
					t.Errorf("%s asked %d times in %d h, want %d to %d (once per I − M)", key, n[key], tt.hours, tt.lo, tt.hi)
				}
			}
			if tt.prereleases && byChannel[release.Prerelease] != byChannel[release.Stable] {
				t.Errorf("%d list requests for %d latest-release requests, want as many", byChannel[release.Prerelease], byChannel[release.Stable])
			}
		})
	}
}

// historyHarness is a poller over apps a and b and their histories, a with
// decisions, GitHub answering steadily.
func historyHarness(t *testing.T, fleet *fakeFleet, opts ...func(*poller.Config)) *harness {
	h := newHarness(t, []string{"a", "b"}, fleet, fleet != nil, append([]func(*poller.Config){withHistory}, opts...)...)
	h.source.otherwise = steady
	h.p.SetDecided([]string{"a"})
	return h
}

// TestHistoryNewlyDecided: an app that gains a decision has its history
// asked for at the next tick, and shared, and after a flush written back from
// memory without a request to GitHub; once it loses it, its history is
// neither asked for, read nor repaired.
func TestHistoryNewlyDecided(t *testing.T) {
	h := historyHarness(t, newFleet())
	h.p.SetDecided(nil)
	h.tick(t, 0, nil)
	if got := h.source.takeAsked(); !slices.Equal(got, []string{"a", "b"}) {
		t.Fatalf("first tick asked %v, want a and b", got)
	}
	h.fleet.calls.take()

	h.p.SetDecided([]string{"b"})
	h.tick(t, timing.Tick, nil)
	wantList(t, "the tick after the decision asked", h.source.takeAsked(), []string{"b:history"})
	wantList(t, "shared history", h.fleet.entry("b:history").History.Tags(), []string{"v2", "v1"})
	if calls := h.fleet.calls.take(); !slices.Contains(calls, "PutFetch b:history") {
		t.Errorf("fleet calls %v, want b's history written", calls)
	}
	// What the app serves under a decision may change with its history:
	// the change names the release before the latest, and the latest.
	if !slices.Contains(h.changes, "b:history v1→v2") {
		t.Errorf("changes %q, want b's history as v1→v2", h.changes)
	}

	want := h.fleet.entry("b:history")
	for _, key := range []string{"a", "a:history", "b", "b:history"} { // a flush
		h.fleet.set(key, release.Entry{})
	}
	h.tick(t, 2*timing.Tick, nil)
	wantList(t, "after a flush (all fresh), asked GitHub", h.source.takeAsked(), nil)
	if got := h.fleet.entry("b:history"); !got.FetchedAt.Equal(want.FetchedAt) || !slices.Equal(got.History.Tags(), want.History.Tags()) {
		t.Errorf("after the flush: %+v, want %+v written back", got, want)
	}
	if calls := h.fleet.calls.take(); slices.Contains(calls, "PutFetch a:history") {
		t.Errorf("a's history written back without a decision: %v", calls)
	}

	h.p.SetDecided(nil)
	h.fleet.set("b:history", release.Entry{})
	h.ticks(t, 3*timing.Tick, 3*timing.Tick+2*timing.Interval, nil, nil)
	wantList(t, "without a decision, of the history", mentions(append(h.source.takeAsked(), h.fleet.calls.take()...), "history"), nil)
}

// TestHistoryKept: a failed answer (a list that does not parse) keeps the
// history and counts a failure, a 404 keeps it too until the 404s have
// lasted an interval, and a new list replaces it.
func TestHistoryKept(t *testing.T) {
	h := historyHarness(t, nil)
	steps := []struct {
		name     string
		a        release.Answer
		tags     []string
		failures int // in a row
	}{
		{"the list", historyAnswer(`"h1"`, datedAt("v2", 1), datedAt("v1", 2)), []string{"v2", "v1"}, 0},
		{"a malformed list", failed(), []string{"v2", "v1"}, 1}, {"a 404", notFound(), []string{"v2", "v1"}, 2},
		{"a newer list", historyAnswer(`"h2"`, datedAt("v3", 0), datedAt("v2", 1)), []string{"v3", "v2"}, 0},
	}
	for i, st := range steps {
		// Past the retry's wait and the interval: due again.
		h.tick(t, time.Duration(i)*timing.Interval, answers{"a:history": st.a})
		e := h.sink.entry("a:history")
		failures := 0
		if e.Failing() {
			failures = e.Failures
		}
		if got := e.History.Tags(); !slices.Equal(got, st.tags) || failures != st.failures {
			t.Errorf("%s: history %q, %d failures in a row; want %q, %d", st.name, got, failures, st.tags, st.failures)
		}
	}
}

// TestHistoryRefresh: a refresh request for a decided app asks for its
// history too, at once; one for an app without decisions does not; one
// that names the history entry of an app this poller knows no decision of
// yet (an operator's verb files one as it decides) asks for the list once,
// and the ticks after it do not, until the decision is known.
func TestHistoryRefresh(t *testing.T) {
	h := newHarness(t, []string{"a", "b", "c"}, nil, false, withHistory)
	h.source.otherwise = steady
	h.p.SetDecided([]string{"a"})
	h.tick(t, 0, nil)
	h.source.take()
	setClock(t, h.clock, at(time.Minute))
	for _, key := range []string{"a", "b:history", "c"} {
		request(h, key, time.Minute, "")
	}
	h.p.RefreshRound(context.Background())
	wantList(t, "refresh round asked", h.source.takeAsked(), []string{`a("e1")`, `a:history("h1")`, "b:history", `c("e1")`})
	h.ticks(t, time.Minute+timing.Tick, time.Minute+timing.Interval+timing.Tick, nil, nil)
	wantList(t, "without a decision, ticks asked", mentions(h.source.takeAsked(), "b:history"), nil)
}

// TestHistoryCompanions: after a history's 200, the companions of the
// releases it keeps them of are fetched as a release's are, kept with the
// history and shared; a later 304 asks for none again.
func TestHistoryCompanions(t *testing.T) {
	key := testkit.NewMinisignKey(t)
	h := newHarness(t, nil, newFleet(), true, func(c *poller.Config) {
		c.Apps, c.Companions = release.Entries(apps("artcraft"))[1:], tauri.Companions
	})
	h.p.SetDecided([]string{"artcraft"})
	// v2 and v1, each with an AppImage and its .sig (ids 2 and 1).
	a := historyAnswer(`"h1"`, datedAt("v2", 1), datedAt("v1", 2))
	a.HistoryAssets = map[string]map[string]release.AssetRef{}
	sigs := map[string]string{}
	for i, r := range a.History.Releases {
		name := "ArtCraft_" + r.Tag + "_amd64.AppImage"
		r.Assets = append(r.Assets, release.Asset{Name: name}, release.Asset{Name: name + ".sig"})
		a.HistoryAssets[r.Tag] = map[string]release.AssetRef{name: {ID: int64(100 + i)}, name + ".sig": {ID: int64(2 - i)}}
		sigs[r.Tag] = key.Sign(name, []byte(r.Tag))
		h.source.answer(int64(2-i), bytesOf(sigs[r.Tag]))
	}
	h.tick(t, 0, answers{"artcraft:history": a})
	if got := h.source.sigAsked.take(); !reflect.DeepEqual(got, []string{"2", "1"}) {
		t.Errorf("companions asked: got %v, want v2's then v1's", got)
	}
	for _, e := range []release.Entry{h.sink.entry("artcraft:history"), h.fleet.entry("artcraft:history")} {
		for _, r := range a.History.Releases {
			name := "ArtCraft_" + r.Tag + "_amd64.AppImage.sig"
			if got, _ := e.History.CompanionsOf(r.Tag).Get(name); got != sigs[r.Tag] {
				t.Errorf("%s: kept %q, want its signature", name, got)
			}
		}
	}
	h.tick(t, timing.Interval, answers{"artcraft:history": notModified()})
	wantList(t, "after a 304, companions asked", h.source.sigAsked.take(), nil)
	wantEq(t, "after a 304, companions of v1 kept", h.sink.entry("artcraft:history").History.CompanionsOf("v1").Len(), 1)
}
