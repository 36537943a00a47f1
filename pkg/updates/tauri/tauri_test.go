package tauri_test

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/storytold/craft-releases/pkg/release"
	"github.com/storytold/craft-releases/pkg/updates/tauri"
)

const (
	app = "artcraft-launcher"
	tag = "artcraft-v0.41.0"
)

// artCraft is a release of Tauri bundles as tauri-action uploads them. Of
// the signature assets, those in signed are fetched and checked: the feed
// may offer their bundles; the others failed or were refused.
var artCraft = struct{ assets, signed []string }{
	assets: []string{
		// Windows: x64 NSIS and two MSIs, x86 NSIS whose signature failed and
		// an MSI, arm64 NSIS only.
		"ArtCraft_0.41.0_x64-setup.exe", "ArtCraft_0.41.0_x64-setup.exe.sig",
		"ArtCraft_0.41.0_x64_en-US.msi", "ArtCraft_0.41.0_x64_en-US.msi.sig",
		"ArtCraft_0.41.0_x64_fr-FR.msi", "ArtCraft_0.41.0_x64_fr-FR.msi.sig",
		"ArtCraft_0.41.0_x86-setup.exe", "ArtCraft_0.41.0_x86-setup.exe.sig",
		"ArtCraft_0.41.0_x86_en-US.msi", "ArtCraft_0.41.0_x86_en-US.msi.sig",
		"ArtCraft_0.41.0_arm64-setup.exe", "ArtCraft_0.41.0_arm64-setup.exe.sig",
		// macOS: a universal build, then an aarch64 one; a DMG.
		"ArtCraft_universal.app.tar.gz", "ArtCraft_universal.app.tar.gz.sig",
		"ArtCraft_0.41.0_aarch64.app.tar.gz", "ArtCraft_0.41.0_aarch64.app.tar.gz.sig",
		"ArtCraft_0.41.0_universal.dmg",
		// Linux x86_64: all three; aarch64: an rpm whose signature was
		// refused; armhf: a deb only; i386: an AppImage only; riscv64: a deb
		// whose signature is no asset.
		"ArtCraft_0.41.0_amd64.AppImage", "ArtCraft_0.41.0_amd64.AppImage.sig",
		"ArtCraft_0.41.0_amd64.deb", "ArtCraft_0.41.0_amd64.deb.sig",
		"ArtCraft-0.41.0-1.x86_64.rpm", "ArtCraft-0.41.0-1.x86_64.rpm.sig",
		"ArtCraft_0.41.0_aarch64.AppImage", "ArtCraft_0.41.0_aarch64.AppImage.sig",
		"ArtCraft_0.41.0_arm64.deb", "ArtCraft_0.41.0_arm64.deb.sig",
		"ArtCraft-0.41.0-1.aarch64.rpm", "ArtCraft-0.41.0-1.aarch64.rpm.sig",
		"ArtCraft_0.41.0_armhf.deb", "ArtCraft_0.41.0_armhf.deb.sig",
		"ArtCraft_0.41.0_i386.AppImage", "ArtCraft_0.41.0_i386.AppImage.sig",
		"ArtCraft_0.41.0_riscv64.deb",
		// No bundles.
		"latest.json", "SHA256SUMS.txt",
	},
	signed: []string{
		"ArtCraft_0.41.0_x64-setup.exe.sig", "ArtCraft_0.41.0_x64_en-US.msi.sig", "ArtCraft_0.41.0_x64_fr-FR.msi.sig",
		"ArtCraft_0.41.0_x86_en-US.msi.sig", "ArtCraft_0.41.0_arm64-setup.exe.sig",
		"ArtCraft_universal.app.tar.gz.sig", "ArtCraft_0.41.0_aarch64.app.tar.gz.sig",
		"ArtCraft_0.41.0_amd64.AppImage.sig", "ArtCraft_0.41.0_amd64.deb.sig", "ArtCraft-0.41.0-1.x86_64.rpm.sig",
		"ArtCraft_0.41.0_aarch64.AppImage.sig", "ArtCraft_0.41.0_arm64.deb.sig",
		"ArtCraft_0.41.0_armhf.deb.sig", "ArtCraft_0.41.0_i386.AppImage.sig",
		"ArtCraft_0.41.0_riscv64.deb.sig", // fetched once, but no asset of this release
	},
}

