package electron

import (
	"strings"

	"github.com/storytold/craft-releases/pkg/updates/semver"
)

// maxSafeInteger is JavaScript's Number.MAX_SAFE_INTEGER, the largest
// number node-semver takes for a major, minor or patch.
const maxSafeInteger = 1<<53 - 1

// nodeVersion reports whether s is a version node-semver's parse (strict,
// as electron-updater calls it) reads: SemVer 2.0.0 (semver.Parse) after
// an optional "v", at most 256 bytes with it (node-semver's MAX_LENGTH,
// semver.MaxLength), each of MAJOR.MINOR.PATCH at most 2^53 − 1.
// node-semver trims white space first; here white space is refused.
func nodeVersion(s string) bool {
	v, ok := semver.Parse(strings.TrimPrefix(s, "v"))
	return len(s) <= semver.MaxLength && ok && v.CoreAtMost(maxSafeInteger)
}

// numeric reports whether s is a number without leading zeros: "0", or
// ASCII digits not starting with "0".
func numeric(s string) bool {
	return s != "" && strings.Trim(s, "0123456789") == "" && (s == "0" || s[0] != '0')
}
