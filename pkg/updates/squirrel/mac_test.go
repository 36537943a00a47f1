package squirrel_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/storytold/craft-releases/pkg/release"
	"github.com/storytold/craft-releases/pkg/updates/squirrel"
)

// TestMacZipArch: the zips electron-builder and Electron Forge write for
// Squirrel.Mac, of the release's version, and their arch; anything else is
// none.
func TestMacZipArch(t *testing.T) {
	for _, tc := range []struct{ name, version, arch string }{
		// electron-builder: x64 without its arch by default.
		{"PhotoCraft-1.2.0-mac.zip", "1.2.0", "x64"},
		{"PhotoCraft-1.2.0-x64-mac.zip", "1.2.0", "x64"},
		{"PhotoCraft-1.2.0-arm64-mac.zip", "1.2.0", "arm64"},
		{"PhotoCraft-1.2.0-universal-mac.zip", "1.2.0", "universal"},
		{"Photo.Craft-1.2.0-beta.1-arm64-mac.zip", "1.2.0-beta.1", "arm64"},
		{"photo-craft-2-1.2.0+build.5-mac.zip", "1.2.0+build.5", "x64"},
		// Electron Forge's zip maker.
		{"PhotoCraft-darwin-x64-1.2.0.zip", "1.2.0", "x64"},
		{"PhotoCraft-darwin-arm64-1.2.0.zip", "1.2.0", "arm64"},
		{"PhotoCraft-darwin-universal-1.2.0.zip", "1.2.0", "universal"},
		{"photo-craft-darwin-arm64-1.2.0-rc.2.zip", "1.2.0-rc.2", "arm64"},
		// The release's version, after one leading "v".
		{"PhotoCraft-1.2.0-mac.zip", "v1.2.0", "x64"},
		// None.
		{"PhotoCraft-1.1.0-mac.zip", "1.2.0", ""},
		{"PhotoCraft-darwin-arm64-1.1.0.zip", "1.2.0", ""},
		{"PhotoCraft-1.2.0-beta.1-mac.zip", "1.2.0", ""},
		{"PhotoCraft-v1.2.0-mac.zip", "1.2.0", ""},
		{"PhotoCraft-1.2.0-mac.zip", "vv1.2.0", ""},
		{"PhotoCraft-1.2.0-mac.zip", "", ""},
		{"-1.2.0-mac.zip", "1.2.0", ""},
		{"-darwin-x64-1.2.0.zip", "1.2.0", ""},
		{"1.2.0-mac.zip", "1.2.0", ""},
		{"PhotoCraft-1.2.0-x86-mac.zip", "1.2.0", ""},
		{"PhotoCraft-1.2.0-ARM64-mac.zip", "1.2.0", ""},
		{"PhotoCraft-1.2.0-MAC.zip", "1.2.0", ""},
		{"PhotoCraft-1.2.0-mac.ZIP", "1.2.0", ""},
		{"PhotoCraft-1.2.0-mac.zip.blockmap", "1.2.0", ""},
		{"PhotoCraft-1.2.0-arm64.dmg", "1.2.0", ""},
		{"PhotoCraft-1.2.0.dmg", "1.2.0", ""},
		{"PhotoCraft-mas-arm64-1.2.0.zip", "1.2.0", ""},
		{"PhotoCraft-win32-x64-1.2.0.zip", "1.2.0", ""},
		{"PhotoCraft-linux-x64-1.2.0.zip", "1.2.0", ""},
		{"PhotoCraft-darwin-aarch64-1.2.0.zip", "1.2.0", ""},
		{"PhotoCraft-1.2.0-win.zip", "1.2.0", ""},
		{"photocraft-1.2.0-macos-arm64.zip", "1.2.0", ""}, // the Craft naming: no Squirrel zip
		{"Photo\u202eCraft-1.2.0-mac.zip", "1.2.0", ""},
	} {
		if arch, ok := squirrel.MacZipArch(tc.name, tc.version); arch != tc.arch || ok != (tc.arch != "") {
			t.Errorf("MacZipArch(%q, %q) = %q, %v; want %q", tc.name, tc.version, arch, ok, tc.arch)
		}
	}
}

// macRelease returns release v1.2.0 (version version) with these assets,
// in this order.
func macRelease(version string, names ...string) *release.Release {
	r := newRelease(version, nil)
	for _, name := range names {
		r.Assets = append(r.Assets, release.Asset{Name: name, SizeBytes: 1, DownloadURL: url(name)})
	}
	return r
}

