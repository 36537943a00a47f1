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

// want fails t unless the observer was told each of want.
func (f *feedCounts) want(t *testing.T, want ...string) {
	t.Helper()
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, w := range want {
		if !slices.Contains(f.got, w) {
			t.Errorf("the observer was not told %q; it was told %q", w, f.got)
		}
	}
}

// signedRelease returns a release of repo at tag, published hours after t0,
// with each bundle and its .sig asset, and the signatures' text.
func signedRelease(repo, tag string, hours int, bundles ...string) (*release.Release, *release.Companions) {
	r := &release.Release{Tag: tag, Version: tag[strings.LastIndex(tag, "v")+1:], NotesMarkdown: "Faster.",
		PublishedAt: release.NewTime(t0.Add(time.Duration(hours) * time.Hour))}
	sigs := map[string]string{}
	for _, b := range bundles {
		r.Assets = append(r.Assets, release.Asset{Name: b, DownloadURL: release.DownloadURL(repo, tag, b)},
			release.Asset{Name: b + ".sig", DownloadURL: release.DownloadURL(repo, tag, b+".sig")})
		sigs[b+".sig"] = "dW50cnVzdGVk" + b
	}
	return r, release.NewCompanions(sigs)
}

// tauriServer serves the launcher, on the pre-release channel, with a
// release 1.0.0 of a signed NSIS installer and AppImage and a pre-release
// 1.1.0-beta.1 of a signed AppImage; and photocraft, never fetched.
func tauriServer(t *testing.T, obs FeedObserver) (*Server, *snapshot.App) {
	t.Helper()
	launcher := release.App{Key: "artcraft-launcher", Name: "ArtCraft Launcher", Repo: "storytold/craft-launcher", Prereleases: true}
	s := snapshot.New([]release.App{launcher, {Key: "photocraft", Name: "PhotoCraft", Repo: "storytold/photocraft"}}, fakeclock.New(t0))
	stable, stableSigs := signedRelease(launcher.Repo, "artcraft-v1.0.0", 0, "ArtCraft_1.0.0_x64-setup.exe", "ArtCraft_1.0.0_amd64.AppImage")
	beta, betaSigs := signedRelease(launcher.Repo, "artcraft-v1.1.0-beta.1", 1, "ArtCraft_1.1.0-beta.1_amd64.AppImage")
	beta.Prerelease = true
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

	obs.want(t, "artcraft-launcher tauri none OK", "artcraft-launcher tauri none No Content", "artcraft-launcher tauri none Bad Request",
		"(unknown) tauri none Not Found", "photocraft tauri none Not Found", "artcraft-launcher tauri_static none OK", "artcraft-launcher tauri none Not Modified")
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
	v1, sigs := signedRelease(launcher.Repo, "v1.0.0", 0, "ArtCraft_1.0.0_x64-setup.exe")
	v2, _ := signedRelease(launcher.Repo, "v2.0.0", 1, "ArtCraft_2.0.0_x64-setup.exe")
	s.Set(launcher.Key, release.Entry{FetchedAt: t0, Release: v1, Companions: sigs})
	s.Set(launcher.Key, release.Entry{FetchedAt: t0.Add(time.Hour), Release: v2})
	srv := New(s, new(daemon.Gate), zap.NewNop(), Options{})
	for _, q := range []string{"", "?channel=stable", "?channel=prerelease&current_version=1.0.0"} {
		rec := serve(t, srv, http.MethodGet, "/v1/craft_apps/updates/artcraft-launcher/tauri/windows/x86_64/nsis"+q, nil)
		if rec.Header().Get("Cache-Control") != "no-store" || (rec.Code != http.StatusOK && rec.Code != http.StatusNoContent) {
			t.Errorf("%q: %d, Cache-Control %q; want the 1.0.0 update (or its 204), no-store", q, rec.Code, rec.Header().Get("Cache-Control"))
		}
	}
}
