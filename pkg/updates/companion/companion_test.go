package companion_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/storytold/craft-releases/pkg/minisign"
	"github.com/storytold/craft-releases/pkg/release"
	"github.com/storytold/craft-releases/pkg/updates/companion"
	"github.com/storytold/craft-releases/test/testkit"
)

// tauriRelease is a release of two Tauri bundles with their .sig files, a
// .sig of no bundle, and a file that is no companion.
func tauriRelease() *release.Release {
	r := &release.Release{Tag: "v1.0.0", Version: "1.0.0"}
	for _, n := range []string{"A_1.0.0_x64-setup.exe.sig", "A_1.0.0_x64-setup.exe", "notes.txt.sig", "notes.txt",
		"A_1.0.0_amd64.AppImage", "A_1.0.0_amd64.AppImage.sig", "SHA256SUMS"} {
		r.Assets = append(r.Assets, release.Asset{Name: n})
	}
	return r
}

// TestNames: the companions of every kind (which names each takes: the
// kind's own tests, as tauri.TestCompanions), in the release's order; the
// files a feed serves among them.
func TestNames(t *testing.T) {
	r := &release.Release{Tag: "v1.0.0", Version: "1.0.0"}
	for _, n := range []string{"latest.yml", "A_1.0.0_x64-setup.exe", "RELEASES-arm64", "A_1.0.0_x64-setup.exe.sig", "releases.win.json",
		"ia32.RELEASES", "RELEASES", "latest-mac.yml", "RELEASES.txt", "releases.json"} {
		r.Assets = append(r.Assets, release.Asset{Name: n})
	}
	want := []string{"latest.yml", "RELEASES-arm64", "A_1.0.0_x64-setup.exe.sig", "releases.win.json", "ia32.RELEASES", "RELEASES", "latest-mac.yml"}
	if got := companion.Names(r); strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("Names = %q, want %q", got, want)
	}
	if got, want := companion.Files(r), slices.Delete(slices.Clone(want), 2, 3); strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("Files = %q, want %q (no .sig)", got, want)
	}
	if got := companion.Names(nil); got != nil {
		t.Errorf("Names(nil) = %q", got)
	}
}

// TestCheck: a companion is kept as its client reads it, by the app's key
// when it has one; anything else is refused saying why.
func TestCheck(t *testing.T) {
	rel := tauriRelease()
	k, other := testkit.NewMinisignKey(t), testkit.NewMinisignKey(t)
	pub, err := minisign.ParsePublicKey(k.PublicKey())
	if err != nil {
		t.Fatal(err)
	}
	sig := k.Sign("A_1.0.0_x64-setup.exe", []byte("bundle"))
	for _, tc := range []struct {
		name, asset, body string
		key               *minisign.PublicKey
		want              string // the text kept, or "error: " and what the error says
	}{
		{"a signature, no key", "A_1.0.0_x64-setup.exe.sig", sig + "\n", nil, sig},
		{"a signature by the key", "A_1.0.0_x64-setup.exe.sig", sig, &pub, sig},
		{"a signature by another key", "A_1.0.0_x64-setup.exe.sig", other.Sign("x", []byte("x")), &pub, "error: signed by another key"},
		{"not a signature", "A_1.0.0_x64-setup.exe.sig", "aGVsbG8=", nil, "error: minisign"},
		{"over the bound", "A_1.0.0_x64-setup.exe.sig", strings.Repeat("A", minisign.MaxSignatureText+1), nil, "error: over 4096"},
		{"the .sig of no bundle", "notes.txt.sig", sig, nil, "error: no companion"},
		{"no asset of the release", "B_1.0.0_x64-setup.exe.sig", sig, nil, "error: no companion"},
	} {
		got, err := companion.Check(rel, tc.asset, []byte(tc.body), tc.key)
		if err != nil {
			got = "error: " + err.Error()
		}
		if got != tc.want && !(strings.HasPrefix(tc.want, "error: ") && strings.Contains(got, strings.TrimPrefix(tc.want, "error: "))) {
			t.Errorf("%s: Check = %q, want %q", tc.name, got, tc.want)
		}
	}
	if got := companion.Limit(rel, "A_1.0.0_x64-setup.exe.sig"); got != minisign.MaxSignatureText {
		t.Errorf("Limit(.sig) = %d, want %d", got, minisign.MaxSignatureText)
	}
	if got := companion.Limit(rel, "notes.txt"); got != 0 {
		t.Errorf("Limit(no companion) = %d, want 0", got)
	}
}