// TestMacUpdate: for each arch, the zip an app installs from releases of
// either tool: its own arch, else universal for x64 and arm64; or the 404
// naming what is missing.
func TestMacUpdate(t *testing.T) {
	builder := []string{"PhotoCraft-1.2.0-arm64-mac.zip", "PhotoCraft-1.2.0-arm64-mac.zip.blockmap", "PhotoCraft-1.2.0-arm64.dmg", "PhotoCraft-1.2.0-mac.zip", "latest-mac.yml"}
	forge := []string{"PhotoCraft-darwin-x64-1.2.0.zip", "PhotoCraft-darwin-arm64-1.2.0.zip", "PhotoCraft-1.2.0-x64.dmg"}
	for _, tc := range []struct {
		name   string
		assets []string
		want   map[string]string // by arch: the zip, or "" for the 404
	}{
		{"electron-builder, x64 and arm64", builder, map[string]string{"x64": "PhotoCraft-1.2.0-mac.zip", "arm64": "PhotoCraft-1.2.0-arm64-mac.zip", "universal": ""}},
		{"Electron Forge, x64 and arm64", forge, map[string]string{"x64": "PhotoCraft-darwin-x64-1.2.0.zip", "arm64": "PhotoCraft-darwin-arm64-1.2.0.zip", "universal": ""}},
		{"universal only, for every arch", []string{"PhotoCraft-1.2.0-universal.dmg", "PhotoCraft-1.2.0-universal-mac.zip"}, map[string]string{"x64": "PhotoCraft-1.2.0-universal-mac.zip", "arm64": "PhotoCraft-1.2.0-universal-mac.zip", "universal": "PhotoCraft-1.2.0-universal-mac.zip"}},
		{"Forge universal", []string{"PhotoCraft-darwin-universal-1.2.0.zip"}, map[string]string{"x64": "PhotoCraft-darwin-universal-1.2.0.zip", "arm64": "PhotoCraft-darwin-universal-1.2.0.zip", "universal": "PhotoCraft-darwin-universal-1.2.0.zip"}},
		{"an arch's own after universal", []string{"PhotoCraft-1.2.0-universal-mac.zip", "PhotoCraft-1.2.0-arm64-mac.zip"}, map[string]string{"x64": "PhotoCraft-1.2.0-universal-mac.zip", "arm64": "PhotoCraft-1.2.0-arm64-mac.zip", "universal": "PhotoCraft-1.2.0-universal-mac.zip"}},
		{"the first of two", []string{"PhotoCraft-darwin-arm64-1.2.0.zip", "PhotoCraft-1.2.0-arm64-mac.zip"}, map[string]string{"x64": "", "arm64": "PhotoCraft-darwin-arm64-1.2.0.zip", "universal": ""}},
		{"x64 only", []string{"PhotoCraft-1.2.0-x64-mac.zip"}, map[string]string{"x64": "PhotoCraft-1.2.0-x64-mac.zip", "arm64": "", "universal": ""}},
		{"zips of another version", []string{"PhotoCraft-1.1.0-mac.zip", "PhotoCraft-darwin-arm64-1.1.0.zip"}, map[string]string{"x64": "", "arm64": "", "universal": ""}},
		{"no macOS zip", []string{"PhotoCraft-1.2.0.dmg", "PhotoCraft-1.2.0-full.nupkg", "RELEASES"}, map[string]string{"x64": "", "arm64": "", "universal": ""}},
	} {
		for _, arch := range []string{"x64", "arm64", "universal"} {
			u, err := squirrel.MacUpdate(app, macRelease("1.2.0", tc.assets...), arch)
			if want := tc.want[arch]; want == "" {
				if wantErr := "photocraft v1.2.0 has no macOS zip for " + arch; err == nil || err.Error() != wantErr {
					t.Errorf("%s, %s: MacUpdate = %+v, %v; want the error %q", tc.name, arch, u, err, wantErr)
				}
			} else if err != nil || u.URL != url(want) {
				t.Errorf("%s, %s: MacUpdate = %+v, %v; want %s", tc.name, arch, u, err, want)
			}
		}
	}
}

