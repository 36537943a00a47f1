package api

import (
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/storytold/craft-releases/pkg/daemon"
	"github.com/storytold/craft-releases/pkg/release"
	"github.com/storytold/craft-releases/pkg/snapshot"
	"github.com/storytold/craft-releases/pkg/updates/tauri"
	"github.com/storytold/craft-releases/test/fakeclock"
)

// feedCounts is a FeedObserver that keeps what it is told.
type feedCounts struct {
	mu  sync.Mutex
	got []string
}

func (f *feedCounts) Feed(app, feed, decision string, code int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.got = append(f.got, app+" "+feed+" "+decision+" "+http.StatusText(code))
}

// tauriServer serves the launcher, on the pre-release channel, with a
// release 1.0.0 of a signed NSIS installer and AppImage and a pre-release
// 1.1.0-beta.1 of a signed AppImage; and photocraft, never fetched.
func tauriServer(t *testing.T, obs FeedObserver) (*Server, *snapshot.App) {
	t.Helper()
	launcher := release.App{Key: "artcraft-launcher", Name: "ArtCraft Launcher", Repo: "storytold/craft-launcher", Prereleases: true}
	s := snapshot.New([]release.App{launcher, {Key: "photocraft", Name: "PhotoCraft", Repo: "storytold/photocraft"}}, fakeclock.New(t0))
	newRel := func(tag string, hours int, names ...string) (*release.Release, *release.Companions) {
		r := &release.Release{Tag: tag, Version: strings.TrimPrefix(tag, "artcraft-v"), NotesMarkdown: "Faster.",
			PublishedAt: release.NewTime(t0.Add(time.Duration(hours) * time.Hour)), Prerelease: hours > 0}
		sigs := map[string]string{}
		for _, n := range names {
			for _, name := range []string{n, n + ".sig"} {
				r.Assets = append(r.Assets, release.Asset{Name: name, DownloadURL: release.DownloadURL(launcher.Repo, tag, name)})
			}
			sigs[n+".sig"] = "dW50cnVzdGVk" + n
		}
		return r, release.NewCompanions(sigs)
	}
	stable, stableSigs := newRel("artcraft-v1.0.0", 0, "ArtCraft_1.0.0_x64-setup.exe", "ArtCraft_1.0.0_amd64.AppImage")
	beta, betaSigs := newRel("artcraft-v1.1.0-beta.1", 1, "ArtCraft_1.1.0-beta.1_amd64.AppImage")
	s.SetAll(map[string]release.Entry{
		launcher.Key:                   {FetchedAt: t0, Release: stable, Companions: stableSigs},
		launcher.PrereleaseEntry().Key: {FetchedAt: t0, Release: beta, Companions: betaSigs},
	}, t0)
	return New(s, new(daemon.Gate), zap.NewNop(), Options{Feeds: obs}), s.Current().Apps[launcher.Key]
}

