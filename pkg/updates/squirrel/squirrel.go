// Package squirrel is the Squirrel feed of Electron's built-in autoUpdater.
// On Windows, Squirrel.Windows reads a RELEASES file: the package reads one
// as its client does, refuses what the client would refuse or what points
// outside the release, and writes it back with every package's GitHub
// download URL. On macOS, Squirrel.Mac is told which zip to install: the
// package picks the update zip of a release for an arch and says whether an
// app at a given version should take it. It is pure: the caller gives it
// the release and the RELEASES bytes fetched for it, and renders what it
// returns (docs/updates.md). Everything is safe for concurrent use.
package squirrel

import (
	"strconv"
	"strings"
)

// MaxReleases bounds a RELEASES file, in bytes: Parse refuses a longer
// one, and a poller reads no more. A line is about 100 bytes; a file that
// lists every package of years of releases stays far below.
const MaxReleases = 1 << 20

// releasesName is the name Squirrel.Windows gives its feed file, and the
// one its client requests.
const releasesName = "RELEASES"

// The arches, as electron-builder and Electron Forge name them: x64, ia32
// and arm64 on Windows; x64, arm64 and universal, which runs on both, on
// macOS.
const (
	ArchX64       = "x64"
	ArchIA32      = "ia32"
	ArchARM64     = "arm64"
	ArchUniversal = "universal"
)

// windowsArches are the arches a RELEASES asset's name may carry.
var windowsArches = [...]string{ArchX64, ArchIA32, ArchARM64}

// ReleasesArch reads name as the name of a Squirrel.Windows RELEASES asset
// and returns the arch it names: "" for RELEASES itself, which each tool
// writes for a build of one arch (whichever it was), and ArchX64, ArchIA32
// or ArchARM64 for RELEASES-{arch} (electron-builder's name for a second arch)
// or {arch}.RELEASES (Electron Forge's when it publishes several arches).
// Matching is exact and case-sensitive; ok reports whether name is one.
func ReleasesArch(name string) (arch string, ok bool) {
	if name == releasesName {
		return "", true
	}
	for _, a := range windowsArches {
		if name == releasesName+"-"+a || name == a+"."+releasesName {
			return a, true
		}
	}
	return "", false
}

// IsReleases reports whether name is the name of a Squirrel.Windows
// RELEASES asset, of any arch (ReleasesArch).
func IsReleases(name string) bool {
	_, ok := ReleasesArch(name)
	return ok
}

// excerpt is s quoted for an error message, cut to 128 bytes: a
// hostile line may be as long as the file.
func excerpt(s string) string {
	const limit = 128
	if len(s) <= limit {
		return strconv.Quote(s)
	}
	return strconv.Quote(strings.ToValidUTF8(s[:limit], "")) + "…"
}
