package tauri_test

import (
	"slices"
	"testing"

	"github.com/storytold/craft-releases/pkg/release"
	"github.com/storytold/craft-releases/pkg/updates/tauri"
)

// TestRequests: the requests a release has a bundle for are every concrete
// one its bundles serve, signed or not, a universal build on both Mac
// arches, each once and in a fixed order; so every request the feed offers
// a bundle for is among them, or reads as one (unknown as the target's
// DefaultBundleType).
func TestRequests(t *testing.T) {
	rel := newRelease("0.41.0", artCraft.assets)
	var got []string
	for _, r := range tauri.Requests(rel) {
		got = append(got, r.Target+"/"+r.Arch+"/"+r.BundleType)
	}
	want := []string{
		"darwin/x86_64/app", "darwin/aarch64/app", // universal, and aarch64's own
		"linux/x86_64/appimage", "linux/x86_64/deb", "linux/x86_64/rpm",
		"linux/i686/appimage",
		"linux/aarch64/appimage", "linux/aarch64/deb", "linux/aarch64/rpm", // the rpm's signature refused
		"linux/armv7/deb",
		"linux/riscv64/deb",                         // its signature no asset
		"windows/x86_64/nsis", "windows/x86_64/msi", // two MSIs
		"windows/i686/nsis", "windows/i686/msi", // the NSIS's signature failed
		"windows/aarch64/nsis",
	}
	if !slices.Equal(got, want) {
		t.Errorf("Requests:\n%q\nwant\n%q", got, want)
	}
	sigs := signatures(artCraft.signed)
	for _, target := range targets {
		for _, arch := range arches {
			for _, bt := range bundleTypes {
				req := tauri.Request{Target: target, Arch: arch, BundleType: bt.sent}
				if _, err := tauri.Offer(app, rel, sigs, req); err != nil {
					continue
				}
				read := bt.read
				if read == tauri.BundleUnknown {
					read = tauri.DefaultBundleType(target)
				}
				if k := target + "/" + arch + "/" + read; !slices.Contains(got, k) {
					t.Errorf("Offer(%s/%s/%q) offers a bundle, but %s is not among the Requests", target, arch, bt.sent, k)
				}
			}
		}
	}

	// No bundles, no assets, no release.
	for i, rel := range []*release.Release{newRelease("0.41.0", []string{"ArtCraft_0.41.0_universal.dmg", "latest.json", "SHA256SUMS.txt"}), newRelease("0.41.0", nil), nil} {
		if got := tauri.Requests(rel); got != nil {
			t.Errorf("Requests of release %d = %v, want none", i, got)
		}
	}
}

// TestDefaultBundleType: the bundle type unknown reads as on each target (as
// Offer gives it: TestOffer's unknown requests); a target the updater never
// sends has none.
func TestDefaultBundleType(t *testing.T) {
	for _, tc := range []struct{ target, want string }{
		{"windows", "nsis"}, {"linux", "appimage"}, {"darwin", "app"}, {"freebsd", ""}, {"", ""},
	} {
		if got := tauri.DefaultBundleType(tc.target); got != tc.want {
			t.Errorf("DefaultBundleType(%q) = %q, want %q", tc.target, got, tc.want)
		}
	}
}
