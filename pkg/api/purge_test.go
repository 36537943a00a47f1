package api

import (
	"html"
	"net/http"
	"slices"
	"strings"
	"testing"

	"go.uber.org/zap"
)

// TestPurgePaths: the paths a release change purges are the full answer,
// the app's own, the page and every explicit download link of either
// release, and each of the links is one the page's buttons use and that
// answers a public redirect.
func TestPurgePaths(t *testing.T) {
	old := releaseOf("storytold/photocraft", "v1", "photocraft-1-windows-x64.msi", "photocraft-1-linux-x64.AppImage")
	next := releaseOf("storytold/photocraft", "v2", "photocraft-2-windows-x64.msi", "photocraft-2-macos-arm64.dmg", "SHA256SUMS.txt")
	got := PurgePaths("photocraft", old, next)
	want := []string{
		"/v1/craft_apps/release_info",
		"/v1/craft_apps/release_info/photocraft",
		"/",
		"/v1/craft_apps/download/photocraft?os=windows&arch=x64&package=msi",
		"/v1/craft_apps/download/photocraft?os=linux&arch=x64&package=app_image",
		"/v1/craft_apps/download/photocraft?os=macos&arch=arm64&package=dmg",
	}
	if !slices.Equal(got, want) {
		t.Fatalf("PurgePaths:\n%q\nwant\n%q", got, want)
	}
	if got := PurgePaths("photocraft", nil, nil); !slices.Equal(got, want[:3]) {
		t.Errorf("PurgePaths of no release: %q, want %q", got, want[:3])
	}

	s := New(downloads(t), new(Gate), zap.NewNop(), Options{})
	page := serve(t, s, http.MethodGet, "/", nil).Body.String()
	for _, p := range PurgePaths("photocraft", nil, downloads(t).Current().Apps["photocraft"].Release)[3:] {
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
