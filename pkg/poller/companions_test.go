package poller_test

import (
	"context"
	"errors"
	"maps"
	"reflect"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/storytold/craft-releases/pkg/minisign"
	"github.com/storytold/craft-releases/pkg/poller"
	"github.com/storytold/craft-releases/pkg/release"
	"github.com/storytold/craft-releases/pkg/updates/tauri"
	"github.com/storytold/craft-releases/test/testkit"
)

// companionSource is a Source whose companions answer from a script by
// asset id (each request takes the next answer; an unscripted one fails).
type companionSource struct {
	*fakeSource
	mu      sync.Mutex
	answers map[int64][]companionAnswer
	asked   []string
}

type companionAnswer struct {
	body []byte
	a    release.Answer
}

func (s *companionSource) Companion(_ context.Context, _ release.App, ref release.AssetRef, limit int64) ([]byte, release.Answer) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.asked = append(s.asked, strconv.FormatInt(ref.ID, 10))
	q := s.answers[ref.ID]
	if len(q) == 0 || limit != minisign.MaxSignatureText {
		return nil, release.Answer{Outcome: release.Failed, Err: errors.New("unscripted companion"), Remaining: -1}
	}
	s.answers[ref.ID] = q[1:]
	return q[0].body, q[0].a
}

func (s *companionSource) answer(id int64, answers ...companionAnswer) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.answers[id] = append(s.answers[id], answers...)
}

func (s *companionSource) take() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := s.asked
	s.asked = nil
	return out
}

func bytesOf(text string) companionAnswer {
	return companionAnswer{body: []byte(text), a: release.Answer{Outcome: release.Fetched, Remaining: 4000}}
}

var companionFailure = companionAnswer{a: release.Answer{Outcome: release.Failed, Err: errors.New("HTTP 502"), Remaining: -1}}

// sigFleet is a fakeFleet that also keeps the signatures of the fetches
// written to it, as the store does: a write of the same fetch adds its
// signatures to those shared, and PublishFetch reports a write that changed
// them as a change.
type sigFleet struct {
	*fakeFleet
	mu      sync.Mutex
	fetches map[string]release.Entry // by app: the last fetch written, with the signatures shared
}

func newSigFleet() *sigFleet {
	return &sigFleet{fakeFleet: newFleet(), fetches: map[string]release.Entry{}}
}

func (f *sigFleet) PutFetch(ctx context.Context, app string, n release.Entry) (bool, error) {
	written, _, err := f.PublishFetch(ctx, app, n)
	return written, err
}

func (f *sigFleet) PublishFetch(ctx context.Context, app string, n release.Entry) (written, changed bool, err error) {
	written, changed, err = f.fakeFleet.PublishFetch(ctx, app, n)
	if !written {
		return written, changed, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	cur := f.fetches[app]
	if release.SameFetch(cur, n) {
		n.Companions = cur.Companions.Union(n.Companions)
	}
	f.fetches[app] = n
	return true, changed || !maps.Equal(cur.Companions.Map(), n.Companions.Map()), nil
}

// shareSignature adds the signature text of name to those of the fetch
// shared for app, as another poller's write of the same fetch does.
func (f *sigFleet) shareSignature(app, name, text string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	e := f.fetches[app]
	e.Companions = e.Companions.Union(release.NewCompanions(map[string]string{name: text}))
	f.fetches[app] = e
}

func (f *sigFleet) signatures(app string) map[string]string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.fetches[app].Companions.Map()
}

// companionObserver records the companion requests by outcome.
type companionObserver struct {
	fakeObserver
	outcomes []string
}

func (o *companionObserver) Companion(_, outcome string, _ release.Answer) {
	o.outcomes = append(o.outcomes, outcome)
}

// tauriRelease is a release of ArtCraft tagged tag with two signed bundles,
// and the refs of its assets: ids 1 and 2 for the bundles' .sig files.
func tauriRelease(tag string) release.Answer {
	names := []string{"ArtCraft_" + tag + "_amd64.AppImage", "ArtCraft_" + tag + "_x64-setup.exe"}
	a := fetched(tag, `"`+tag+`"`)
	a.Assets = map[string]release.AssetRef{}
	for i, n := range names {
		a.Release.Assets = append(a.Release.Assets, release.Asset{Name: n}, release.Asset{Name: n + ".sig"})
		a.Assets[n] = release.AssetRef{ID: int64(100 + i)}
		a.Assets[n+".sig"] = release.AssetRef{ID: int64(1 + i)}
	}
	return a
}

