package api

import (
	"bytes"
	"html"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/storytold/craft-releases/pkg/daemon"
	"github.com/storytold/craft-releases/pkg/download"
	"github.com/storytold/craft-releases/pkg/page"
	"github.com/storytold/craft-releases/pkg/release"
	"github.com/storytold/craft-releases/pkg/routes"
	"github.com/storytold/craft-releases/pkg/snapshot"
	"github.com/storytold/craft-releases/test/fakeclock"
)

// Real User-Agent strings (package download has the full table).
const (
	uaWindows  = "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36"
	uaMac      = "Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/18.1 Safari/605.1.15"
	uaLinuxARM = "Mozilla/5.0 (X11; Linux aarch64; rv:133.0) Gecko/20100101 Firefox/133.0"
	uaCurl     = "curl/8.5.0"
)

// releaseOf returns a release of repo at tag with one asset per file name.
func releaseOf(repo, tag string, names ...string) *release.Release {
	r := &release.Release{Tag: tag, Version: strings.TrimPrefix(tag, "v"), Name: tag,
		HTMLURL: "https://github.com/" + repo + "/releases/tag/" + tag, NotesMarkdown: "Notes for " + tag,
		Assets: []release.Asset{}}
	for _, n := range names {
		r.Assets = append(r.Assets, release.Asset{Name: n, SizeBytes: 1234,
			DownloadURL: release.DownloadURL(repo, tag, n), Platform: release.ParseAsset(n)})
	}
	return r
}

// downloads returns a snapshot of four apps: photocraft with a full release
// (and one asset whose URL is not under its repository) and a pre-release,
// vectorcraft fetched with no release nor pre-release, filmcraft never
// fetched, webcraft with only a web build and no channel.
func downloads(t testing.TB) *snapshot.Snapshot {
	t.Helper()
	s := snapshot.New([]release.App{
		{Key: "photocraft", Name: "PhotoCraft", Repo: "storytold/photocraft", Prereleases: true},
		{Key: "vectorcraft", Name: "VectorCraft", Repo: "storytold/vectorcraft", Prereleases: true},
		{Key: "filmcraft", Name: "FilmCraft", Repo: "storytold/filmcraft"},
		{Key: "webcraft", Name: "WebCraft", Repo: "storytold/webcraft"},
	}, fakeclock.New(t0))
	photo := releaseOf("storytold/photocraft", "v1.0.0",
		"SHA256SUMS.txt",
		"photocraft-1.0.0-windows-x64-portable.zip",
		"photocraft-1.0.0-windows-x64.msi",
		"photocraft-1.0.0-windows-arm64.msi",
		"photocraft-1.0.0-macos-universal.dmg",
		"photocraft-1.0.0-linux-x86_64.deb",
		"photocraft-1.0.0-linux-aarch64.AppImage",
		"photocraft-1.0.0-linux-x86_64.AppImage",
		"photocraft-1.0.0-freebsd-x86_64.tar.gz",
	)
	beta := releaseOf("storytold/photocraft", "v1.1.0-beta.1",
		"photocraft-1.1.0-beta.1-windows-x64.msi",
		"photocraft-1.1.0-beta.1-linux-x86_64.AppImage",
	)
	beta.Prerelease, beta.PublishedAt = true, release.NewTime(t0)
	s.SetAll(map[string]release.Entry{
		"photocraft":             {FetchedAt: t0, Release: photo},
		"photocraft:prerelease":  {FetchedAt: t0, Release: beta},
		"vectorcraft":            {FetchedAt: t0},
		"vectorcraft:prerelease": {FetchedAt: t0},
		"webcraft":               {FetchedAt: t0, Release: releaseOf("storytold/webcraft", "v2", "webcraft-web-2.zip")},
	}, time.Now())
	return s
}

func serve(t testing.TB, s *Server, method, target string, header http.Header) *httptest.ResponseRecorder {
	t.Helper()
	req := httptest.NewRequest(method, target, nil)
	maps.Copy(req.Header, header)
	rec := httptest.NewRecorder()
	s.ServeHTTP(rec, req)
	return rec
}

