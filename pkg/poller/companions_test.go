package poller_test

import (
	"maps"
	"testing"
	"time"

	"github.com/storytold/craft-releases/pkg/minisign"
	"github.com/storytold/craft-releases/pkg/poller"
	"github.com/storytold/craft-releases/pkg/release"
	"github.com/storytold/craft-releases/pkg/updates/tauri"
	"github.com/storytold/craft-releases/test/testkit"
)

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

// companionHarness is a poller over keys that fetches tauri's companions,
// sharing them with fleet when set.
func companionHarness(t *testing.T, keys []string, fleet *fakeFleet, opts ...func(*poller.Config)) *harness {
	opts = append(opts, func(c *poller.Config) { c.Companions = tauri.Companions })
	return newHarness(t, keys, fleet, fleet != nil, opts...)
}

// TestCompanions checks, on the fake clock, that a release's signatures are
// fetched once, after its 200 and never on a 304; that one that fails is
// asked again after its retry wait without asking GitHub about the release,
// and kept then; that a signature by another key than the app's is refused
// and not kept; and that what is kept is shared with the fleet and the sink.
func TestCompanions(t *testing.T) {
	key, other := testkit.NewMinisignKey(t), testkit.NewMinisignKey(t)
	pub, err := minisign.ParsePublicKey(key.PublicKey())
	if err != nil {
		t.Fatal(err)
	}
	fleet := newFleet()
	h := companionHarness(t, []string{"artcraft"}, fleet, func(c *poller.Config) {
		c.PublicKeys = map[string]minisign.PublicKey{"artcraft": pub}
	})
	sigA := key.Sign("ArtCraft_v1_amd64.AppImage", []byte("appimage"))
	sigB := key.Sign("ArtCraft_v1_x64-setup.exe", []byte("nsis"))
	sigA2 := key.Sign("ArtCraft_v2_amd64.AppImage", []byte("appimage 2"))
	const nameA, nameB, nameA2 = "ArtCraft_v1_amd64.AppImage.sig", "ArtCraft_v1_x64-setup.exe.sig", "ArtCraft_v2_amd64.AppImage.sig"
	steps := []struct {
		name     string
		after    time.Duration // since the clock's time after the last step
		release  answers       // GitHub's answers about the release
		sigs     map[int64][]companionAnswer
		asked    int      // releases asked
		sigAsked []string // companions asked
		kept     map[string]string
		outcomes []string
	}{
		{"the 200: the release is shared before its companions are asked for, B fails", 0, answers{"artcraft": tauriRelease("v1")},
			map[int64][]companionAnswer{1: {bytesOf(sigA)}, 2: {companionFailure}}, 1, []string{"1", "2"},
			map[string]string{nameA: sigA}, []string{poller.CompanionStored, poller.CompanionFailed}},
		{"a tick before B's retry wait asks nothing", timing.Tick, nil,
			map[int64][]companionAnswer{2: {bytesOf(sigB)}}, 0, nil, map[string]string{nameA: sigA}, nil},
		{"after it, only B, and not the fresh release", timing.RetryWait(1) - timing.Tick, nil,
			nil, 0, []string{"2"}, map[string]string{nameA: sigA, nameB: sigB}, []string{poller.CompanionStored}},
		{"a 304 keeps them and asks for nothing more", timing.Interval, answers{"artcraft": notModified()},
			nil, 1, nil, map[string]string{nameA: sigA, nameB: sigB}, nil},
		{"a new release whose B is signed by another key: A kept, B refused", timing.Interval, answers{"artcraft": tauriRelease("v2")},
			map[int64][]companionAnswer{
				1: {bytesOf(sigA2)}, 2: {bytesOf(other.Sign("ArtCraft_v2_x64-setup.exe", []byte("nsis 2"))), bytesOf("not a signature")},
			}, 1, []string{"1", "2"}, map[string]string{nameA2: sigA2}, []string{poller.CompanionStored, poller.CompanionRefused}},
		{"a refused one is not asked again at the next tick", timing.Tick, nil,
			nil, 0, nil, map[string]string{nameA2: sigA2}, nil},
		{"but at the next 200 (refused again: not a signature)", timing.Interval, answers{"artcraft": tauriRelease("v2")},
			nil, 1, []string{"2"}, map[string]string{nameA2: sigA2}, []string{poller.CompanionRefused}},
	}
	for _, st := range steps {
		for id, a := range st.sigs {
			h.source.answer(id, a...)
		}
		h.tick(t, h.clock.Now().Sub(t0)+st.after, st.release)
		if got := h.source.takeAsked(); len(got) != st.asked {
			t.Errorf("%s: releases asked %q, want %d", st.name, got, st.asked)
		}
		wantList(t, st.name+": companions asked", h.source.sigAsked.take(), st.sigAsked)
		if got := fleet.entry("artcraft").Companions.Map(); !maps.Equal(got, st.kept) {
			t.Errorf("%s: shared signatures %v, want %v", st.name, got, st.kept)
		}
		if got := h.sink.entry("artcraft").Companions.Map(); !maps.Equal(got, st.kept) {
			t.Errorf("%s: sink's signatures %v, want %v", st.name, got, st.kept)
		}
		wantList(t, st.name+": outcomes", h.obs.take("companion"), st.outcomes)
	}
	wantEq(t, "refusals logged", h.logged("companion refused"), 2)
}

