package electron

import (
	"strconv"
	"strings"
)

// maxVersion is node-semver's MAX_LENGTH: a longer version is refused.
const maxVersion = 256

// maxSafeInteger is JavaScript's Number.MAX_SAFE_INTEGER, the largest
// number node-semver takes for a major, minor or patch.
const maxSafeInteger = 1<<53 - 1

// semver reports whether s is a version node-semver's parse (strict, as
// electron-updater calls it) reads: an optional "v", MAJOR.MINOR.PATCH
// (numbers without leading zeros, each at most 2^53 − 1), then optionally
// "-" and pre-release identifiers (numeric ones without leading zeros) and
// "+" and build identifiers, each one or more ASCII letters, digits and
// "-"; at most 256 bytes. node-semver trims white space first; here white
// space is refused.
func semver(s string) bool {
	if len(s) > maxVersion {
		return false
	}
	s = strings.TrimPrefix(s, "v")
	// The build holds no "+", and the core no "-".
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
		if !numeric(p) {
			return false
		}
		if n, err := strconv.ParseUint(p, 10, 64); err != nil || n > maxSafeInteger {
			return false
		}
	}
	return true
}

// identifiers reports whether s is dot-separated identifiers of ASCII
// letters, digits and "-", none empty; with pre, an all-digit one has no
// leading zero.
func identifiers(s string, pre bool) bool {
	for id := range strings.SplitSeq(s, ".") {
		if id == "" || strings.Trim(id, "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ-") != "" {
			return false
		}
		if pre && strings.Trim(id, "0123456789") == "" && !numeric(id) {
			return false
		}
	}
	return true
}

// numeric reports whether s is a number without leading zeros: "0", or
// ASCII digits not starting with "0".
func numeric(s string) bool {
	return s != "" && strings.Trim(s, "0123456789") == "" && (s == "0" || s[0] != '0')
}