// TestCompanions checks, on the fake clock, that a release's signatures are
// fetched once, after its 200 and never on a 304; that one that fails is
// asked again at the next tick without asking GitHub about the release, and
// kept then; that a signature by another key than the app's is refused and
// not kept; and that what is kept is shared with the fleet and the sink.
func TestCompanions(t *testing.T) {
	key, other := testkit.NewMinisignKey(t), testkit.NewMinisignKey(t)
	pub, err := minisign.ParsePublicKey(key.PublicKey())
	if err != nil {
		t.Fatal(err)
	}
	c := newClock()
	src := &companionSource{fakeSource: &fakeSource{clock: c, script: map[string]release.Answer{}}, answers: map[int64][]companionAnswer{}}
	fleet := newSigFleet()
	sink := &fakeSink{}
	obs := &companionObserver{}
	core, logs := observer.New(zapcore.DebugLevel)
	p, err := poller.New(poller.Config{
		Apps: apps("artcraft"), Timing: timing, Source: src, Fleet: fleet, Coordinate: true,
		Sink: sink, Observer: obs, Logger: zap.New(core), Clock: c, Rand: func() float64 { return 0.5 },
		Companions: tauri.Companions,
		PublicKeys: map[string]minisign.PublicKey{"artcraft": pub},
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	sigA := key.Sign("ArtCraft_v1_amd64.AppImage", []byte("appimage"))
	sigB := key.Sign("ArtCraft_v1_x64-setup.exe", []byte("nsis"))
	const nameA, nameB = "ArtCraft_v1_amd64.AppImage.sig", "ArtCraft_v1_x64-setup.exe.sig"

	check := func(step string, wantAsked []string, wantSigs map[string]string, wantOutcomes ...string) {
		t.Helper()
		if got := src.take(); !reflect.DeepEqual(got, wantAsked) {
			t.Errorf("%s: companions asked: got %v, want %v", step, got, wantAsked)
		}
		if got := fleet.signatures("artcraft"); !reflect.DeepEqual(got, wantSigs) {
			t.Errorf("%s: shared signatures: got %v, want %v", step, got, wantSigs)
		}
		if got := sink.entry("artcraft").Companions.Map(); !reflect.DeepEqual(got, wantSigs) {
			t.Errorf("%s: sink's signatures: got %v, want %v", step, got, wantSigs)
		}
		if !reflect.DeepEqual(obs.outcomes, wantOutcomes) && len(obs.outcomes)+len(wantOutcomes) > 0 {
			t.Errorf("%s: outcomes: got %v, want %v", step, obs.outcomes, wantOutcomes)
		}
		obs.outcomes = nil
	}

	// The 200: the release is shared before its companions are asked for;
	// B fails.
	src.fakeSource.script["artcraft"] = tauriRelease("v1")
	src.answer(1, bytesOf(sigA))
	src.answer(2, companionFailure)
	p.Tick(ctx)
	if asked, _ := src.fakeSource.take(); len(asked) != 1 {
		t.Errorf("tick 1: releases asked: got %v, want one", asked)
	}
	check("tick 1", []string{"1", "2"}, map[string]string{nameA: sigA}, poller.CompanionStored, poller.CompanionFailed)

	// The next tick comes before B's retry wait (Timing.RetryWait, as an
	// app's own): nothing is asked. After it, only B is asked again; the
	// release is fresh.
	src.answer(2, bytesOf(sigB))
	setClock(t, c, c.Now().Add(timing.Tick))
	p.Tick(ctx)
	check("tick 2, B waits", nil, map[string]string{nameA: sigA})
	setClock(t, c, c.Now().Add(timing.RetryWait(1)-timing.Tick))
	p.Tick(ctx)
	if asked, _ := src.fakeSource.take(); len(asked) != 0 {
		t.Errorf("tick 3: releases asked: got %v, want none", asked)
	}
	check("tick 3", []string{"2"}, map[string]string{nameA: sigA, nameB: sigB}, poller.CompanionStored)

	// Due again: a 304 keeps them and asks for nothing more.
	src.fakeSource.script["artcraft"] = notModified()
	setClock(t, c, c.Now().Add(timing.Interval))
	p.Tick(ctx)
	check("304", nil, map[string]string{nameA: sigA, nameB: sigB})

	// A new release whose B is signed by another key: A kept, B refused,
	// and not asked again before the next 200, which asks again (refused
	// again: not a signature).
	src.fakeSource.script["artcraft"] = tauriRelease("v2")
	sigA2 := key.Sign("ArtCraft_v2_amd64.AppImage", []byte("appimage 2"))
	src.answer(1, bytesOf(sigA2))
	src.answer(2, bytesOf(other.Sign("ArtCraft_v2_x64-setup.exe", []byte("nsis 2"))), bytesOf("not a signature"))
	setClock(t, c, c.Now().Add(timing.Interval))
	p.Tick(ctx)
	const nameA2 = "ArtCraft_v2_amd64.AppImage.sig"
	check("v2", []string{"1", "2"}, map[string]string{nameA2: sigA2}, poller.CompanionStored, poller.CompanionRefused)
	setClock(t, c, c.Now().Add(timing.Tick))
	p.Tick(ctx)
	check("v2, next tick", nil, map[string]string{nameA2: sigA2})
	src.fakeSource.script["artcraft"] = tauriRelease("v2")
	setClock(t, c, c.Now().Add(timing.Interval))
	p.Tick(ctx)
	check("v2, next 200", []string{"2"}, map[string]string{nameA2: sigA2}, poller.CompanionRefused)
	if n := logs.FilterMessage("companion refused").Len(); n != 2 {
		t.Errorf("refusals logged: got %d, want 2", n)
	}
}

// TestCompanionsChanges checks, on the fake clock, that Config.Changes
// hears of the signatures a poller keeps for the release served, after the
// release itself, since the feed then offers their bundles: with a fleet
// only when this poller's write added them, not when another poller's
// write of the same signature came first; standalone whenever it keeps one.
func TestCompanionsChanges(t *testing.T) {
	key := testkit.NewMinisignKey(t)
	sigA := key.Sign("ArtCraft_v1_amd64.AppImage", []byte("appimage"))
	sigB := key.Sign("ArtCraft_v1_x64-setup.exe", []byte("nsis"))
	steps := []struct {
		name       string
		answers    map[int64]companionAnswer // companion answers, by asset id
		beforeB    bool                      // another poller shares B first, as this one fetches it
		fleet      []string                  // the changes heard with a fleet
		standalone []string                  // and standalone
	}{
		{"the 200: A kept, B fails", map[int64]companionAnswer{1: bytesOf(sigA), 2: companionFailure}, false,
			[]string{"artcraft none→v1", "artcraft v1→v1"}, []string{"artcraft none→v1", "artcraft v1→v1"}},
		{"B fails again", map[int64]companionAnswer{2: companionFailure}, false, nil, nil},
		{"B kept", map[int64]companionAnswer{2: bytesOf(sigB)}, true, nil, []string{"artcraft v1→v1"}},
	}
	for _, withFleet := range []bool{true, false} {
		t.Run(map[bool]string{true: "fleet", false: "standalone"}[withFleet], func(t *testing.T) {
			c := newClock()
			src := &companionSource{fakeSource: &fakeSource{clock: c, script: map[string]release.Answer{}}, answers: map[int64][]companionAnswer{}}
			var changes []string
			cfg := poller.Config{
				Apps: apps("artcraft"), Timing: timing, Source: src, Clock: c, Rand: func() float64 { return 0.5 },
				Companions: tauri.Companions,
				Changes: func(app string, old, new *release.Release) {
					changes = append(changes, app+" "+tagOf(old)+"→"+tagOf(new))
				},
			}
			fleet := newSigFleet()
			if withFleet {
				cfg.Fleet, cfg.Coordinate = fleet, true
			}
			p, err := poller.New(cfg)
			if err != nil {
				t.Fatal(err)
			}
			src.fakeSource.script["artcraft"] = tauriRelease("v1")
			at := t0 // each step once B's retry wait after its failures has passed
			for i, step := range steps {
				for id, a := range step.answers {
					src.answer(id, a)
				}
				fleet.during = nil
				if step.beforeB {
					fleet.during = func(_ *fakeFleet, op, _ string) {
						if op == "PutFetch" {
							fleet.shareSignature("artcraft", "ArtCraft_v1_x64-setup.exe.sig", sigB)
						}
					}
				}
				if i > 0 {
					at = at.Add(timing.RetryWait(i) + timing.Tick) // a tick after the wait, as the loop would
				}
				setClock(t, c, at)
				p.Tick(context.Background())
				want := step.standalone
				if withFleet {
					want = step.fleet
				}
				if !slices.Equal(changes, want) {
					t.Errorf("%s: changes %q, want %q", step.name, changes, want)
				}
				changes = nil
			}
			if withFleet {
				want := map[string]string{"ArtCraft_v1_amd64.AppImage.sig": sigA, "ArtCraft_v1_x64-setup.exe.sig": sigB}
				if got := fleet.signatures("artcraft"); !reflect.DeepEqual(got, want) {
					t.Errorf("shared signatures: got %v, want %v", got, want)
				}
			}
		})
	}
}

// TestCompanionsRateLimited checks that a rate limit on a companion ends the
// round and backs the fleet off, as one on a release does.
func TestCompanionsRateLimited(t *testing.T) {
	c := newClock()
	src := &companionSource{fakeSource: &fakeSource{clock: c, script: map[string]release.Answer{}}, answers: map[int64][]companionAnswer{}}
	p, err := poller.New(poller.Config{
		Apps: apps("artcraft", "b"), Timing: timing, Source: src, Clock: c, Rand: func() float64 { return 0.5 },
		Companions: tauri.Companions,
	})
	if err != nil {
		t.Fatal(err)
	}
	src.fakeSource.script["artcraft"] = tauriRelease("v1")
	src.fakeSource.script["b"] = fetched("v1", `"b"`)
	src.answer(1, companionAnswer{a: rateLimited(t0.Add(time.Hour))})
	p.Tick(context.Background())
	if got := src.take(); !reflect.DeepEqual(got, []string{"1"}) {
		t.Errorf("companions asked: got %v, want [1]", got)
	}
	if asked, _ := src.fakeSource.take(); !reflect.DeepEqual(asked, []string{"artcraft"}) {
		t.Errorf("releases asked: got %v, want [artcraft] (the round stopped)", asked)
	}
}

// TestCompanionsNeedASource checks that New refuses companions from a
// Source that cannot fetch them.
func TestCompanionsNeedASource(t *testing.T) {
	_, err := poller.New(poller.Config{Apps: apps("a"), Timing: timing, Source: &fakeSource{clock: newClock()},
		Companions: tauri.Companions})
	if err == nil {
		t.Error("New: got no error, want one")
	}
}

// TestCompanionsAfterRestart checks that a poller that holds a release
// without the ids of its missing companions (it started after the 200)
// asks for the release unconditionally when it is due, and then fetches
// them; once they are kept, it revalidates as usual.
func TestCompanionsAfterRestart(t *testing.T) {
	c := newClock()
	src := &companionSource{fakeSource: &fakeSource{clock: c, script: map[string]release.Answer{}}, answers: map[int64][]companionAnswer{}}
	fleet := newFleet()
	v1 := tauriRelease("v1")
	fleet.set("artcraft", release.Entry{FetchedAt: t0.Add(-time.Hour), ETag: v1.ETag, Release: v1.Release})
	p, err := poller.New(poller.Config{
		Apps: apps("artcraft"), Timing: timing, Source: src, Fleet: fleet, Coordinate: true,
		Clock: c, Rand: func() float64 { return 0.5 }, Companions: tauri.Companions,
	})
	if err != nil {
		t.Fatal(err)
	}
	key := testkit.NewMinisignKey(t)
	src.fakeSource.script["artcraft"] = v1
	src.answer(1, bytesOf(key.Sign("a", nil)))
	src.answer(2, bytesOf(key.Sign("b", nil)))
	p.Tick(context.Background())
	if asked, _ := src.fakeSource.take(); !reflect.DeepEqual(asked, []string{"artcraft"}) {
		t.Errorf("releases asked: got %v, want [artcraft] without an etag", asked)
	}
	if got := src.take(); !reflect.DeepEqual(got, []string{"1", "2"}) {
		t.Errorf("companions asked: got %v, want [1 2]", got)
	}
	src.fakeSource.script["artcraft"] = notModified()
	setClock(t, c, c.Now().Add(timing.Interval))
	p.Tick(context.Background())
	if asked, _ := src.fakeSource.take(); !reflect.DeepEqual(asked, []string{`artcraft("v1")`}) {
		t.Errorf("releases asked once kept: got %v, want [artcraft(\"v1\")]", asked)
	}
}

// TestCompanionsFailingForHours: at the default timing, companions that
// fail at every request are asked again after the per-app retry's doubling
// wait, at most once an interval each once it is reached, not at every tick.
func TestCompanionsFailingForHours(t *testing.T) {
	c := newClock()
	src := &companionSource{fakeSource: &fakeSource{clock: c, script: map[string]release.Answer{}}, answers: map[int64][]companionAnswer{}}
	p, err := poller.New(poller.Config{
		Apps: apps("artcraft"), Timing: timing, Source: src, Clock: c, Rand: func() float64 { return 0.5 },
		Companions: tauri.Companions,
	})
	if err != nil {
		t.Fatal(err)
	}
	src.fakeSource.script["artcraft"] = tauriRelease("v1")
	p.Tick(context.Background())
	src.fakeSource.script["artcraft"] = notModified()
	const hours = 4
	for at := t0; at.Before(t0.Add(hours * time.Hour)); at = at.Add(timing.Tick) {
		if at.After(c.Now()) {
			setClock(t, c, at)
		}
		p.Tick(context.Background())
	}
	// Each of the two: the waits double from a minute to the interval (31
	// minutes in all), then one request an interval.
	asked := len(src.take())
	if want := 2 * (5 + (hours*60-31)/30 + 1); asked > want || asked < 2*hours {
		t.Errorf("%d companion requests in %d h, want at most %d (and at least %d)", asked, hours, want, 2*hours)
	}
}
