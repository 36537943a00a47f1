package api

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/labstack/echo/v4"
	"go.uber.org/zap"

	"github.com/storytold/craft-releases/pkg/daemon"
	"github.com/storytold/craft-releases/pkg/metrics"
	"github.com/storytold/craft-releases/pkg/release"
	"github.com/storytold/craft-releases/pkg/routes"
	"github.com/storytold/craft-releases/pkg/snapshot"
	"github.com/storytold/craft-releases/pkg/updates/tauri"
	"github.com/storytold/craft-releases/test/fakeclock"
	"github.com/storytold/craft-releases/test/testkit"
)

// discard is a ResponseWriter that keeps one header map and drops the body.
type discard struct{ h http.Header }

func (d *discard) Header() http.Header         { return d.h }
func (d *discard) Write(b []byte) (int, error) { return len(b), nil }
func (d *discard) WriteHeader(int)             {}

// serving returns what serves one request to h, for the allocation count
// of the Test…Allocs functions (task test-allocs).
func serving(h http.Handler, method, target string, header http.Header) func() {
	req := httptest.NewRequest(method, target, nil)
	req.Header = header
	w := &discard{h: make(http.Header, 8)}
	return func() {
		clear(w.h)
		h.ServeHTTP(w, req)
	}
}

// defaultApps returns a rendering of 13 apps, each with 10 assets (of 10
// platforms), the six updater bundles of a Tauri app with their signatures,
// and 2 KiB of notes.
func defaultApps(tb testing.TB) *snapshot.Rendering {
	tb.Helper()
	keys := []string{"photocraft", "vectorcraft", "filmcraft", "lightcraft", "pdfcraft", "effectcraft",
		"designcraft", "wordcraft", "deckcraft", "gridcraft", "cadcraft", "soundcraft", "artcraft-launcher"}
	apps := make([]release.App, 0, len(keys))
	entries := make(map[string]release.Entry, len(keys))
	for i, k := range keys {
		repo := "storytold/" + k
		apps = append(apps, release.App{Key: k, Name: k, Repo: repo})
		tag := fmt.Sprintf("v0.%d.0", i)
		var names []string
		for _, platform := range []string{"windows-x64.msi", "windows-x64-portable.zip", "windows-arm64.msi",
			"macos-universal.dmg", "linux-x86_64.AppImage", "linux-x86_64.AppImage.zsync", "linux-x86_64.deb",
			"linux-x86_64.rpm", "linux-aarch64.AppImage", "linux-x86_64.tar.gz"} {
			names = append(names, k+"-"+tag[1:]+"-"+platform)
		}
		sigs := map[string]string{}
		for _, bundle := range []string{"_" + tag[1:] + "_x64-setup.exe", "_" + tag[1:] + "_x64_en-US.msi", "_universal.app.tar.gz",
			"_" + tag[1:] + "_amd64.AppImage", "_" + tag[1:] + "_amd64.deb", "-" + tag[1:] + "-1.x86_64.rpm"} {
			names = append(names, k+bundle, k+bundle+".sig")
			// A .sig's text as Tauri's CLI writes it: some 400 bytes.
			sigs[k+bundle+".sig"] = strings.Repeat("dW50cnVzdGVkIGNvbW1lbnQ6", 17)
		}
		r := releaseOf(repo, tag, names...)
		r.NotesMarkdown = strings.Repeat(fmt.Sprintf("%s change %d. ", k, i), 2048/20)
		for j := range r.Assets {
			r.Assets[j].SizeBytes = 1 << 20
		}
		entries[k] = release.Entry{FetchedAt: t0, Release: r, Companions: release.NewCompanions(sigs)}
	}
	s := snapshot.New(apps, fakeclock.New(t0))
	s.SetAll(entries, time.Now())
	return s.Current()
}

// tauriBench is the Tauri feed's path of an updater of photocraft on Linux
// x86_64 installed from its deb, whose release is 0.0.0.
const tauriBench = "/v1/craft_apps/updates/photocraft/tauri/linux/x86_64/deb"

// benchAgent is Chrome on Windows 11, the commonest agent of a download.
const benchAgent = "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36"

// hotPath is a request of the paths every launcher takes, and its status.
type hotPath struct {
	name, method, path string
	header             http.Header
	status             int
}

