package snapshot_test

import (
	"strings"
	"testing"
	"time"

	"github.com/storytold/craft-releases/pkg/release"
	"github.com/storytold/craft-releases/pkg/snapshot"
	"github.com/storytold/craft-releases/test/fakeclock"
)

// squirrelRelease returns a release of photocraft with a full package, the
// RELEASES that names it and an x64 macOS zip.
func squirrelRelease(version string, hours int) *release.Release {
	return built(photocraft, version, hours, "photocraft-"+version+"-full.nupkg", "RELEASES", "PhotoCraft-"+version+"-mac.zip")
}

// releasesOf is the RELEASES text of squirrelRelease(version).
func releasesOf(version string) *release.Companions {
	return release.NewCompanions(map[string]string{"RELEASES": strings.Repeat("a", 40) + " photocraft-" + version + "-full.nupkg 5\n"})
}

// TestUpdates: the companion files follow the release and its companions,
// with absolute URLs; a new release's file not fetched yet keeps the older
// release's, uncached; the same bytes read again keep their answer.
func TestUpdates(t *testing.T) {
	t.Parallel()
	s := snapshot.New([]release.App{photocraft}, fakeclock.New(t0.Add(24*time.Hour)))
	updates := func() *snapshot.Updates { return s.Current().Apps[photocraft.Key].Updates }
	v1, v2 := squirrelRelease("1.0.0", 0), squirrelRelease("2.0.0", 1)
	served := func(version string) string {
		return strings.Repeat("a", 40) + " " + release.DownloadURL(photocraft.Repo, "v"+version, "photocraft-"+version+"-full.nupkg") + " 5\n"
	}
	for _, st := range []struct {
		name        string
		entry       release.Entry
		body, cache string // "" body: the 404 err
		err         string
	}{
		{"released, RELEASES not fetched yet", release.Entry{FetchedAt: t0, Release: v1}, "", "",
			"photocraft v1.0.0: RELEASES was not fetched yet, or was refused"},
		{"fetched", release.Entry{FetchedAt: t0, Release: v1, Companions: releasesOf("1.0.0")}, served("1.0.0"), snapshot.CacheControlFetched, ""},
		{"a new release: the old file until the new one is here", release.Entry{FetchedAt: t0.Add(time.Hour), Release: v2},
			served("1.0.0"), snapshot.CacheControlUnfetched, ""},
		{"its RELEASES", release.Entry{FetchedAt: t0.Add(time.Hour), Release: v2, Companions: releasesOf("2.0.0")}, served("2.0.0"), snapshot.CacheControlFetched, ""},
	} {
		s.Set(photocraft.Key, st.entry)
		f := updates().Releases("")
		switch {
		case st.err != "" && f.Err != st.err:
			t.Errorf("%s: err %q, want %q", st.name, f.Err, st.err)
		case st.err == "" && (f.Err != "" || string(f.Body()) != st.body || f.CacheControl != st.cache):
			t.Errorf("%s: %q %q, Cache-Control %q; want %q, %q", st.name, f.Err, f.Body(), f.CacheControl, st.body, st.cache)
		}
	}
	before, mac := updates().Releases(""), updates().Mac("x64")
	again := *v2
	s.Set(photocraft.Key, release.Entry{FetchedAt: t0.Add(2 * time.Hour), Release: &again, Companions: releasesOf("2.0.0")})
	if updates().Releases("") != before || updates().Mac("x64") != mac {
		t.Error("the same answers were rendered again")
	}
	if o := updates().Mac("x64"); o.Err != "" || !strings.Contains(string(o.Body()), release.DownloadURL(photocraft.Repo, "v2.0.0", "PhotoCraft-2.0.0-mac.zip")) {
		t.Errorf("Squirrel.Mac x64: %q %s, want the zip", o.Err, o.Body())
	}
	if got, want := updates().Mac("arm64").Err, "photocraft v2.0.0 has no macOS zip for arm64"; got != want {
		t.Errorf("Squirrel.Mac arm64: %q, want %q", got, want)
	}
	if got, want := updates().Releases("arm64").Err, "photocraft v2.0.0 has no RELEASES for arm64"; got != want {
		t.Errorf("RELEASES for arm64: %q, want %q", got, want)
	}
	// An arch from the path that is none is not repeated.
	if got, want := updates().Releases("x64\x1b[31m"+strings.Repeat("A", 300)).Err, "unknown arch: want x64, ia32 or arm64"; got != want {
		t.Errorf("RELEASES for a hostile arch: %q, want %q", got, want)
	}
	// An older release (the newest withdrawn) does not wait with the newer file.
	s.Set(photocraft.Key, release.Entry{FetchedAt: t0.Add(3 * time.Hour), Release: v1})
	if f := updates().Releases(""); f.Err == "" {
		t.Errorf("an older release served %q, want its own RELEASES or nothing", f.Body())
	}
}
