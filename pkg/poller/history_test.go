package poller_test

import (
	"context"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"sync"
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

// historySource answers every request, a 200 the first time and a 304
// after, a history entry with a list of two releases (script overrides,
// one answer each, by key), and records each request as "key", or
// "key(etag)" when revalidating.
type historySource struct {
	mu     sync.Mutex
	n      map[string]int
	asked  []string
	script map[string][]release.Answer
}

func newHistorySource() *historySource {
	return &historySource{n: map[string]int{}, script: map[string][]release.Answer{}}
}

func (s *historySource) Latest(_ context.Context, app release.App, etag string) release.Answer {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.n[app.Key]++
	call := app.Key
	if etag != "" {
		call += "(" + etag + ")"
	}
	s.asked = append(s.asked, call)
	if q := s.script[app.Key]; len(q) > 0 {
		s.script[app.Key] = q[1:]
		return q[0]
	}
	switch {
	case etag != "":
		return notModified()
	case app.Channel == release.HistoryChannel:
		return historyAnswer(`"h1"`, datedAt("v2", 1), datedAt("v1", 2))
	}
	return fetched("v2", `"e"`)
}

func (s *historySource) take() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := s.asked
	s.asked = nil
	return out
}

func historyAnswer(etag string, rels ...*release.Release) release.Answer {
	return release.Answer{Outcome: release.Fetched, ETag: etag, History: release.NewHistory(rels), Remaining: -1}
}

// TestHistoryOnlyDecided: at the production interval, of 1,000 apps of
// which one has decisions, that one's history costs one GitHub request per
// interval and the others' none; every app's own entry costs what it did.
func TestHistoryOnlyDecided(t *testing.T) {
	t.Parallel()
	const hours = 3
	list := make([]release.App, 1000)
	for i := range list {
		list[i] = release.App{Key: fmt.Sprintf("app%04d", i), Name: "App", Repo: fmt.Sprintf("org/app%04d", i)}
	}
	src, clock := newHistorySource(), newClock()
	p, err := poller.New(poller.Config{Apps: release.Entries(list), Timing: timing, Source: src, Logger: zap.NewNop(), Clock: clock})
	if err != nil {
		t.Fatal(err)
	}
	p.SetDecided([]string{"app0421"})
	for end := t0.Add(hours * time.Hour); clock.Now().Before(end); {
		p.Tick(context.Background())
		setClock(t, clock, clock.Now().Add(timing.Tick))
	}
	// Each entry is due once per I − M = 29.5 min: 6 or 7 requests in 3 h.
	for key, n := range src.n {
		_, ch := release.AppOf(key)
		switch {
		case ch == release.HistoryChannel && key != "app0421:history":
			t.Errorf("%s asked %d times, want never (no decision)", key, n)
		case n < 6 || n > 7:
			t.Errorf("%s asked %d times in %d h, want 6 or 7 (once per I − M)", key, n, hours)
		}
	}
	if n := src.n["app0421:history"]; n == 0 {
		t.Error("app0421's history never asked for")
	}
	if len(src.n) != len(list)+1 {
		t.Errorf("%d entries asked about, want the %d apps and one history", len(src.n), len(list)+1)
	}
}

// TestHistoryNewlyDecided: an app that gains a decision has its history
// asked for at the next tick, and shared; once it loses it, its history is
// neither asked for, read nor repaired.
func TestHistoryNewlyDecided(t *testing.T) {
	src, clock, fleet := newHistorySource(), newClock(), newFleet()
	p, err := poller.New(poller.Config{Apps: release.Entries(apps("a", "b")), Timing: timing, Source: src, Fleet: fleet,
		Coordinate: true, Logger: zap.NewNop(), Clock: clock, Rand: func() float64 { return 0.5 }})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	p.Tick(ctx)
	if got := src.take(); !reflect.DeepEqual(got, []string{"a", "b"}) {
		t.Fatalf("first tick asked %v, want a and b", got)
	}
	fleet.takeCalls()

	setClock(t, clock, clock.Now().Add(timing.Tick))
	p.SetDecided([]string{"b"})
	p.Tick(ctx)
	if got := src.take(); !reflect.DeepEqual(got, []string{"b:history"}) {
		t.Errorf("the tick after the decision asked %v, want b's history", got)
	}
	if got := fleet.entry("b:history").History.Tags(); !reflect.DeepEqual(got, []string{"v2", "v1"}) {
		t.Errorf("shared history %q, want v2, v1", got)
	}
	if calls := fleet.takeCalls(); !slices.Contains(calls, "PutFetch b:history") {
		t.Errorf("fleet calls %v, want b's history written", calls)
	}

	p.SetDecided(nil)
	fleet.set("b:history", release.Entry{})
	for end := clock.Now().Add(2 * timing.Interval); clock.Now().Before(end); {
		setClock(t, clock, clock.Now().Add(timing.Tick))
		p.Tick(ctx)
	}
	for _, call := range append(src.take(), fleet.takeCalls()...) {
		if strings.Contains(call, "history") {
			t.Errorf("without a decision: %q, want nothing of the history", call)
		}
	}
}