// offered is what the feed offers for artCraft, by "target/arch/bundle
// type": every other target, arch and bundle type is a 404.
var offered = map[string]string{
	"windows/x86_64/nsis":     "ArtCraft_0.41.0_x64-setup.exe",
	"windows/x86_64/unknown":  "ArtCraft_0.41.0_x64-setup.exe",
	"windows/x86_64/msi":      "ArtCraft_0.41.0_x64_en-US.msi", // the first of two
	"windows/i686/msi":        "ArtCraft_0.41.0_x86_en-US.msi", // unknown is NSIS, unsigned: a 404
	"windows/aarch64/nsis":    "ArtCraft_0.41.0_arm64-setup.exe",
	"windows/aarch64/unknown": "ArtCraft_0.41.0_arm64-setup.exe",
	"darwin/x86_64/app":       "ArtCraft_universal.app.tar.gz",
	"darwin/x86_64/unknown":   "ArtCraft_universal.app.tar.gz",
	"darwin/aarch64/app":      "ArtCraft_0.41.0_aarch64.app.tar.gz", // its own arch before universal
	"darwin/aarch64/unknown":  "ArtCraft_0.41.0_aarch64.app.tar.gz",
	"linux/x86_64/appimage":   "ArtCraft_0.41.0_amd64.AppImage",
	"linux/x86_64/unknown":    "ArtCraft_0.41.0_amd64.AppImage",
	"linux/x86_64/deb":        "ArtCraft_0.41.0_amd64.deb",
	"linux/x86_64/rpm":        "ArtCraft-0.41.0-1.x86_64.rpm",
	"linux/aarch64/appimage":  "ArtCraft_0.41.0_aarch64.AppImage",
	"linux/aarch64/unknown":   "ArtCraft_0.41.0_aarch64.AppImage",
	"linux/aarch64/deb":       "ArtCraft_0.41.0_arm64.deb",
	"linux/armv7/deb":         "ArtCraft_0.41.0_armhf.deb", // unknown is AppImage: a 404
	"linux/i686/appimage":     "ArtCraft_0.41.0_i386.AppImage",
	"linux/i686/unknown":      "ArtCraft_0.41.0_i386.AppImage",
}

var (
	targets = []string{"windows", "darwin", "linux"}
	arches  = []string{"x86_64", "i686", "aarch64", "armv7", "riscv64"}
	// bundleTypes are what an updater sends, and what the feed reads it
	// as: the placeholder an older updater leaves, and the route without a
	// bundle type, read as unknown.
	bundleTypes = []struct{ sent, read string }{
		{"appimage", "appimage"}, {"deb", "deb"}, {"rpm", "rpm"}, {"app", "app"}, {"msi", "msi"}, {"nsis", "nsis"},
		{"unknown", "unknown"}, {"{{bundle_type}}", "unknown"}, {"", "unknown"},
	}
)

var published = release.NewTime(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))

func newRelease(version string, assets []string) *release.Release {
	r := &release.Release{Tag: tag, Version: version, Name: "ArtCraft 0.41.0", PublishedAt: published,
		HTMLURL: "https://github.com/storytold/artcraft/releases/tag/" + tag, NotesMarkdown: "## Changes\n\n- faster"}
	for _, name := range assets {
		r.Assets = append(r.Assets, release.Asset{Name: name, DownloadURL: release.DownloadURL("storytold/artcraft", tag, name)})
	}
	return r
}