// TestReleaseInfoApp: an app's own answer and the page, served as
// TestReleaseInfo pins for the full one (gzip, HEAD, 304), with their own
// ETag, Cache-Control and, for the page, its own headers.
func TestReleaseInfoApp(t *testing.T) {
	t.Parallel()
	snap := downloads(t)
	s := New(snap, new(daemon.Gate), zap.NewNop(), Options{})
	cur := snap.Current()
	photo, film, pg := cur.Apps["photocraft"], cur.Apps["filmcraft"], cur.Page
	pageHeader := func(contentType string) map[string]string {
		return map[string]string{"Etag": pg.ETag, "Vary": "Accept-Encoding", "Cache-Control": "no-store",
			"Content-Security-Policy": page.ContentSecurityPolicy(), "Referrer-Policy": "no-referrer", "Content-Type": contentType}
	}
	for _, tt := range []struct {
		name, method, target string // target below release_info/, or "/" for the page
		header               http.Header
		wantStatus           int
		wantBody             []byte
		wantHeader           map[string]string
	}{
		{"fetched", "GET", "photocraft", nil, 200, photo.Body(), map[string]string{
			"Cache-Control": "public, max-age=60, stale-while-revalidate=30, stale-if-error=86400", "Etag": photo.ETag, "Vary": "Accept-Encoding",
			"Content-Type": "application/json", "Content-Encoding": ""}},
		{"never fetched", "GET", "filmcraft", nil, 200, film.Body(), map[string]string{
			"Cache-Control": "no-store", "Etag": film.ETag, "Vary": "Accept-Encoding"}},
		{"the full answer's ETag is another app's", "GET", "photocraft", http.Header{"If-None-Match": {cur.ETag}}, 200, photo.Body(), nil},
		{"another app's ETag", "GET", "photocraft", http.Header{"If-None-Match": {film.ETag}}, 200, photo.Body(), nil},
		{"unknown", "GET", "nope", nil, 404, []byte(`{"success":false,"error":"unknown app \"nope\""}`), map[string]string{
			"Cache-Control": "no-store", "Content-Type": "application/json", "Vary": "Accept-Encoding", "Etag": ""}},
		{"unknown, cut", "GET", strings.Repeat("a", 100), nil, 404,
			[]byte(`{"success":false,"error":"unknown app \"` + strings.Repeat("a", 64) + `…\""}`), nil},
		{"keys are case-sensitive", "GET", "PhotoCraft", nil, 404, []byte(`{"success":false,"error":"unknown app \"PhotoCraft\""}`), nil},
		{"unknown HEAD", "HEAD", "nope", nil, 404, nil, nil},
		{"the page", "GET", "/", nil, 200, pg.Body(), pageHeader("text/html; charset=utf-8")},
		{"the page not modified", "GET", "/", http.Header{"If-None-Match": {pg.ETag}}, 304, nil, pageHeader("")},
	} {
		t.Run(tt.name, func(t *testing.T) {
			target := tt.target
			if target != "/" {
				target = routes.ReleaseInfoPath + "/" + target
			}
			rec := serve(t, s, tt.method, target, tt.header)
			if rec.Code != tt.wantStatus {
				t.Fatalf("status: got %d, want %d", rec.Code, tt.wantStatus)
			}
			if !bytes.Equal(rec.Body.Bytes(), tt.wantBody) {
				t.Errorf("body:\n got %.300s\nwant %.300s", rec.Body.Bytes(), tt.wantBody)
			}
			for k, want := range tt.wantHeader {
				if got := rec.Header().Get(k); got != want {
					t.Errorf("%s: got %q, want %q", k, got, want)
				}
			}
		})
	}
	if csp := page.ContentSecurityPolicy(); !strings.HasPrefix(csp, "default-src 'none';") || strings.Contains(csp, "script") {
		t.Errorf("Content-Security-Policy %q: want default-src 'none' and no script source", csp)
	}
}