// hotPaths serves a 13-app rendering through the whole echo router, with the
// request metrics of production, and returns the request paths of the full
// answer, an app's answer, a download redirect (explicit, and inferred from a
// User-Agent), the page and the Tauri feed. Its route /bench/noop only
// answers 204, without middleware: what echo itself costs.
func hotPaths(tb testing.TB) (*Server, []hotPath) {
	cur := defaultApps(tb)
	s := New(fixed{cur}, new(daemon.Gate), zap.NewNop(), Options{Observer: metrics.NewRequests(), Feeds: metrics.NewFeeds()})
	s.echo.GET("/bench/noop", func(c echo.Context) error { return c.NoContent(http.StatusNoContent) })
	gzip := http.Header{"Accept-Encoding": {"gzip, deflate, br"}}
	tauriETag := cur.Apps["photocraft"].Tauri.Offer(tauri.Request{Target: "linux", Arch: "x86_64", BundleType: "deb"}).ETag
	return s, []hotPath{
		{"plain", "GET", routes.ReleaseInfoPath, nil, 200},
		{"gzip", "GET", routes.ReleaseInfoPath, gzip, 200},
		{"head", "HEAD", routes.ReleaseInfoPath, nil, 200},
		{"not_modified", "GET", routes.ReleaseInfoPath, http.Header{"If-None-Match": {`W/"old", ` + cur.ETag}}, 304},
		{"not_modified_gzip", "GET", routes.ReleaseInfoPath,
			http.Header{"Accept-Encoding": {"br;q=1.0, gzip;q=0.8, *;q=0.1"}, "If-None-Match": {`W/"old", ` + cur.GzipETag}}, 304},
		{"app", "GET", routes.ReleaseInfoPath + "/photocraft", nil, 200},
		{"app_gzip", "GET", routes.ReleaseInfoPath + "/photocraft", gzip, 200},
		{"app_head", "HEAD", routes.ReleaseInfoPath + "/photocraft", nil, 200},
		{"app_not_modified", "GET", routes.ReleaseInfoPath + "/photocraft", http.Header{"If-None-Match": {cur.Apps["photocraft"].ETag}}, 304},
		{"download_explicit", "GET", "/v1/craft_apps/download/photocraft?os=linux&arch=x64&package=deb", nil, 302},
		{"download_inferred", "GET", "/v1/craft_apps/download/photocraft", http.Header{"User-Agent": {benchAgent}}, 302},
		{"page_gzip", "GET", "/", gzip, 200},
		{"tauri_update", "GET", tauriBench + "?current_version=0.0.0-rc.1", nil, 200},
		{"tauri_update_gzip", "GET", tauriBench, gzip, 200},
		{"tauri_no_update", "GET", tauriBench + "?current_version=0.0.0", nil, 204},
		{"tauri_not_modified", "GET", tauriBench, http.Header{"If-None-Match": {tauriETag}}, 304},
		{"tauri_manifest", "GET", "/v1/craft_apps/updates/photocraft/tauri/latest.json", nil, 200},
	}
}

// BenchmarkReleaseInfo serves each of hotPaths, and echo_baseline, echo's
// own cost, in one run.
func BenchmarkReleaseInfo(b *testing.B) {
	s, paths := hotPaths(b)
	for _, bc := range append([]hotPath{{"echo_baseline", "GET", "/bench/noop", nil, 204}}, paths...) {
		b.Run(bc.name, func(b *testing.B) {
			req := httptest.NewRequest(bc.method, bc.path, nil)
			req.Header = bc.header
			w := &discard{h: make(http.Header, 8)}
			b.ReportAllocs()
			for b.Loop() {
				clear(w.h)
				s.ServeHTTP(w, req)
			}
			// One goroutine, no network: what the handler path costs.
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "req/s")
		})
	}
}

// TestReleaseInfoAllocs holds each of hotPaths, request metrics included, to
// no allocation of its own: each must cost what echo's trivial handler costs.
func TestReleaseInfoAllocs(t *testing.T) {
	if testkit.RaceEnabled {
		t.Skip("the race detector changes allocation counts: task test-allocs runs this without it")
	}
	s, paths := hotPaths(t)
	baseline := testing.AllocsPerRun(100, serving(s, "GET", "/bench/noop", nil))
	for _, tt := range paths {
		t.Run(tt.name, func(t *testing.T) {
			req := httptest.NewRequest(tt.method, tt.path, nil)
			req.Header = tt.header
			rec := httptest.NewRecorder()
			if s.ServeHTTP(rec, req); rec.Code != tt.status {
				t.Fatalf("status: got %d, want %d", rec.Code, tt.status)
			}
			if got := testing.AllocsPerRun(100, serving(s, tt.method, tt.path, tt.header)); got > baseline {
				t.Errorf("allocations per request: got %v, want at most echo's own %v", got, baseline)
			}
		})
	}
}
