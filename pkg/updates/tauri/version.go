package tauri

import (
	"cmp"
	"strconv"
	"strings"
)

// maxVersion bounds a version's text, in bytes: a longer one is not read
// (a tag is at most release.MaxTag bytes).
const maxVersion = 256

// Version is a semantic version as tauri-plugin-updater reads one: SemVer
// 2.0.0 as the Rust semver crate parses it, after any leading "v"s.
type Version struct {
	major, minor, patch uint64
	pre, build          string // dot-separated identifiers; "" for none
}

// ParseVersion reads s as the updater reads a version: without its leading
// "v"s (lowercase only), MAJOR.MINOR.PATCH, numbers without leading zeros
// that fit in 64 bits, then optionally "-" and pre-release identifiers
// (numeric ones without leading zeros) and "+" and build identifiers, each
// identifier one or more ASCII letters, digits and "-". Nothing else, white
// space included, is a version; neither is a text over 256 bytes. ok
// reports whether s is one.
func ParseVersion(s string) (v Version, ok bool) {
	if len(s) > maxVersion {
		return Version{}, false
	}
	s = strings.TrimLeft(s, "v")
	// Cut at the first "+", then the first "-": build metadata holds no
	// "+", and the core no "-".
	s, build, hasBuild := strings.Cut(s, "+")
	s, pre, hasPre := strings.Cut(s, "-")
	if hasPre && !identifiers(pre, true) || hasBuild && !identifiers(build, false) {
		return Version{}, false
	}
	for i, n := range [...]*uint64{&v.major, &v.minor, &v.patch} {
		part, rest, more := strings.Cut(s, ".")
		if more != (i < 2) || !numeric(part) {
			return Version{}, false
		}
		var err error
		if *n, err = strconv.ParseUint(part, 10, 64); err != nil {
			return Version{}, false
		}
		s = rest
	}
	v.pre, v.build = pre, build
	return v, true
}

// String returns v as the updater writes its own version, into
// {{current_version}} among others: MAJOR.MINOR.PATCH, then "-" and the
// pre-release identifiers and "+" and the build identifiers when v has
// them; ParseVersion's text without its leading "v"s.
func (v Version) String() string {
	s := strconv.FormatUint(v.major, 10) + "." + strconv.FormatUint(v.minor, 10) + "." + strconv.FormatUint(v.patch, 10)
	if v.pre != "" {
		s += "-" + v.pre
	}
	if v.build != "" {
		s += "+" + v.build
	}
	return s
}

// numeric reports whether s is a number as SemVer writes one: digits, no
// leading zero but "0" itself.
func numeric(s string) bool {
	return s != "" && digits(s) && (s == "0" || s[0] != '0')
}

// identifiers reports whether s, what follows "-" (pre true) or "+", is
// one or more dot-separated identifiers of ASCII letters, digits and "-",
// none empty, and, in a pre-release, none a number with a leading zero.
func identifiers(s string, pre bool) bool {
	for id := range strings.SplitSeq(s, ".") {
		if id == "" || strings.ContainsFunc(id, func(r rune) bool { return !alnum(r) && r != '-' }) {
			return false
		}
		if pre && digits(id) && !numeric(id) {
			return false
		}
	}
	return true
}

func digits(s string) bool {
	return !strings.ContainsFunc(s, func(r rune) bool { return r < '0' || r > '9' })
}

func alnum(r rune) bool { return 'a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' || '0' <= r && r <= '9' }

// Compare returns -1, 0 or 1 as v is lower than, equal to or higher than w
// in the updater's order (the Rust semver crate's): by major, minor and
// patch; a pre-release below its release, pre-releases identifier by
// identifier (numbers numerically and below words, words bytewise, the
// shorter list first); then by build metadata, which SemVer 2.0.0 leaves out
// of precedence but the crate does not: none first, then identifier by
// identifier (numbers by value, then the one with fewer leading zeros
// first, and below words, words bytewise, the shorter list first). So
// 1.0.0 < 1.0.0+1 < 1.0.0+01 < 1.0.0+b, and the updater takes 1.0.0+b as
// an update of 1.0.0.
func (v Version) Compare(w Version) int {
	if c := cmp.Or(cmp.Compare(v.major, w.major), cmp.Compare(v.minor, w.minor), cmp.Compare(v.patch, w.patch)); c != 0 {
		return c
	}
	switch {
	case v.pre == "" && w.pre != "":
		return 1
	case v.pre != "" && w.pre == "":
		return -1
	}
	if c := compareIDs(v.pre, w.pre); c != 0 {
		return c
	}
	switch {
	case v.build == "" && w.build == "":
		return 0
	case v.build == "":
		return -1
	case w.build == "":
		return 1
	}
	return compareIDs(v.build, w.build)
}

// compareIDs compares two non-empty or two empty lists of dot-separated
// identifiers as Compare says.
func compareIDs(a, b string) int {
	for a != "" && b != "" {
		var x, y string
		x, a, _ = strings.Cut(a, ".")
		y, b, _ = strings.Cut(b, ".")
		if c := compareID(x, y); c != 0 {
			return c
		}
	}
	return cmp.Compare(len(a), len(b)) // the list with identifiers left is longer
}

// compareID compares two identifiers: numbers by value (length without
// leading zeros, then digits), then by length (fewer leading zeros first),
// below words, words bytewise.
func compareID(a, b string) int {
	switch da, db := digits(a), digits(b); {
	case da && db:
		ta, tb := strings.TrimLeft(a, "0"), strings.TrimLeft(b, "0")
		return cmp.Or(cmp.Compare(len(ta), len(tb)), strings.Compare(ta, tb), cmp.Compare(len(a), len(b)))
	case da:
		return -1
	case db:
		return 1
	}
	return strings.Compare(a, b)
}
