package tauri

import (
	"strings"

	"github.com/storytold/craft-releases/pkg/updates/semver"
)

// ParseVersion reads s as tauri-plugin-updater reads a version: SemVer
// 2.0.0 (semver.Parse) after its leading "v"s, lowercase only, any number
// of them; a text over semver.MaxLength bytes, its "v"s included, is none.
// ok reports whether s is one. The version's String is s without its
// "v"s, as the updater writes its own version into {{current_version}}.
func ParseVersion(s string) (v semver.Version, ok bool) {
	if len(s) > semver.MaxLength {
		return semver.Version{}, false
	}
	return semver.Parse(strings.TrimLeft(s, "v"))
}