func TestDownload(t *testing.T) {
	t.Parallel()
	s := New(downloads(t), new(daemon.Gate), zap.NewNop(), Options{})
	photo := func(name string) string { return release.DownloadURL("storytold/photocraft", "v1.0.0", name) }
	beta := func(name string) string { return release.DownloadURL("storytold/photocraft", "v1.1.0-beta.1", name) }
	const (
		public  = "public, max-age=60, stale-while-revalidate=30, stale-if-error=86400"
		private = "private, max-age=60"
	)
	photoPlatforms := `[{"os":"windows","arch":"x64","package_type":"portable_zip"},{"os":"windows","arch":"x64","package_type":"msi"},` +
		`{"os":"windows","arch":"arm64","package_type":"msi"},{"os":"macos","arch":"universal","package_type":"dmg"},` +
		`{"os":"linux","arch":"x64","package_type":"deb"},{"os":"linux","arch":"arm64","package_type":"app_image"},` +
		`{"os":"linux","arch":"x64","package_type":"app_image"},{"os":"freebsd","arch":"x64","package_type":"tar_gz"}]`
	for _, tt := range []struct {
		name, method, target, ua string // target below /v1/craft_apps/download/
		status                   int
		location, cache, vary    string
		wantError                string // the error body, for answers other than 302
	}{
		{"explicit", "GET", "photocraft?os=windows&arch=x64&package=msi", uaMac, 302, photo("photocraft-1.0.0-windows-x64.msi"), public, "", ""},
		{"explicit HEAD", "HEAD", "photocraft?os=windows&arch=x64&package=msi", "", 302, photo("photocraft-1.0.0-windows-x64.msi"), public, "", ""},
		{"first value counts, others ignored", "GET", "photocraft?utm_source=x&os=windows&os=linux&arch=arm64", "", 302, photo("photocraft-1.0.0-windows-arm64.msi"), public, "", ""},
		{"inferred windows", "GET", "photocraft", uaWindows, 302, photo("photocraft-1.0.0-windows-x64.msi"), private, "User-Agent", ""},
		{"arch inferred, os given", "GET", "photocraft?os=linux", uaLinuxARM, 302, photo("photocraft-1.0.0-linux-aarch64.AppImage"), private, "User-Agent", ""},
		{"empty values are not given", "GET", "photocraft?os=&arch=&package=", uaWindows, 302, photo("photocraft-1.0.0-windows-x64.msi"), private, "User-Agent", ""},

		{"prerelease", "GET", "photocraft?os=windows&arch=x64&package=msi&channel=prerelease", "", 302, beta("photocraft-1.1.0-beta.1-windows-x64.msi"), private, "", ""},
		{"stable channel", "GET", "photocraft?os=windows&arch=x64&package=msi&channel=stable", "", 302, photo("photocraft-1.0.0-windows-x64.msi"), private, "", ""},
		{"prerelease of an app without the channel", "GET", "webcraft?os=web&channel=prerelease", "", 302, release.DownloadURL("storytold/webcraft", "v2", "webcraft-web-2.zip"), private, "", ""},
		{"no pre-release, no release", "GET", "vectorcraft?os=windows&arch=x64&channel=prerelease", "", 404, "", "no-store", "", `{"success":false,"error":"vectorcraft has no release on GitHub"}`},
		{"bad channel", "GET", "photocraft?os=windows&arch=x64&channel=beta", "", 400, "", "no-store", "", `{"success":false,"error":"bad channel \"beta\": want one of stable, prerelease"}`},
		{"no asset in the pre-release", "GET", "photocraft?os=freebsd&arch=x64&channel=prerelease", "", 404, "", "no-store", "",
			`{"success":false,"error":"photocraft v1.1.0-beta.1 has no asset for freebsd/x64 (tar_gz); see platforms","platforms":[{"os":"windows","arch":"x64","package_type":"msi"},{"os":"linux","arch":"x64","package_type":"app_image"}]}`},

		{"unknown app", "GET", "nope?os=windows&arch=x64", uaWindows, 404, "", "no-store", "", `{"success":false,"error":"unknown app \"nope\""}`},
		{"bad os", "GET", "photocraft?os=Windows", uaWindows, 400, "", "no-store", "", `{"success":false,"error":"bad os \"Windows\": want one of windows, macos, linux, freebsd, web"}`},
		{"never fetched", "GET", "filmcraft?os=windows&arch=x64", "", 404, "", "no-store", "", `{"success":false,"error":"filmcraft has no release yet: it was not fetched from GitHub yet"}`},
		{"no release", "GET", "vectorcraft?os=windows&arch=x64", "", 404, "", "no-store", "", `{"success":false,"error":"vectorcraft has no release on GitHub"}`},
		{"no asset", "GET", "photocraft?os=macos&arch=arm64&package=cli_zip", "", 404, "", "no-store", "",
			`{"success":false,"error":"photocraft v1.0.0 has no asset for macos/arm64/cli_zip; see platforms","platforms":` + photoPlatforms + `}`},
		{"no asset, inferred", "GET", "photocraft?arch=x86", uaWindows, 404, "", "no-store", "User-Agent",
			`{"success":false,"error":"photocraft v1.0.0 has no asset for windows/x86 (msi, portable_zip); see platforms","platforms":` + photoPlatforms + `}`},
		{"curl names no os", "GET", "photocraft", uaCurl, 400, "", "no-store", "User-Agent",
			`{"success":false,"error":"no os given and the User-Agent names none: add os=windows, os=macos, os=linux, os=freebsd, os=web","platforms":` + photoPlatforms + `}`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			h := http.Header{}
			if tt.ua != "" {
				h.Set("User-Agent", tt.ua)
			}
			rec := serve(t, s, tt.method, "/v1/craft_apps/download/"+tt.target, h)
			if rec.Code != tt.status {
				t.Fatalf("status: got %d, want %d (%s)", rec.Code, tt.status, rec.Body.Bytes())
			}
			for k, want := range map[string]string{"Location": tt.location, "Cache-Control": tt.cache, "Vary": tt.vary} {
				if got := rec.Header().Get(k); got != want {
					t.Errorf("%s: got %q, want %q", k, got, want)
				}
			}
			body, _ := io.ReadAll(rec.Body)
			if tt.status == 302 || tt.method == "HEAD" {
				if len(body) != 0 {
					t.Errorf("body: got %q, want none", body)
				}
				return
			}
			if string(body) != tt.wantError {
				t.Errorf("body:\n got %s\nwant %s", body, tt.wantError)
			}
			if got := rec.Header().Get("Content-Type"); got != "application/json" {
				t.Errorf("Content-Type: got %q, want application/json", got)
			}
		})
	}
}

