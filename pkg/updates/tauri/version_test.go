package tauri_test

import (
	"strings"
	"testing"

	"github.com/storytold/craft-releases/pkg/updates/tauri"
)

// TestParseVersion: the updater reads a version after its leading "v"s,
// lowercase ones only, and a version's String is its text without the
// "v"s, as the updater writes it; it compares equal to the same without
// them. The grammar is semver.Parse's.
func TestParseVersion(t *testing.T) {
	for _, tc := range []struct {
		name, s string
		ok      bool
	}{
		{"plain", "1.2.3", true},
		{"leading v", "v1.2.3", true},
		{"leading vs", "vvv1.2.3+b", true},

		{"only v", "v", false},
		{"capital V", "V1.2.3", false},
		{"over 256 bytes with its vs", strings.Repeat("v", 252) + "1.0.0", false},
	} {
		v, ok := tauri.ParseVersion(tc.s)
		if ok != tc.ok {
			t.Errorf("%s: ParseVersion(%q) ok = %v, want %v", tc.name, tc.s, ok, tc.ok)
		}
		if got, want := v.String(), strings.TrimLeft(tc.s, "v"); ok && got != want {
			t.Errorf("%s: ParseVersion(%q).String() = %q, want %q", tc.name, tc.s, got, want)
		}
		if w, _ := tauri.ParseVersion(strings.TrimLeft(tc.s, "v")); ok && v.Compare(w) != 0 {
			t.Errorf("%s: ParseVersion(%q) Compare %s = %d, want 0", tc.name, tc.s, w, v.Compare(w))
		}
	}
}