func signatures(names []string) tauri.Signatures {
	s := tauri.Signatures{}
	for _, n := range names {
		s[n] = "c2lnbmF0dXJlIG9m" + n
	}
	return s
}

// TestOffer: on every target × arch × bundle type (and the placeholders),
// the feed offers the signed bundle the updater installs, with the
// release's version, notes and date, or says what is missing.
func TestOffer(t *testing.T) {
	rel, sigs := newRelease("0.41.0", artCraft.assets), signatures(artCraft.signed)
	seen := map[string]bool{}
	for _, target := range targets {
		for _, arch := range arches {
			for _, bundleType := range bundleTypes {
				key := target + "/" + arch + "/" + bundleType.read
				seen[key] = true
				t.Run(target+"/"+arch+"/"+bundleType.sent, func(t *testing.T) {
					u, err := tauri.Offer(app, rel, sigs, tauri.Request{Target: target, Arch: arch, BundleType: bundleType.sent})
					want, ok := offered[key]
					if !ok {
						wantErr := fmt.Sprintf("%s %s has no signed updater bundle for %s %s %s", app, tag, target, arch, bundleType.read)
						if err == nil || err.Error() != wantErr {
							t.Errorf("Offer = %+v, %v; want the error %q", u, err, wantErr)
						}
						return
					}
					must(t, err)
					wantU := tauri.Update{Version: "0.41.0", Notes: rel.NotesMarkdown, PubDate: published,
						URL: release.DownloadURL("storytold/artcraft", tag, want), Signature: sigs[want+".sig"]}
					if got, want := mustJSON(t, u), mustJSON(t, wantU); got != want {
						t.Errorf("Offer = %s, want %s", got, want)
					}
				})
			}
		}
	}
	for key := range offered {
		if !seen[key] {
			t.Errorf("offered[%q]: no such request", key)
		}
	}
}

func mustJSON(t testing.TB, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	must(t, err)
	return string(b)
}

// TestRefuses: what the feed, and latest.json for the cases without a
// request, answer with a 404 whatever the bundles.
func TestRefuses(t *testing.T) {
	sigs := signatures(artCraft.signed)
	windows := &tauri.Request{Target: "windows", Arch: "x86_64", BundleType: "nsis"}
	for _, tc := range []struct {
		name string
		rel  *release.Release
		sigs tauri.Signatures
		req  *tauri.Request // nil: latest.json
		want string
	}{
		{"no release", nil, sigs, windows, "artcraft-launcher has no release on GitHub"},
		{"version not semver", newRelease("nightly", artCraft.assets), sigs, windows, "artcraft-launcher artcraft-v0.41.0 has no SemVer version"},
		{"unknown target", newRelease("0.41.0", artCraft.assets), sigs, &tauri.Request{Target: "macos", Arch: "x86_64", BundleType: "app"}, "unknown target: want darwin, linux or windows"},
		{"target in capitals", newRelease("0.41.0", artCraft.assets), sigs, &tauri.Request{Target: "Windows", Arch: "x86_64", BundleType: "nsis"}, "unknown target: want darwin, linux or windows"},
		{"unknown arch", newRelease("0.41.0", artCraft.assets), sigs, &tauri.Request{Target: "windows", Arch: "x64", BundleType: "nsis"}, "unknown arch: want x86_64, i686, aarch64, armv7 or riscv64"},
		{"bundle type in capitals is unknown", newRelease("0.41.0", []string{"A_1.0.0_x64_en-US.msi", "A_1.0.0_x64_en-US.msi.sig"}), sigs, &tauri.Request{Target: "windows", Arch: "x86_64", BundleType: "MSI"}, "artcraft-launcher artcraft-v0.41.0 has no signed updater bundle for windows x86_64 unknown"},
		{"latest.json of no release", nil, nil, nil, "artcraft-launcher has no release on GitHub"},
		{"latest.json of a version not semver", newRelease("nightly", artCraft.assets), sigs, nil, "artcraft-launcher artcraft-v0.41.0 has no SemVer version"},
		{"latest.json without a signature fetched", newRelease("0.41.0", artCraft.assets), nil, nil, "artcraft-launcher artcraft-v0.41.0 has no signed updater bundle"},
	} {
		var got any
		var err error
		if tc.req != nil {
			got, err = tauri.Offer(app, tc.rel, tc.sigs, *tc.req)
		} else {
			got, err = tauri.Static(app, tc.rel, tc.sigs)
		}
		if err == nil || err.Error() != tc.want {
			t.Errorf("%s: got %+v, %v; want the error %q", tc.name, got, err, tc.want)
		}
	}
}