// TestHistoryKept: a failed answer (a list that does not parse) keeps the
// history and counts a failure, a 404 keeps it too until the 404s have
// lasted an interval, and a new list replaces it.
func TestHistoryKept(t *testing.T) {
	src, clock, sink := newHistorySource(), newClock(), &fakeSink{}
	p, err := poller.New(poller.Config{Apps: release.Entries(apps("a")), Timing: timing, Source: src, Sink: sink,
		Logger: zap.NewNop(), Clock: clock, Rand: func() float64 { return 0.5 }})
	if err != nil {
		t.Fatal(err)
	}
	p.SetDecided([]string{"a"})
	ctx := context.Background()
	// wantFailures: in a row, 0 for none.
	step := func(name string, a release.Answer, wantTags []string, wantFailures int) {
		t.Helper()
		src.script["a:history"] = []release.Answer{a}
		p.Tick(ctx)
		e := sink.entry("a:history")
		failures := 0
		if e.Failing() {
			failures = e.Failures
		}
		if got := e.History.Tags(); !reflect.DeepEqual(got, wantTags) || failures != wantFailures {
			t.Errorf("%s: history %q, %d failures in a row; want %q, %d", name, got, failures, wantTags, wantFailures)
		}
		// Past the retry's wait and the interval: due again.
		setClock(t, clock, clock.Now().Add(timing.Interval))
	}
	step("the list", historyAnswer(`"h1"`, datedAt("v2", 1), datedAt("v1", 2)), []string{"v2", "v1"}, 0)
	step("a malformed list", failed(), []string{"v2", "v1"}, 1)
	step("a 404", release.Answer{Outcome: release.NotFound, Remaining: -1}, []string{"v2", "v1"}, 2)
	step("a newer list", historyAnswer(`"h2"`, datedAt("v3", 0), datedAt("v2", 1)), []string{"v3", "v2"}, 0)
}

// TestHistoryRepaired: a flushed Redis gets the history back from memory at
// the next tick, without a request to GitHub.
func TestHistoryRepaired(t *testing.T) {
	src, clock, fleet := newHistorySource(), newClock(), newFleet()
	p, err := poller.New(poller.Config{Apps: release.Entries(apps("a", "b")), Timing: timing, Source: src, Fleet: fleet,
		Coordinate: true, Logger: zap.NewNop(), Clock: clock, Rand: func() float64 { return 0.5 }})
	if err != nil {
		t.Fatal(err)
	}
	p.SetDecided([]string{"a"})
	ctx := context.Background()
	p.Tick(ctx)
	src.take()
	want := fleet.entry("a:history")
	if !want.Fetched() {
		t.Fatal("history not shared")
	}
	for _, key := range []string{"a", "a:history", "b"} {
		fleet.set(key, release.Entry{})
	}
	fleet.takeCalls()
	setClock(t, clock, clock.Now().Add(timing.Tick))
	p.Tick(ctx)
	if got := src.take(); len(got) != 0 {
		t.Errorf("asked GitHub %v, want nothing (all fresh)", got)
	}
	if got := fleet.entry("a:history"); !got.FetchedAt.Equal(want.FetchedAt) || !reflect.DeepEqual(got.History.Tags(), want.History.Tags()) {
		t.Errorf("after the flush: %+v, want %+v written back", got, want)
	}
	if calls := fleet.takeCalls(); slices.Contains(calls, "PutFetch b:history") {
		t.Errorf("b's history written: %v", calls)
	}
}

// TestHistoryRefresh: a webhook's refresh request for a decided app asks
// for its history too, at once; one for an app without decisions does not.
func TestHistoryRefresh(t *testing.T) {
	src, clock := newHistorySource(), newClock()
	p, err := poller.New(poller.Config{Apps: release.Entries(apps("a", "b")), Timing: timing, Source: src,
		Logger: zap.NewNop(), Clock: clock, Rand: func() float64 { return 0.5 }})
	if err != nil {
		t.Fatal(err)
	}
	p.SetDecided([]string{"a"})
	ctx := context.Background()
	p.Tick(ctx)
	src.take()
	setClock(t, clock, clock.Now().Add(time.Minute))
	for _, key := range []string{"a", "b"} {
		p.Refresh(key, release.Refresh{At: clock.Now()})
	}
	p.RefreshRound(ctx)
	if got, want := src.take(), []string{`a("e")`, `a:history("h1")`, `b("e")`}; !reflect.DeepEqual(got, want) {
		t.Errorf("refresh round asked %v, want %v", got, want)
	}
}