// TestMacUpdateJSON: the 200 as Squirrel.Mac reads it: url, name, notes
// and pub_date in whole seconds, or without pub_date when unknown; the
// tag names a release without a name.
func TestMacUpdateJSON(t *testing.T) {
	rel := macRelease("1.2.0", "PhotoCraft-1.2.0-mac.zip")
	rel.PublishedAt = release.NewTime(time.Date(2026, 3, 1, 12, 0, 0, 250_000_000, time.FixedZone("CET", 3600)))
	u, err := squirrel.MacUpdate(app, rel, "x64")
	must(t, err)
	want := `{"url":"https://github.com/storytold/photocraft/releases/download/v1.2.0/PhotoCraft-1.2.0-mac.zip","name":"PhotoCraft 1.2.0","notes":"## Changes\n\n- faster","pub_date":"2026-03-01T11:00:00Z"}`
	if got := mustJSON(t, u); got != want {
		t.Errorf("MacUpdate = %s\nwant %s", got, want)
	}
	rel.PublishedAt, rel.Name = nil, ""
	u, err = squirrel.MacUpdate(app, rel, "x64")
	must(t, err)
	want = `{"url":"https://github.com/storytold/photocraft/releases/download/v1.2.0/PhotoCraft-1.2.0-mac.zip","name":"v1.2.0","notes":"## Changes\n\n- faster"}`
	if got := mustJSON(t, u); got != want {
		t.Errorf("MacUpdate = %s\nwant %s", got, want)
	}
}

func mustJSON(t testing.TB, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	must(t, err)
	return string(b)
}

// TestMacUpdateRefuses: the 404s whatever the zips.
func TestMacUpdateRefuses(t *testing.T) {
	zips := []string{"PhotoCraft-1.2.0-universal-mac.zip", "PhotoCraft-nightly-universal-mac.zip"}
	for _, tc := range []struct {
		name string
		rel  *release.Release
		arch string
		want string
	}{
		{"no release", nil, "x64", "photocraft has no release on GitHub"},
		{"version not SemVer", macRelease("nightly", zips...), "x64", "photocraft v1.2.0 has no SemVer version"},
		{"version after two v", macRelease("vv1.2.0", zips...), "x64", "photocraft v1.2.0 has no SemVer version"},
		{"Tauri's arch", macRelease("1.2.0", zips...), "aarch64", "unknown arch: want x64, arm64 or universal"},
		{"arch in capitals", macRelease("1.2.0", zips...), "ARM64", "unknown arch: want x64, arm64 or universal"},
		{"no arch", macRelease("1.2.0", zips...), "", "unknown arch: want x64, arm64 or universal"},
	} {
		u, err := squirrel.MacUpdate(app, tc.rel, tc.arch)
		if err == nil || err.Error() != tc.want {
			t.Errorf("%s: MacUpdate = %+v, %v; want the error %q", tc.name, u, err, tc.want)
		}
	}
}

// TestNewer: a 200 only for an app at a lower version, in SemVer
// precedence (semver's Compare) without build metadata, after at most one
// "v"; a 204 for the same or a higher one; an error for a version that is
// not one.
func TestNewer(t *testing.T) {
	for _, tc := range []struct {
		release, current string
		want             string // "200", "204", or the error
	}{
		{"1.2.0", "1.1.9", "200"},
		{"1.2.0", "1.2.0", "204"},
		{"1.2.0", "v1.2.0", "204"},
		{"1.2.0", "1.3.0", "204"}, // no downgrade
		{"v1.2.0", "1.1.0", "200"},
		{"1.2.0", "1.2.0-beta.1", "200"},
		{"1.2.0-rc.1", "1.2.0", "204"},
		// Build metadata is no part of precedence.
		{"1.2.0+build.5", "1.2.0", "204"},
		{"1.2.0", "1.2.0+build.5", "204"},
		{"1.2.0+build.6", "1.2.0+build.5", "204"},
		{"1.2.0-rc.1+b", "1.2.0-rc.1", "204"},
		// Not versions.
		{"1.2.0", "", `version "": not SemVer`},
		{"1.2.0", "1.2", `version "1.2": not SemVer`},
		{"1.2.0", "vv1.2.0", `version "vv1.2.0": not SemVer`},
		{"1.2.0", "V1.2.0", `version "V1.2.0": not SemVer`},
		{"1.2.0", "latest", `version "latest": not SemVer`},
	} {
		u, err := squirrel.MacUpdate(app, macRelease(tc.release, "PhotoCraft-darwin-universal-"+strings.TrimPrefix(tc.release, "v")+".zip"), "arm64")
		must(t, err)
		newer, err := u.Newer(tc.current)
		got := map[bool]string{true: "200", false: "204"}[newer]
		if err != nil {
			got = err.Error()
		}
		if got != tc.want {
			t.Errorf("Newer(%q) of %s = %v, %v; want %s", tc.current, tc.release, newer, err, tc.want)
		}
	}
}