// TestNewer: the endpoint answers 204 exactly when the updater would not
// update: current_version is a version not lower than the release's, in
// the updater's order (semver's Compare), build metadata included.
func TestNewer(t *testing.T) {
	for _, tc := range []struct {
		name, release, current string
		newer                  bool
	}{
		{"older", "0.41.0", "0.40.9", true},
		{"same", "0.41.0", "0.41.0", false},
		{"same with v", "0.41.0", "v0.41.0", false},
		{"newer installed", "0.41.0", "0.42.0", false},
		{"build added", "0.41.0+b1", "0.41.0", true},
		{"build installed", "0.41.0", "0.41.0+b1", false},
		{"not a version", "0.41.0", "garbage", true},
		{"empty", "0.41.0", "", true},
		{"placeholder", "0.41.0", "{{current_version}}", true},
		{"plus decoded as space", "0.41.0", "0.41.0 1", true},
	} {
		rel := newRelease(tc.release, []string{"A_x64-setup.exe", "A_x64-setup.exe.sig"})
		u, err := tauri.Offer(app, rel, signatures([]string{"A_x64-setup.exe.sig"}), tauri.Request{Target: "windows", Arch: "x86_64", BundleType: "nsis"})
		must(t, err)
		if got := u.Newer(tc.current); got != tc.newer {
			t.Errorf("%s: release %s, current %q: Newer = %v, want %v", tc.name, tc.release, tc.current, got, tc.newer)
		}
	}
}

// TestStatic: latest.json holds, under "{os}-{arch}" and
// "{os}-{arch}-{bundle}", exactly what the dynamic endpoint offers for
// bundle type unknown and for each bundle type.
func TestStatic(t *testing.T) {
	rel, sigs := newRelease("0.41.0", artCraft.assets), signatures(artCraft.signed)
	m, err := tauri.Static(app, rel, sigs)
	must(t, err)
	want := map[string]tauri.Platform{}
	for key, name := range offered {
		parts := strings.Split(key, "/")
		k := parts[0] + "-" + parts[1]
		if parts[2] != "unknown" {
			k += "-" + parts[2]
		}
		want[k] = tauri.Platform{URL: release.DownloadURL("storytold/artcraft", tag, name), Signature: sigs[name+".sig"]}
	}
	for k, p := range want {
		if m.Platforms[k] != p {
			t.Errorf("platforms[%q] = %+v, want %+v", k, m.Platforms[k], p)
		}
	}
	for k := range m.Platforms {
		if _, ok := want[k]; !ok {
			t.Errorf("platforms[%q] = %+v, want no such key", k, m.Platforms[k])
		}
	}
	if m.Version != "0.41.0" || m.Notes != rel.NotesMarkdown || m.PubDate != published {
		t.Errorf("Static = {%q %q %v}, want the release's version, notes and date", m.Version, m.Notes, m.PubDate)
	}
}