// TestHistoryAskedByARefresh: a refresh request that names the history
// entry of an app this poller knows no decision of yet (an operator's verb
// files one as it decides) asks for the list once; the ticks after it do
// not, until the decision is known.
func TestHistoryAskedByARefresh(t *testing.T) {
	src, clock := newHistorySource(), newClock()
	p, err := poller.New(poller.Config{Apps: release.Entries(apps("a")), Timing: timing, Source: src,
		Logger: zap.NewNop(), Clock: clock, Rand: func() float64 { return 0.5 }})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	p.Tick(ctx)
	src.take()
	setClock(t, clock, clock.Now().Add(time.Minute))
	p.Refresh("a:history", release.Refresh{At: clock.Now()})
	p.RefreshRound(ctx)
	if got, want := src.take(), []string{"a:history"}; !reflect.DeepEqual(got, want) {
		t.Errorf("refresh round asked %v, want %v", got, want)
	}
	for end := clock.Now().Add(timing.Interval); clock.Now().Before(end); {
		setClock(t, clock, clock.Now().Add(timing.Tick))
		p.Tick(ctx)
	}
	for _, call := range src.take() {
		if strings.Contains(call, "history") {
			t.Errorf("without a decision, a tick asked %q", call)
		}
	}
}

// TestHistoryCompanions: after a history's 200, the companions of the
// releases it keeps them of are fetched as a release's are, kept with the
// history and shared; a later 304 asks for none again.
func TestHistoryCompanions(t *testing.T) {
	key := testkit.NewMinisignKey(t)
	c := newClock()
	src := &companionSource{fakeSource: &fakeSource{clock: c, script: map[string]release.Answer{}}, answers: map[int64][]companionAnswer{}}
	fleet, sink := newFleet(), &fakeSink{}
	p, err := poller.New(poller.Config{
		Apps: release.Entries(apps("artcraft"))[1:], Timing: timing, Source: src, Fleet: fleet, Coordinate: true,
		Sink: sink, Logger: zap.NewNop(), Clock: c, Rand: func() float64 { return 0.5 }, Companions: tauri.Companions,
	})
	if err != nil {
		t.Fatal(err)
	}
	p.SetDecided([]string{"artcraft"})
	// v2 and v1, each with an AppImage and its .sig (ids 2 and 1).
	a := historyAnswer(`"h1"`, datedAt("v2", 1), datedAt("v1", 2))
	a.HistoryAssets = map[string]map[string]release.AssetRef{}
	sigs := map[string]string{}
	for i, r := range a.History.Releases {
		name := "ArtCraft_" + r.Tag + "_amd64.AppImage"
		r.Assets = append(r.Assets, release.Asset{Name: name}, release.Asset{Name: name + ".sig"})
		a.HistoryAssets[r.Tag] = map[string]release.AssetRef{name: {ID: int64(100 + i)}, name + ".sig": {ID: int64(2 - i)}}
		sigs[r.Tag] = key.Sign(name, []byte(r.Tag))
		src.answer(int64(2-i), bytesOf(sigs[r.Tag]))
	}
	src.fakeSource.script["artcraft:history"] = a
	ctx := context.Background()
	p.Tick(ctx)
	if got := src.take(); !reflect.DeepEqual(got, []string{"2", "1"}) {
		t.Errorf("companions asked: got %v, want v2's then v1's", got)
	}
	for _, e := range []release.Entry{sink.entry("artcraft:history"), fleet.entry("artcraft:history")} {
		for _, r := range a.History.Releases {
			name := "ArtCraft_" + r.Tag + "_amd64.AppImage.sig"
			if got, _ := e.History.CompanionsOf(r.Tag).Get(name); got != sigs[r.Tag] {
				t.Errorf("%s: kept %q, want its signature", name, got)
			}
		}
	}
	setClock(t, c, c.Now().Add(timing.Interval))
	src.fakeSource.script["artcraft:history"] = notModified()
	p.Tick(ctx)
	if got := src.take(); len(got) != 0 {
		t.Errorf("after a 304, companions asked: %v, want none", got)
	}
	if got := sink.entry("artcraft:history").History.CompanionsOf("v1").Len(); got != 1 {
		t.Errorf("after a 304: %d companions of v1, want 1 kept", got)
	}
}
