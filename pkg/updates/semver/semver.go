// Package semver reads versions in the grammar of Semantic Versioning 2.0.0
// and orders them as the Rust semver crate does. It is the grammar every
// updater feed shares; each feed applies what its client adds on top, such
// as leading "v"s or the largest number the client reads (docs/updates.md).
package semver

import (
	"cmp"
	"strconv"
	"strings"
)

// MaxLength bounds a version's text, in bytes: Parse reads no longer one
// (a tag is at most release.MaxTag bytes).
const MaxLength = 256

// Version is a SemVer 2.0.0 version. Its zero value is 0.0.0.
type Version struct {
	major, minor, patch uint64
	pre, build          string // dot-separated identifiers; "" for none
}

// Parse reads s as a SemVer 2.0.0 version: MAJOR.MINOR.PATCH, numbers
// without leading zeros that fit in 64 bits, then optionally "-" and
// pre-release identifiers (numeric ones without leading zeros) and "+" and
// build identifiers, each identifier one or more ASCII letters, digits and
// "-". Nothing else is a version: no leading "v", no white space, no text
// over MaxLength bytes. ok reports whether s is one.
func Parse(s string) (v Version, ok bool) {
	if len(s) > MaxLength {
		return Version{}, false
	}
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

// String returns v as SemVer writes it: MAJOR.MINOR.PATCH, then "-" and
// the pre-release identifiers and "+" and the build identifiers when v has
// them; the text Parse read.
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

// WithoutBuild returns v without its build metadata: the version SemVer
// 2.0.0's precedence compares, which leaves build metadata out.
func (v Version) WithoutBuild() Version {
	v.build = ""
	return v
}

// CoreAtMost reports whether v's major, minor and patch are each at most
// n.
func (v Version) CoreAtMost(n uint64) bool {
	return max(v.major, v.minor, v.patch) <= n
}

// PreAtMost reports whether every numeric identifier of v's pre-release is
// at most n; it is true for a version without a pre-release.
func (v Version) PreAtMost(n uint64) bool {
	if v.pre == "" {
		return true
	}
	for id := range strings.SplitSeq(v.pre, ".") {
		if !digits(id) {
			continue
		}
		if x, err := strconv.ParseUint(id, 10, 64); err != nil || x > n {
			return false
		}
	}
	return true
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
// in the Rust semver crate's order: by major, minor and patch; a
// pre-release below its release, pre-releases identifier by identifier
// (numbers numerically and below words, words bytewise, the shorter list
// first); then by build metadata, which SemVer 2.0.0 leaves out of
// precedence but the crate does not: none first, then identifier by
// identifier (numbers by value, then the one with fewer leading zeros
// first, and below words, words bytewise, the shorter list first). So
// 1.0.0 < 1.0.0+1 < 1.0.0+01 < 1.0.0+b. For SemVer 2.0.0's precedence,
// compare versions WithoutBuild.
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
