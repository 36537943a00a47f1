package semver_test

import (
	"cmp"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/storytold/craft-releases/pkg/updates/semver"
)

// TestParse: what SemVer 2.0.0 reads as a version and what it does not;
// a version's String is its text.
func TestParse(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, s string
		ok      bool
	}{
		{"plain", "1.2.3", true},
		{"zeros", "0.0.0", true},
		{"pre-release", "1.0.0-alpha.1", true},
		{"numeric pre-release", "1.0.0-0.3.7", true},
		{"hyphens in pre-release", "1.0.0-x-y-z.--", true},
		{"build", "1.0.0+20130313144700", true},
		{"pre-release and build", "0.42.0-rc.1+b5", true},
		{"build with leading zeros", "1.0.0+001.0", true},
		{"build with hyphens", "1.0.0+21AF26D3----117B344092BD", true},
		{"largest numbers", "18446744073709551615.18446744073709551615.18446744073709551615", true},
		{"256 bytes", "1.0.0+" + strings.Repeat("a", 250), true},

		{"empty", "", false},
		{"leading v", "v1.2.3", false},
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
		v, ok := semver.Parse(tc.s)
		if ok != tc.ok {
			t.Errorf("%s: Parse(%q) ok = %v, want %v", tc.name, tc.s, ok, tc.ok)
		}
		if got := v.String(); ok && got != tc.s {
			t.Errorf("%s: Parse(%q).String() = %q", tc.name, tc.s, got)
		}
	}
}

// TestCompare: the Rust semver crate's order, SemVer 2.0.0's precedence
// with build metadata as the last tie-breaker, on versions listed lowest
// first.
func TestCompare(t *testing.T) {
	t.Parallel()
	ordered := []string{
		"0.9.99", "1.0.0-0", "1.0.0-2", "1.0.0-10", "1.0.0-alpha", "1.0.0-alpha.1", "1.0.0-alpha.beta",
		"1.0.0-beta", "1.0.0-beta.2", "1.0.0-beta.11", "1.0.0-rc.1", "1.0.0-rc.1+b5",
		"1.0.0", "1.0.0+0", "1.0.0+1", "1.0.0+01", "1.0.0+2", "1.0.0+10", "1.0.0+B", "1.0.0+b", "1.0.0+b.1",
		"1.0.1", "1.1.0", "1.10.0", "2.0.0", "10.0.0",
	}
	for i, a := range ordered {
		va := mustParse(t, a)
		for j, b := range ordered {
			if got, want := va.Compare(mustParse(t, b)), cmp.Compare(i, j); got != want {
				t.Errorf("%s Compare %s = %d, want %d", a, b, got, want)
			}
		}
	}
}

// TestWithoutBuild: a version without its build metadata, which SemVer
// 2.0.0's precedence leaves out.
func TestWithoutBuild(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ s, want string }{{"1.2.0", "1.2.0"}, {"1.2.0+b", "1.2.0"}, {"1.2.0-rc.1+b.5", "1.2.0-rc.1"}} {
		if got := mustParse(t, tc.s).WithoutBuild().String(); got != tc.want {
			t.Errorf("%s WithoutBuild = %s, want %s", tc.s, got, tc.want)
		}
	}
}

// TestAtMost: the bounds a client may put on the numbers of the core and
// of the pre-release, each up to and including its limit; build metadata
// is never bounded.
func TestAtMost(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		s         string
		n         uint64
		core, pre bool
	}{
		{"1.2.3", 3, true, true},
		{"4.2.3", 3, false, true},
		{"1.4.3", 3, false, true},
		{"1.2.4", 3, false, true},
		{"1.2.3-rc.3.x", 3, true, true},
		{"1.2.3-rc.4", 3, true, false},
		{"1.2.3-4.rc", 3, true, false},
		{"1.2.3-4a", 3, true, true},
		{"1.2.3-18446744073709551616", 1<<64 - 1, true, false},
		{"1.2.3+4", 3, true, true},
	} {
		v := mustParse(t, tc.s)
		if got := v.CoreAtMost(tc.n); got != tc.core {
			t.Errorf("%s CoreAtMost(%d) = %v, want %v", tc.s, tc.n, got, tc.core)
		}
		if got := v.PreAtMost(tc.n); got != tc.pre {
			t.Errorf("%s PreAtMost(%d) = %v, want %v", tc.s, tc.n, got, tc.pre)
		}
	}
}

// semverOrg is the regular expression semver.org gives for SemVer 2.0.0.
var semverOrg = regexp.MustCompile(`^(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)` +
	`(?:-((?:0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*)(?:\.(?:0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*))*))?` +
	`(?:\+([0-9a-zA-Z-]+(?:\.[0-9a-zA-Z-]+)*))?$`)

// FuzzParse: Parse reads exactly what semver.org's regular expression
// matches, up to MaxLength bytes and with numbers of 64 bits; what it
// reads, String writes back, and Compare orders it equal to itself only,
// and the other way round from another version.
func FuzzParse(f *testing.F) {
	for _, s := range []string{"1.2.3", "v1.2.3", "1.0.0-rc.1+b.01", "1.0.0-0a.-", "01.0.0", "1.0.0+", "18446744073709551616.0.0"} {
		f.Add(s, "1.0.0+1")
	}
	f.Fuzz(func(t *testing.T, s, other string) {
		v, ok := semver.Parse(s)
		m := semverOrg.FindStringSubmatch(s)
		want := len(s) <= semver.MaxLength && m != nil && fits(m[1]) && fits(m[2]) && fits(m[3])
		if ok != want {
			t.Fatalf("Parse(%q) ok = %v, want %v", s, ok, want)
		}
		if !ok {
			return
		}
		if got := v.String(); got != s {
			t.Fatalf("Parse(%q).String() = %q", s, got)
		}
		if c := v.Compare(v); c != 0 {
			t.Fatalf("%s Compare itself = %d", s, c)
		}
		if w, ok := semver.Parse(other); ok {
			if c, d := v.Compare(w), w.Compare(v); c != -d || (c == 0) != (s == other) {
				t.Fatalf("%s Compare %s = %d, the other way %d", s, other, c, d)
			}
		}
	})
}

func fits(n string) bool {
	_, err := strconv.ParseUint(n, 10, 64)
	return err == nil
}

func mustParse(t testing.TB, s string) semver.Version {
	t.Helper()
	v, ok := semver.Parse(s)
	if !ok {
		t.Fatalf("Parse(%q) failed", s)
	}
	return v
}
