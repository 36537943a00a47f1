package snapshot_test

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/storytold/craft-releases/pkg/release"
	"github.com/storytold/craft-releases/pkg/snapshot"
	"github.com/storytold/craft-releases/pkg/updates/tauri"
	"github.com/storytold/craft-releases/test/fakeclock"
)

// built returns app's release "v"+version, published hours after t0, with
// a 5-byte asset of each name.
func built(app release.App, version string, hours int, names ...string) *release.Release {
	r := rel("v" + version)
	r.PublishedAt, r.HTMLURL = release.NewTime(t0.Add(time.Duration(hours)*time.Hour)), release.TagURL(app.Repo, r.Tag)
	for _, n := range names {
		r.Assets = append(r.Assets, release.Asset{Name: n, SizeBytes: 5, DownloadURL: release.DownloadURL(app.Repo, r.Tag, n)})
	}
	return r
}

// tauriRelease returns a release of the launcher with a Windows NSIS bundle
// and a Linux AppImage, each with its .sig asset, and more files named.
func tauriRelease(version string, hours int, more ...string) *release.Release {
	exe, image := "A_"+version+"_x64-setup.exe", "A_"+version+"_amd64.AppImage"
	return built(launcher, version, hours, append([]string{exe, exe + ".sig", image, image + ".sig"}, more...)...)
}

// signed returns signatures of the release's bundles named by suffix.
func signed(r *release.Release, suffixes ...string) *release.Companions {
	m := map[string]string{}
	for _, a := range r.Assets {
		for _, s := range suffixes {
			if len(a.Name) > len(s) && strings.HasSuffix(a.Name, s) {
				m[a.Name] = "c2ln" + a.Name
			}
		}
	}
	return release.NewCompanions(m)
}

var (
	windows = tauri.Request{Target: "windows", Arch: "x86_64", BundleType: "nsis"}
	linux   = tauri.Request{Target: "linux", Arch: "x86_64", BundleType: "appimage"}
)

// offered returns the version an answer offers, or its 404's error.
func offered(t *testing.T, o *snapshot.Offer) string {
	t.Helper()
	if o.Err != "" {
		return "404 " + o.Err
	}
	var u tauri.Update
	if err := json.Unmarshal(o.Body(), &u); err != nil {
		t.Fatalf("offer %s: %v", o.Body(), err)
	}
	return u.Version
}

// TestFeed: the feed follows the release and its signatures as they
// arrive, keeps an older release's update while a new release's signature
// is fetched (but not a newer release's), and renders an answer again only
// when its bytes change.
func TestFeed(t *testing.T) {
	t.Parallel()
	s := snapshot.New([]release.App{launcher}, fakeclock.New(t0.Add(24*time.Hour)))
	feed := func() *snapshot.Feed { return s.Current().Apps[launcher.Key].Tauri }
	v1, v2 := tauriRelease("1.0.0", 0), tauriRelease("2.0.0", 1)
	steps := []struct {
		name           string
		entry          release.Entry
		windows, linux string
	}{
		{"released, nothing signed yet", release.Entry{FetchedAt: t0, Release: v1},
			"404 artcraft-launcher v1.0.0 has no signed updater bundle for windows x86_64 nsis",
			"404 artcraft-launcher v1.0.0 has no signed updater bundle for linux x86_64 appimage"},
		{"one signature arrives for the same fetch", release.Entry{FetchedAt: t0, Release: v1, Companions: signed(v1, ".exe.sig")},
			"1.0.0", "404 artcraft-launcher v1.0.0 has no signed updater bundle for linux x86_64 appimage"},
		{"both", release.Entry{FetchedAt: t0, Release: v1, Companions: signed(v1, ".sig")}, "1.0.0", "1.0.0"},
		{"a new release: the old one's update until its signature is here", release.Entry{FetchedAt: t0.Add(time.Hour), Release: v2},
			"1.0.0", "1.0.0"},
		{"its Windows signature", release.Entry{FetchedAt: t0.Add(time.Hour), Release: v2, Companions: signed(v2, ".exe.sig")},
			"2.0.0", "1.0.0"},
	}
	for _, st := range steps {
		s.Set(launcher.Key, st.entry)
		// An older release's update kept meanwhile is not cached.
		for req, version := range map[tauri.Request]string{windows: st.windows, linux: st.linux} {
			o := feed().Offer(req)
			carried := st.entry.Release.Version != version && o.Err == ""
			if want := map[bool]string{false: snapshot.CacheControlFetched, true: snapshot.CacheControlUnfetched}[carried]; o.Err == "" && o.CacheControl != want {
				t.Errorf("%s: %s %s: Cache-Control %q, want %q", st.name, req.Target, version, o.CacheControl, want)
			}
		}
		if got := offered(t, feed().Offer(windows)); got != st.windows {
			t.Errorf("%s: windows: %s, want %s", st.name, got, st.windows)
		}
		if got := offered(t, feed().Offer(linux)); got != st.linux {
			t.Errorf("%s: linux: %s, want %s", st.name, got, st.linux)
		}
	}

	// The same release read again (new pointers, as from Redis) keeps the
	// very answers; a 304 that moves only the fetch time too.
	before := feed().Offer(windows)
	again := *v2
	s.Set(launcher.Key, release.Entry{FetchedAt: t0.Add(2 * time.Hour), Release: &again, Companions: signed(v2, ".exe.sig")})
	if feed().Offer(windows) != before {
		t.Error("the same update was rendered again")
	}

	// A release that goes back (the newest deleted) does not wait with the
	// newer release's update.
	s.Set(launcher.Key, release.Entry{FetchedAt: t0.Add(150 * time.Minute), Release: v1})
	if got, want := offered(t, feed().Offer(windows)), "404 artcraft-launcher v1.0.0 has no signed updater bundle for windows x86_64 nsis"; got != want {
		t.Errorf("back to v1.0.0: %s, want %s", got, want)
	}

	// A release whose signature is not published has nothing to wait for.
	v3 := tauriRelease("3.0.0", 3)
	v3.Assets = v3.Assets[:1] // the NSIS installer alone, no .sig
	s.Set(launcher.Key, release.Entry{FetchedAt: t0.Add(3 * time.Hour), Release: v3})
	if got, want := offered(t, feed().Offer(windows)), "404 artcraft-launcher v3.0.0 has no signed updater bundle for windows x86_64 nsis"; got != want {
		t.Errorf("unsigned release: %s, want %s", got, want)
	}
}

