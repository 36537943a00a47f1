package routes

import (
	"slices"
	"testing"

	"github.com/storytold/craft-releases/pkg/release"
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
	// A pre-release changes the app's answers and page; its channel's
	// download links are private.
	if got := PurgePaths("photocraft:prerelease", old, next); !slices.Equal(got, want[:3]) {
		t.Errorf("PurgePaths of a pre-release: %q, want %q", got, want[:3])
	}
}

// releaseOf is a release of repo at tag with the assets names.
func releaseOf(repo, tag string, names ...string) *release.Release {
	r := &release.Release{Tag: tag, Assets: []release.Asset{}}
	for _, n := range names {
		r.Assets = append(r.Assets, release.Asset{Name: n, DownloadURL: "https://github.com/" + repo + "/releases/download/" + tag + "/" + n,
			Platform: release.ParseAsset(n)})
	}
	return r
}
