package tauri_test

import (
	"strings"
	"testing"

	"github.com/storytold/craft-releases/pkg/updates/tauri"
)

// TestParseVersion: what the updater's semver parser reads as a version,
// after leading "v"s, and what it does not; a version's String is its text
// without the "v"s, as the updater writes it.
func TestParseVersion(t *testing.T) {
	for _, tc := range []struct {
		name, s string
		ok      bool
	}{
		{"plain", "1.2.3", true},
		{"zeros", "0.0.0", true},
		{"leading v", "v1.2.3", true},
		{"leading vs", "vvv1.2.3", true},
		{"pre-release", "1.0.0-alpha.1", true},
		{"numeric pre-release", "1.0.0-0.3.7", true},
		{"hyphens in pre-release", "1.0.0-x-y-z.--", true},
		{"build", "1.0.0+20130313144700", true},
		{"pre-release and build", "0.42.0-rc.1+b5", true},
		{"build with leading zeros", "1.0.0+001.0", true},
		{"build with hyphens", "1.0.0+21AF26D3----117B344092BD", true},
		{"largest numbers", "18446744073709551615.18446744073709551615.18446744073709551615", true},

		{"empty", "", false},
		{"only v", "v", false},
		{"capital V", "V1.2.3", false},
		{"one number", "1", false},
		{"two numbers", "1.2", false},
		{"four numbers", "1.2.3.4", false},
		{"leading zero major", "01.2.3", false},
		{"leading zero minor", "1.02.3", false},
		{"leading zero patch", "1.2.03", false},
		{"number too large", "18446744073709551616.0.0", false},
		{"negative", "-1.2.3", false},
		{"plus sign", "+1.2.3", false},
		{"empty pre-release", "1.2.3-", false},
		{"empty build", "1.2.3+", false},
		{"pre-release with a leading zero", "1.2.3-01", false},
		{"empty pre-release identifier", "1.2.3-a..b", false},
		{"empty build identifier", "1.2.3+a..b", false},
		{"underscore", "1.2.3-a_b", false},
		{"two pluses", "1.2.3+a+b", false},
		{"non-ascii", "1.2.3-α", false},
		{"space before", " 1.2.3", false},
		{"space after", "1.2.3 ", false},
		{"plus read as space from a query", "1.8.0 1", false},
		{"line feed", "1.2.3\n", false},
		{"placeholder", "{{current_version}}", false},
		{"tag with a prefix", "artcraft-v0.41.0", false},
		{"over 256 bytes", "1.0.0+" + strings.Repeat("a", 251), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v, ok := tauri.ParseVersion(tc.s)
			if ok != tc.ok {
				t.Errorf("ParseVersion(%q) ok = %v, want %v", tc.s, ok, tc.ok)
			}
			if got, want := v.String(), strings.TrimLeft(tc.s, "v"); ok && got != want {
				t.Errorf("ParseVersion(%q).String() = %q, want %q", tc.s, got, want)
			}
		})
	}
}

// TestCompare: the updater's order, SemVer 2.0.0's precedence with build
// metadata as the last tie-breaker, on versions listed lowest first.
func TestCompare(t *testing.T) {
	ordered := []string{
		"0.9.99", "1.0.0-0", "1.0.0-2", "1.0.0-10", "1.0.0-alpha", "1.0.0-alpha.1", "1.0.0-alpha.beta",
		"1.0.0-beta", "1.0.0-beta.2", "1.0.0-beta.11", "1.0.0-rc.1", "1.0.0-rc.1+b5",
		"1.0.0", "1.0.0+0", "1.0.0+1", "1.0.0+01", "1.0.0+2", "1.0.0+10", "1.0.0+B", "1.0.0+b", "1.0.0+b.1",
		"1.0.1", "1.1.0", "1.10.0", "2.0.0", "10.0.0",
	}
	for i, a := range ordered {
		va, ok := tauri.ParseVersion(a)
		if !ok {
			t.Fatalf("ParseVersion(%q) failed", a)
		}
		for j, b := range ordered {
			vb, _ := tauri.ParseVersion(b)
			if got, want := va.Compare(vb), sign(i-j); got != want {
				t.Errorf("%s Compare %s = %d, want %d", a, b, got, want)
			}
		}
	}
	v, _ := tauri.ParseVersion("v1.0.0+b")
	w, _ := tauri.ParseVersion("1.0.0+b")
	if got := v.Compare(w); got != 0 {
		t.Errorf("v1.0.0+b Compare 1.0.0+b = %d, want 0", got)
	}
}

func sign(n int) int {
	switch {
	case n < 0:
		return -1
	case n > 0:
		return 1
	}
	return 0
}
