package routes

import (
	"slices"
	"strings"
	"testing"

	"github.com/storytold/craft-releases/pkg/release"
)

// TestPurgePaths: the paths a release change purges are the full answer,
// the app's own, the page and every explicit download link of either
// release, and each of the links is one the page's buttons use and that
// answers a public redirect.
func TestPurgePaths(t *testing.T) {
	old := releaseOf("storytold/photocraft", "v1", "photocraft-1-windows-x64.msi", "photocraft-1-linux-x64.AppImage",
		"photocraft-1-linux-x64.AppImage.zsync")
	next := releaseOf("storytold/photocraft", "v2", "photocraft-2-windows-x64.msi", "photocraft-2-macos-arm64.dmg", "SHA256SUMS.txt")
	got := PurgePaths("photocraft", old, next)
	want := []string{
		"/v1/craft_apps/release_info",
		"/v1/craft_apps/release_info/photocraft",
		"/",
		"/v1/craft_apps/download/photocraft?os=windows&arch=x64&package=msi",
		"/v1/craft_apps/download/photocraft?os=linux&arch=x64&package=app_image",
		"/v1/craft_apps/download/photocraft?os=linux&arch=x64&package=app_image_zsync",
		"/v1/craft_apps/updates/photocraft/appimage/x86_64.zsync",
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
	// A history's change (the release before the latest and the latest,
	// which a decision serves instead of each other) purges what the app's
	// own release change does.
	if got := PurgePaths("photocraft:history", old, next); !slices.Equal(got, want) {
		t.Errorf("PurgePaths of a history:\n%q\nwant\n%q", got, want)
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

// TestPurgePathsTauri: an app's release change also purges the answers of
// its Tauri updater feed for every request either release has a bundle
// for, signed or not: the bundle type's path and, for the one unknown reads
// as, the paths read as unknown; each bare and with the current_version of
// the old release, as the updater writes it, when that is a version. A
// release without bundles adds none, and a pre-release's feed answers are
// private.
func TestPurgePathsTauri(t *testing.T) {
	const feed = "/v1/craft_apps/updates/artcraft-launcher/tauri/"
	// paths are those of the six bundles of artCraft, universal macOS:
	// every request's own, and what reads as unknown where it is the default.
	paths := []string{
		"darwin/x86_64/app", "darwin/x86_64", "darwin/x86_64/unknown", "darwin/x86_64/%7B%7Bbundle_type%7D%7D",
		"darwin/aarch64/app", "darwin/aarch64", "darwin/aarch64/unknown", "darwin/aarch64/%7B%7Bbundle_type%7D%7D",
		"linux/x86_64/appimage", "linux/x86_64", "linux/x86_64/unknown", "linux/x86_64/%7B%7Bbundle_type%7D%7D",
		"linux/x86_64/deb",
		"linux/x86_64/rpm",
		"windows/x86_64/nsis", "windows/x86_64", "windows/x86_64/unknown", "windows/x86_64/%7B%7Bbundle_type%7D%7D",
		"windows/x86_64/msi",
	}
	// want is latest.json, then each of ps, followed by it with query
	// when query is not empty.
	want := func(query string, ps ...string) []string {
		out := []string{feed + "latest.json"}
		for _, p := range ps {
			out = append(out, feed+p)
			if query != "" {
				out = append(out, feed+p+query)
			}
		}
		return out
	}
	v040, v041 := artCraft("0.40.0", "0.40.0"), artCraft("0.41.0", "0.41.0")
	craftNamed := releaseOf("storytold/artcraft", "artcraft-v0.40.0", "artcraft-0.40.0-windows-x64.msi", "SHA256SUMS.txt")
	craftNamed.Version = "0.40.0"
	debOnly := releaseOf("storytold/artcraft", "artcraft-v0.40.0", "ArtCraft_0.40.0_amd64.deb", "ArtCraft_0.40.0_amd64.deb.sig")
	debOnly.Version = "0.40.0"
	for _, tc := range []struct {
		name, key string
		old, new  *release.Release
		want      []string
	}{
		{"a release", "artcraft-launcher", v040, v041, want("?current_version=0.40.0", paths...)},
		{"the first release", "artcraft-launcher", nil, v041, want("", paths...)},
		{"its signatures arrived", "artcraft-launcher", v041, v041, want("?current_version=0.41.0", paths...)},
		{"a version with leading v's and build metadata", "artcraft-launcher",
			artCraft("0.40.0", "vv0.40.0+b.5"), v041, want("?current_version=0.40.0%2Bb.5", paths...)},
		{"a version that is no SemVer", "artcraft-launcher", artCraft("0.40.0", "nightly"), v041, want("", paths...)},
		{"the first release with bundles", "artcraft-launcher", craftNamed, v041, want("?current_version=0.40.0", paths...)},
		{"bundles gone", "artcraft-launcher", debOnly, nil, want("?current_version=0.40.0", "linux/x86_64/deb")},
		{"no bundles", "artcraft-launcher", craftNamed, craftNamed, nil},
		{"a pre-release", "artcraft-launcher:prerelease", v040, v041, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			all := PurgePaths(tc.key, tc.old, tc.new)
			var got []string
			for _, p := range all {
				if strings.HasPrefix(p, "/v1/craft_apps/updates/") {
					got = append(got, p)
				}
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("feed paths:\n%q\nwant\n%q", got, tc.want)
			}
			slices.Sort(all)
			if len(slices.Compact(all)) != len(all) {
				t.Errorf("a path listed twice: %q", all)
			}
		})
	}
	// The release of six bundles, with the full answer, the app's own, the
	// page and the download links of the four the launchers know.
	if got, want := len(PurgePaths("artcraft-launcher", v040, v041)), 3+4+1+2*len(paths); got != want {
		t.Errorf("paths of a release of six bundles: got %d, want %d", got, want)
	}
}

// artCraft is a release of ArtCraft at version as tauri-action uploads it:
// six updater bundles, each with its signature, one a universal macOS build
// without the version in its name.
func artCraft(v, version string) *release.Release {
	var names []string
	for _, n := range []string{
		"ArtCraft_" + v + "_x64-setup.exe", "ArtCraft_" + v + "_x64_en-US.msi", "ArtCraft_universal.app.tar.gz",
		"ArtCraft_" + v + "_amd64.AppImage", "ArtCraft_" + v + "_amd64.deb", "ArtCraft-" + v + "-1.x86_64.rpm",
	} {
		names = append(names, n, n+".sig")
	}
	r := releaseOf("storytold/artcraft", "artcraft-v"+v, names...)
	r.Version = version
	return r
}

func TestAppImageFile(t *testing.T) {
	for _, arch := range []string{release.ArchX64, release.ArchX86, release.ArchARM64} {
		file, ok := AppImageFile(arch)
		if back, ok2 := AppImageArch(file); !ok || !ok2 || back != arch {
			t.Errorf("AppImageFile(%q) = %q, %v; AppImageArch of it %q, %v", arch, file, ok, back, ok2)
		}
	}
	for _, file := range []string{"x64.zsync", "x86_64", "x86_64.zsync.zsync", "armhf.zsync", ""} {
		if arch, ok := AppImageArch(file); ok {
			t.Errorf("AppImageArch(%q) = %q, want none", file, arch)
		}
	}
	if file, ok := AppImageFile(release.ArchUniversal); ok {
		t.Errorf("AppImageFile(universal) = %q, want none", file)
	}
}

// TestPurgePathsUpdaters: a release change purges the companion files
// either release serves at their feeds' paths, and Squirrel.Mac's path at
// the old release's version for each arch either release has a zip for.
func TestPurgePathsUpdaters(t *testing.T) {
	old := releaseOf("storytold/photocraft", "v1.0.0", "PhotoCraft-1.0.0-arm64-mac.zip", "RELEASES", "photocraft-1.0.0-full.nupkg")
	old.Version = "1.0.0"
	next := releaseOf("storytold/photocraft", "v1.1.0", "PhotoCraft-1.1.0-universal-mac.zip", "RELEASES-arm64", "latest.yml",
		"releases.win.json", "notes.txt")
	next.Version = "1.1.0"
	got := updatesPaths("photocraft", old, next)
	want := []string{
		"/v1/craft_apps/updates/photocraft/squirrel-win/RELEASES",
		"/v1/craft_apps/updates/photocraft/squirrel-win/arm64/RELEASES",
		"/v1/craft_apps/updates/photocraft/electron/latest.yml",
		"/v1/craft_apps/updates/photocraft/velopack/releases.win.json",
		// arm64 from old's own zip; x64 and universal from next's universal one.
		"/v1/craft_apps/updates/photocraft/squirrel-mac/x64/1.0.0",
		"/v1/craft_apps/updates/photocraft/squirrel-mac/arm64/1.0.0",
		"/v1/craft_apps/updates/photocraft/squirrel-mac/universal/1.0.0",
	}
	if !slices.Equal(got, want) {
		t.Errorf("updatesPaths:\n%q\nwant\n%q", got, want)
	}
	if got := updatesPaths("photocraft", nil, next); len(got) != 3 {
		t.Errorf("updatesPaths of a first release: %q, want its three files and no Squirrel.Mac path", got)
	}
}
