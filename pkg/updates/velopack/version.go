package velopack

import (
	"strconv"
	"strings"
)

// maxInt is the largest version number the C# client reads (an int).
const maxInt = 1<<31 - 1

// validVersion reports whether s is a version that both clients read, and
// order, alike: SemVer 2.0.0 as the Rust semver crate parses it, which
// the C# client's SemanticVersion also accepts. That is
// MAJOR.MINOR.PATCH, numbers without leading zeros, then optionally "-"
// and pre-release identifiers (numeric ones without leading zeros) and
// "+" and build identifiers, each identifier one or more ASCII letters,
// digits and "-"; and, for C#, which reads them as an int, every number
// of the core and of the pre-release at most 2^31 − 1. No leading "v", no
// white space, at most 256 bytes.
func validVersion(s string) bool {
	if s == "" || len(s) > maxVersion {
		return false
	}
	// Cut at the first "+", then the first "-", as both clients do: build
	// metadata holds no "+", and the core no "-".
	s, build, hasBuild := strings.Cut(s, "+")
	s, pre, hasPre := strings.Cut(s, "-")
	if hasPre && !identifiers(pre, true) || hasBuild && !identifiers(build, false) {
		return false
	}
	parts := strings.Split(s, ".")
	if len(parts) != 3 {
		return false
	}
	for _, p := range parts {
		if !number(p) {
			return false
		}
	}
	return true
}

// number reports whether s is a number as SemVer writes one (digits, no
// leading zero but "0" itself) that fits the C# client's int.
func number(s string) bool {
	if s == "" || len(s) > 1 && s[0] == '0' || !digits(s) {
		return false
	}
	n, err := strconv.ParseInt(s, 10, 64)
	return err == nil && n <= maxInt
}

// identifiers reports whether s, what follows "-" (pre true) or "+", is
// one or more dot-separated identifiers of ASCII letters, digits and "-",
// none empty, and, in a pre-release, every one of digits only a number.
func identifiers(s string, pre bool) bool {
	for id := range strings.SplitSeq(s, ".") {
		if id == "" || strings.ContainsFunc(id, func(r rune) bool { return !alnumRune(r) && r != '-' }) {
			return false
		}
		if pre && digits(id) && !number(id) {
			return false
		}
	}
	return true
}

func digits(s string) bool {
	return !strings.ContainsFunc(s, func(r rune) bool { return r < '0' || r > '9' })
}

func alnumRune(r rune) bool { return r < 0x80 && alnum(byte(r)) }