// TestCompanionsChanges checks that Config.Changes hears of the signatures
// a poller keeps for the release served, after the release itself, since
// the feed then offers their bundles: with a fleet only when this poller's
// write added them, not when another poller's write of the same signature
// came first; standalone whenever it keeps one.
func TestCompanionsChanges(t *testing.T) {
	key := testkit.NewMinisignKey(t)
	sigA := key.Sign("ArtCraft_v1_amd64.AppImage", []byte("appimage"))
	sigB := key.Sign("ArtCraft_v1_x64-setup.exe", []byte("nsis"))
	steps := []struct {
		name              string
		answers           map[int64]companionAnswer // companion answers, by asset id
		beforeB           bool                      // another poller shares B first, as this one fetches it
		fleet, standalone []string                  // the changes heard with a fleet, and standalone
	}{
		{"the 200: A kept, B fails", map[int64]companionAnswer{1: bytesOf(sigA), 2: companionFailure}, false,
			[]string{"artcraft none→v1", "artcraft v1→v1"}, []string{"artcraft none→v1", "artcraft v1→v1"}},
		{"B fails again", map[int64]companionAnswer{2: companionFailure}, false, nil, nil},
		{"B kept", map[int64]companionAnswer{2: bytesOf(sigB)}, true, nil, []string{"artcraft v1→v1"}},
	}
	for _, withFleet := range []bool{true, false} {
		t.Run(map[bool]string{true: "fleet", false: "standalone"}[withFleet], func(t *testing.T) {
			fleet := newFleet()
			h := companionHarness(t, []string{"artcraft"}, map[bool]*fakeFleet{true: fleet}[withFleet])
			d := time.Duration(0) // each step once B's retry wait after its failures has passed
			for i, step := range steps {
				for id, a := range step.answers {
					h.source.answer(id, a)
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
					d += timing.RetryWait(i) + timing.Tick // a tick after the wait, as the loop would
				}
				h.tick(t, d, answers{"artcraft": tauriRelease("v1")})
				want := step.standalone
				if withFleet {
					want = step.fleet
				}
				wantList(t, step.name+": changes", h.changes, want)
				h.changes = nil
			}
			if want := map[string]string{"ArtCraft_v1_amd64.AppImage.sig": sigA, "ArtCraft_v1_x64-setup.exe.sig": sigB}; withFleet && !maps.Equal(fleet.entry("artcraft").Companions.Map(), want) {
				t.Errorf("shared signatures: got %v, want %v", fleet.entry("artcraft").Companions.Map(), want)
			}
		})
	}
}

// TestCompanionsAfterRestart checks that a poller that holds a release
// without the ids of its missing companions (it started after the 200)
// asks for the release unconditionally when it is due, and then fetches
// them; once they are kept, it revalidates as usual. A rate limit on a
// companion ends the round, as one on a release does.
func TestCompanionsAfterRestart(t *testing.T) {
	fleet := newFleet()
	v1 := tauriRelease("v1")
	fleet.set("artcraft", release.Entry{FetchedAt: at(-time.Hour), ETag: v1.ETag, Release: v1.Release})
	h := companionHarness(t, []string{"artcraft", "b"}, fleet)
	key := testkit.NewMinisignKey(t)
	h.source.answer(1, bytesOf(key.Sign("a", nil)), companionAnswer{a: rateLimited(at(time.Hour))})
	h.source.answer(2, bytesOf(key.Sign("b", nil)))
	steps := []struct {
		name        string
		at          time.Duration
		answers     answers
		asked, sigs []string
	}{
		{"after the restart: without an etag", 0, answers{"artcraft": v1, "b": fetched("v1", `"b"`)}, []string{"artcraft", "b"}, []string{"1", "2"}},
		{"once kept", timing.Interval, answers{"artcraft": notModified(), "b": notModified()}, []string{`artcraft("v1")`, `b("b")`}, nil},
		{"a companion rate-limited stops the round", 2 * timing.Interval, answers{"artcraft": tauriRelease("v2")}, []string{`artcraft("v1")`}, []string{"1"}},
	}
	for _, st := range steps {
		h.logs.TakeAll()
		h.tick(t, st.at, st.answers)
		wantList(t, st.name+": releases asked", h.source.takeAsked(), st.asked)
		wantList(t, st.name+": companions asked", h.source.sigAsked.take(), st.sigs)
	}
	// The companion's rate limit is the round's, as a release's is: the
	// round says so and the fleet backs off.
	if rounds, _, _ := h.tickLogs(t); len(rounds) != 1 || rounds[0][4] != true {
		t.Errorf("the rate-limited round logged %v, want rate_limited", rounds)
	}
	if until := fleet.backoff.Until; !until.After(at(2 * timing.Interval)) {
		t.Errorf("fleet backoff until %v, want one after the rate-limited round", until)
	}
}

// TestCompanionsFailingForHours: at the default timing, companions that
// fail at every request are asked again after the per-app retry's doubling
// wait, at most once an interval each once it is reached, not at every tick.
func TestCompanionsFailingForHours(t *testing.T) {
	h := companionHarness(t, []string{"artcraft"}, nil)
	h.tick(t, 0, answers{"artcraft": tauriRelease("v1")})
	const hours = 4
	h.ticks(t, timing.Tick, hours*time.Hour, func(time.Duration) release.Answer { return notModified() }, nil)
	// Each of the two: the waits double from a minute to the interval (31
	// minutes in all), then one request an interval.
	asked := len(h.source.sigAsked.take())
	if want := 2 * (5 + (hours*60-31)/30 + 1); asked > want || asked < 2*hours {
		t.Errorf("%d companion requests in %d h, want at most %d (and at least %d)", asked, hours, want, 2*hours)
	}
}