// TestJSON: the two answers' bytes, with the keys the updater reads and
// pub_date in RFC 3339.
func TestJSON(t *testing.T) {
	rel := newRelease("v0.42.0-rc.1+b5", []string{"A_universal.app.tar.gz", "A_universal.app.tar.gz.sig"})
	sigs := signatures([]string{"A_universal.app.tar.gz.sig"})
	u, err := tauri.Offer(app, rel, sigs, tauri.Request{Target: "darwin", Arch: "aarch64", BundleType: "app"})
	must(t, err)
	m, err := tauri.Static(app, rel, sigs)
	must(t, err)
	url := `"https://github.com/storytold/artcraft/releases/download/artcraft-v0.41.0/A_universal.app.tar.gz"`
	sig := `"c2lnbmF0dXJlIG9mA_universal.app.tar.gz.sig"`
	platform := `{"url":` + url + `,"signature":` + sig + `}`
	for _, tc := range []struct {
		name string
		v    any
		want string
	}{
		{"update", u, `{"version":"0.42.0-rc.1+b5","notes":"## Changes\n\n- faster","pub_date":"2026-03-01T12:00:00Z","url":` + url + `,"signature":` + sig + `}`},
		{"latest.json", m, `{"version":"0.42.0-rc.1+b5","notes":"## Changes\n\n- faster","pub_date":"2026-03-01T12:00:00Z","platforms":{"darwin-aarch64":` + platform + `,"darwin-aarch64-app":` + platform + `,"darwin-x86_64":` + platform + `,"darwin-x86_64-app":` + platform + `}}`},
	} {
		if got := mustJSON(t, tc.v); got != tc.want {
			t.Errorf("%s: JSON\n got %s\nwant %s", tc.name, got, tc.want)
		}
	}
}

// TestCompanions: the signature assets to fetch for a release are those of
// its updater bundles, in asset order; no signature of another file.
func TestCompanions(t *testing.T) {
	rel := newRelease("0.41.0", []string{
		"ArtCraft_0.41.0_universal.dmg", "ArtCraft_0.41.0_universal.dmg.sig", // no updater bundle
		"ArtCraft_0.41.0_x64-setup.exe.sig", "ArtCraft_0.41.0_x64-setup.exe", // signature listed first
		"ArtCraft_0.41.0_amd64.deb", // no signature
		"ArtCraft_universal.app.tar.gz", "ArtCraft_universal.app.tar.gz.sig",
		"ArtCraft_0.41.0_x64-setup.exe.sig.sig", "latest.json",
	})
	got := tauri.Companions(rel)
	want := []string{"ArtCraft_0.41.0_x64-setup.exe.sig", "ArtCraft_universal.app.tar.gz.sig"}
	if !slices.Equal(got, want) {
		t.Errorf("Companions = %q, want %q", got, want)
	}
	if got := tauri.Companions(nil); got != nil {
		t.Errorf("Companions(nil) = %q, want none", got)
	}
}

// TestAwaiting: a request waits for a signature exactly when the release
// has a bundle for it whose signature asset is published but not in hand.
func TestAwaiting(t *testing.T) {
	rel, sigs := newRelease("0.41.0", artCraft.assets), signatures(artCraft.signed)
	for _, tc := range []struct {
		req  string
		want bool
	}{
		{"windows/i686/unknown", true},   // the x86 NSIS: its signature failed
		{"linux/aarch64/rpm", true},      // refused
		{"windows/x86_64/nsis", false},   // signed
		{"linux/riscv64/deb", false},     // its signature is no asset
		{"linux/armv7/unknown", false},   // no AppImage for armv7
		{"darwin/x86_64/unknown", false}, // universal, signed
		{"beos/x86_64/", false},          // an unknown target
	} {
		parts := strings.Split(tc.req, "/")
		req := tauri.Request{Target: parts[0], Arch: parts[1], BundleType: parts[2]}
		if got := tauri.Awaiting(rel, sigs, req); got != tc.want {
			t.Errorf("Awaiting(%s) = %v, want %v", tc.req, got, tc.want)
		}
	}
	if tauri.Awaiting(nil, sigs, tauri.Request{Target: "windows", Arch: "x86_64"}) {
		t.Error("Awaiting(nil release) = true")
	}
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
