package api

import (
	"net/http"
	"testing"

	"go.uber.org/zap"

	"github.com/storytold/craft-releases/pkg/daemon"
	"github.com/storytold/craft-releases/pkg/snapshot"
)

// TestAppImageZsync: the update check of an AppImage is redirected to the
// release's .AppImage.zsync of its arch, cached as a download link; what
// is missing is a 404 saying so.
func TestAppImageZsync(t *testing.T) {
	t.Parallel()
	s := New(fixed{fullRendering(true)}, new(daemon.Gate), zap.NewNop(), Options{})
	const base = "/v1/craft_apps/updates/"
	const zsync = "https://github.com/storytold/photocraft/releases/download/v1.0.0/photocraft-1.0.0-linux-x86_64.AppImage.zsync"
	for _, tt := range []struct {
		name, target          string
		code                  int
		location, cache, body string
	}{
		{"x86_64", base + "photocraft/appimage/x86_64.zsync", 302, zsync, snapshot.CacheControlFetched, ""},
		{"with a channel", base + "photocraft/appimage/x86_64.zsync?channel=prerelease&noCache=1", 302, zsync, "private, max-age=60", ""},
		{"no file for the arch", base + "photocraft/appimage/aarch64.zsync", 404, "", "no-store",
			`{"success":false,"error":"photocraft v1.0.0 has no AppImage zsync file for aarch64"}`},
		{"an arch AppImage does not name so", base + "photocraft/appimage/x64.zsync", 404, "", "no-store",
			`{"success":false,"error":"unknown file: want x86_64.zsync, i686.zsync or aarch64.zsync"}`},
		{"no release", base + "filmcraft/appimage/x86_64.zsync", 404, "", "no-store",
			`{"success":false,"error":"filmcraft has no release on GitHub"}`},
		{"a bad channel", base + "photocraft/appimage/x86_64.zsync?channel=beta", 400, "", "no-store", ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			rec := serve(t, s, http.MethodGet, tt.target, nil)
			if rec.Code != tt.code || rec.Header().Get("Location") != tt.location || rec.Header().Get("Cache-Control") != tt.cache {
				t.Errorf("%d, Location %q, Cache-Control %q; want %d, %q, %q", rec.Code, rec.Header().Get("Location"),
					rec.Header().Get("Cache-Control"), tt.code, tt.location, tt.cache)
			}
			if tt.body != "" && rec.Body.String() != tt.body {
				t.Errorf("body %s, want %s", rec.Body, tt.body)
			}
		})
	}
}