// TestFeedManifestAndPrerelease: latest.json waits as the dynamic answers
// do and is never a 204; the pre-release channel has a feed of its own,
// with its entry's signatures.
func TestFeedManifestAndPrerelease(t *testing.T) {
	t.Parallel()
	channel := launcher
	channel.Prereleases = true
	s := snapshot.New([]release.App{channel}, fakeclock.New(t0.Add(24*time.Hour)))
	v1, beta := tauriRelease("1.0.0", 0), tauriRelease("2.0.0-beta.1", 1)
	beta.Prerelease = true
	s.SetAll(map[string]release.Entry{
		channel.Key:                   {FetchedAt: t0, Release: v1, Companions: signed(v1, ".sig")},
		channel.PrereleaseEntry().Key: {FetchedAt: t0, Release: beta, Companions: signed(beta, ".AppImage.sig")},
	}, t0)
	app := s.Current().Apps[channel.Key]
	m := app.Tauri.Manifest
	if m.Err != "" || !m.Newer("9.0.0") {
		t.Errorf("latest.json: %q, newer than 9.0.0: %v; want an answer, always newer", m.Err, m.Newer("9.0.0"))
	}
	var manifest tauri.Manifest
	if err := json.Unmarshal(m.Body(), &manifest); err != nil || manifest.Version != "1.0.0" || len(manifest.Platforms) != 4 {
		t.Errorf("latest.json %s (%v): want 1.0.0 with windows-x86_64(-nsis) and linux-x86_64(-appimage)", m.Body(), err)
	}
	if app.PrereleaseTauri == nil {
		t.Fatal("no pre-release feed")
	}
	if got := offered(t, app.PrereleaseTauri.Offer(linux)); got != "2.0.0-beta.1" {
		t.Errorf("pre-release linux: %s, want 2.0.0-beta.1", got)
	}
	if got, want := offered(t, app.PrereleaseTauri.Offer(windows)), "404 artcraft-launcher v2.0.0-beta.1 has no signed updater bundle for windows x86_64 nsis"; got != want {
		t.Errorf("pre-release windows: %s, want %s", got, want)
	}
	o := app.Tauri.Offer(windows)
	for current, want := range map[string]bool{"0.9.0": true, "1.0.0": false, "v1.0.0": false, "1.0.0+b1": false, "1.0.0-rc.1": true, "": true, "garbage": true} {
		if got := o.Newer(current); got != want {
			t.Errorf("Newer(%q) = %v, want %v", current, got, want)
		}
	}
	if got := app.Tauri.Offer(tauri.Request{Target: "beos", Arch: "x86_64"}).Err; got != "unknown target: want darwin, linux or windows" {
		t.Errorf("unknown target: %q", got)
	}
}

// TestFeedOfAnUnsignedRelease: a release without a signed bundle (an app
// that is no Tauri app) holds no answer for each request an updater may
// send, and answers each with the 404 a signed feed would give.
func TestFeedOfAnUnsignedRelease(t *testing.T) {
	t.Parallel()
	s := snapshot.New([]release.App{launcher}, fakeclock.New(t0.Add(24*time.Hour)))
	r := tauriRelease("1.0.0", 0)
	r.Assets = slices.DeleteFunc(r.Assets, func(a release.Asset) bool { return strings.HasSuffix(a.Name, ".sig") })
	s.Set(launcher.Key, release.Entry{FetchedAt: t0, Release: r})
	f := s.Current().Apps[launcher.Key].Tauri
	if n := f.Held(); n != 0 {
		t.Errorf("%d answers held, want none", n)
	}
	if got, want := offered(t, f.Offer(windows)), "404 artcraft-launcher v1.0.0 has no signed updater bundle for windows x86_64 nsis"; got != want {
		t.Errorf("windows: %s, want %s", got, want)
	}
	if f.Manifest.Err == "" {
		t.Error("latest.json of an unsigned release is no 404")
	}
}