// TestTauriEndpoint: every request an updater may send, by each of the
// three ways it may name a bundle type, gets the feed's answer for it.
func TestTauriEndpoint(t *testing.T) {
	t.Parallel()
	srv, app := tauriServer(t, nil)
	const base = "/v1/craft_apps/updates/artcraft-launcher/tauri/"
	for _, req := range append(tauri.AllRequests(), tauri.Request{Target: "beos", Arch: "x86_64", BundleType: "nsis"},
		tauri.Request{Target: "windows", Arch: "x64", BundleType: "nsis"}) {
		paths := []string{base + req.Target + "/" + req.Arch + "/" + req.BundleType}
		if req.BundleType == tauri.BundleUnknown {
			paths = append(paths, base+req.Target+"/"+req.Arch, base+req.Target+"/"+req.Arch+"/%7B%7Bbundle_type%7D%7D",
				base+req.Target+"/"+req.Arch+"/{{bundle_type}}")
		}
		want := app.Tauri.Offer(req)
		for _, path := range paths {
			rec := serve(t, srv, http.MethodGet, path, nil)
			switch {
			case want.Err != "":
				if body := `{"success":false,"error":` + string(mustJSON(t, want.Err)) + `}`; rec.Code != http.StatusNotFound || rec.Body.String() != body {
					t.Errorf("%s: %d %s, want 404 %s", path, rec.Code, rec.Body, body)
				}
			case rec.Code != http.StatusOK || rec.Body.String() != string(want.Body()):
				t.Errorf("%s: %d %s, want 200 %s", path, rec.Code, rec.Body, want.Body())
			}
		}
	}
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := release.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestTauriAnswers: the 204 against current_version (compared as
// tauri.TestNewer pins), the channel, the cache headers, the static form,
// and what the observer is told.
func TestTauriAnswers(t *testing.T) {
	t.Parallel()
	obs := &feedCounts{}
	srv, _ := tauriServer(t, obs)
	const nsis = "/v1/craft_apps/updates/artcraft-launcher/tauri/windows/x86_64/nsis"
	const appImage = "/v1/craft_apps/updates/artcraft-launcher/tauri/linux/x86_64/appimage"
	for _, tt := range []struct {
		name, target string
		code         int
		version      string // in the body of a 200
		cacheControl string
	}{
		{"no current_version", nsis, 200, "1.0.0", snapshot.CacheControlFetched},
		{"the same", nsis + "?current_version=1.0.0", 204, "", snapshot.CacheControlFetched},
		{"build metadata with a raw +, a space", nsis + "?current_version=1.0.0+b7", 200, "1.0.0", snapshot.CacheControlFetched},
		{"the pre-release", appImage + "?channel=prerelease&current_version=1.0.0", 200, "1.1.0-beta.1", "private, max-age=60"},
		{"the stable channel", appImage + "?channel=stable&current_version=0.1.0", 200, "1.0.0", "private, max-age=60"},
		{"no pre-release bundle", nsis + "?channel=prerelease", 404, "", "no-store"},
		{"a bad channel", nsis + "?channel=beta", 400, "", "no-store"},
		{"an unknown app", "/v1/craft_apps/updates/nosuch/tauri/windows/x86_64/nsis", 404, "", "no-store"},
		{"never fetched", "/v1/craft_apps/updates/photocraft/tauri/windows/x86_64/nsis", 404, "", "no-store"},
		{"latest.json, whatever the version", "/v1/craft_apps/updates/artcraft-launcher/tauri/latest.json?current_version=9.0.0", 200, "1.0.0", snapshot.CacheControlFetched},
	} {
		t.Run(tt.name, func(t *testing.T) {
			rec := serve(t, srv, http.MethodGet, tt.target, nil)
			if rec.Code != tt.code || rec.Header().Get("Cache-Control") != tt.cacheControl || rec.Header().Get("Vary") != "Accept-Encoding" {
				t.Fatalf("%d, Cache-Control %q, Vary %q; want %d, %q, Accept-Encoding (%s)",
					rec.Code, rec.Header().Get("Cache-Control"), rec.Header().Get("Vary"), tt.code, tt.cacheControl, rec.Body)
			}
			if tt.version != "" && !strings.Contains(rec.Body.String(), `"version":"`+tt.version+`"`) {
				t.Errorf("body %s, want version %s", rec.Body, tt.version)
			}
			if tt.code == http.StatusNoContent && rec.Body.Len() != 0 {
				t.Errorf("a 204 with a body: %s", rec.Body)
			}
		})
	}

	// Revalidation and gzip, as every rendered answer.
	rec := serve(t, srv, http.MethodGet, nsis, http.Header{"Accept-Encoding": {"gzip"}})
	if rec.Header().Get("Content-Encoding") != "gzip" {
		t.Errorf("no gzip copy: %v", rec.Header())
	}
	if again := serve(t, srv, http.MethodGet, nsis, http.Header{"Accept-Encoding": {"gzip"}, "If-None-Match": {rec.Header().Get("ETag")}}); again.Code != http.StatusNotModified {
		t.Errorf("If-None-Match of the gzip ETag: %d, want 304", again.Code)
	}

	obs.mu.Lock()
	defer obs.mu.Unlock()
	for _, want := range []string{"artcraft-launcher tauri none OK", "artcraft-launcher tauri none No Content", "artcraft-launcher tauri none Bad Request",
		"(unknown) tauri none Not Found", "photocraft tauri none Not Found", "artcraft-launcher tauri_static none OK", "artcraft-launcher tauri none Not Modified"} {
		if !slices.Contains(obs.got, want) {
			t.Errorf("the observer was not told %q; it was told %q", want, obs.got)
		}
	}
}

// TestQueryValue: the first non-empty value, unescaped as a form value.
func TestQueryValue(t *testing.T) {
	t.Parallel()
	for raw, want := range map[string]string{
		"current_version=1.0.0":                  "1.0.0",
		"a=b&current_version=1.0.0%2Bb1":         "1.0.0+b1",
		"current_version=&current_version=2.0.0": "2.0.0",
		"current_version=1.0.0+b1":               "1.0.0 b1",
		"current_version=%zz":                    "%zz",
		"current_versions=1.0.0":                 "",
		"":                                       "",
	} {
		if got := queryValue(raw, "current_version"); got != want {
			t.Errorf("queryValue(%q) = %q, want %q", raw, got, want)
		}
	}
}

// TestTauriCarriedNotCached: the previous release's update, kept while a
// new release's signatures are fetched, is no-store with a channel too.
func TestTauriCarriedNotCached(t *testing.T) {
	t.Parallel()
	launcher := release.App{Key: "artcraft-launcher", Name: "ArtCraft Launcher", Repo: "storytold/craft-launcher"}
	s := snapshot.New([]release.App{launcher}, fakeclock.New(t0))
	for i, v := range []string{"1.0.0", "2.0.0"} {
		tag, name := "v"+v, "ArtCraft_"+v+"_x64-setup.exe"
		r := &release.Release{Tag: tag, Version: v, PublishedAt: release.NewTime(t0.Add(time.Duration(i) * time.Hour))}
		for _, n := range []string{name, name + ".sig"} {
			r.Assets = append(r.Assets, release.Asset{Name: n, DownloadURL: release.DownloadURL(launcher.Repo, tag, n)})
		}
		var sigs *release.Companions
		if i == 0 {
			sigs = release.NewCompanions(map[string]string{name + ".sig": "dW50cnVzdGVk"})
		}
		s.Set(launcher.Key, release.Entry{FetchedAt: t0.Add(time.Duration(i) * time.Hour), Release: r, Companions: sigs})
	}
	srv := New(s, new(daemon.Gate), zap.NewNop(), Options{})
	for _, q := range []string{"", "?channel=stable", "?channel=prerelease&current_version=1.0.0"} {
		rec := serve(t, srv, http.MethodGet, "/v1/craft_apps/updates/artcraft-launcher/tauri/windows/x86_64/nsis"+q, nil)
		if rec.Header().Get("Cache-Control") != "no-store" || (rec.Code != http.StatusOK && rec.Code != http.StatusNoContent) {
			t.Errorf("%q: %d, Cache-Control %q; want the 1.0.0 update (or its 204), no-store", q, rec.Code, rec.Header().Get("Cache-Control"))
		}
	}
}