// FuzzParseWant reads arbitrary queries: no panic, and any values encoded as
// a browser or url.Values encodes them are read back as they were.
func FuzzParseWant(f *testing.F) {
	f.Add("os=windows&arch=x64&package=msi", "windows", "x64", "msi")
	f.Add("os=%77&os=&&=&arch", "a b", "%", "+")
	f.Fuzz(func(t *testing.T, raw, os, arch, pkg string) {
		parseWant(raw)
		q := url.Values{"os": {os}, "arch": {arch}, "package": {pkg}, "utm": {raw}}.Encode()
		if got, want := parseWant(q), (download.Want{OS: os, Arch: arch, Package: pkg}); got != want {
			t.Errorf("parseWant(%q) = %+v, want %+v", q, got, want)
		}
	})
}

// TestPurgedPathsAreServed: each download link that routes.PurgePaths lists
// is one the page's buttons use and that answers a public redirect, so that
// a purge reaches what a cache holds.
func TestPurgedPathsAreServed(t *testing.T) {
	t.Parallel()
	s := New(downloads(t), new(daemon.Gate), zap.NewNop(), Options{})
	page := serve(t, s, http.MethodGet, "/", nil).Body.String()
	for _, p := range routes.PurgePaths("photocraft", nil, downloads(t).Current().Apps["photocraft"].Release)[3:] {
		rec := serve(t, s, http.MethodGet, p, nil)
		if rec.Code != http.StatusFound || rec.Header().Get("Cache-Control") != "public, max-age=60, stale-while-revalidate=30, stale-if-error=86400" {
			t.Errorf("GET %s: %d, Cache-Control %q; want a public 302", p, rec.Code, rec.Header().Get("Cache-Control"))
		}
		if !containsHref(page, p) {
			t.Errorf("the page has no button to %s", p)
		}
	}
}

// containsHref reports whether page links to path.
func containsHref(page, path string) bool {
	return strings.Contains(page, `href="`+html.EscapeString(path)+`"`)
}
