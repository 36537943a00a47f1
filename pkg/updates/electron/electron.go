// Package electron is the electron-updater feed (electron-builder's generic
// provider): which release assets are its channel files (latest.yml and
// the like), how such a file is read and refused the way electron-updater
// reads it, whether every download it names is an asset of the release it
// came with, and the file as served, with each relative download made the
// asset's absolute GitHub URL and every other byte the publisher's. It is
// pure: the caller fetches and stores the files, and serves what Absolute
// returns (docs/updates.md). Everything is safe for concurrent use.
package electron

import "strings"

// MaxFile bounds a channel file, in bytes: electron-builder writes well
// under a kilobyte per download, so a bigger file is refused unread.
const MaxFile = 64 << 10

// maxChannel bounds a channel's name, in bytes.
const maxChannel = 32

// IsChannelFile reports whether name is the name of a channel file
// electron-builder publishes and electron-updater requests:
//
//	<channel>.yml                 Windows
//	<channel>-mac.yml             macOS
//	<channel>-linux.yml           Linux x64
//	<channel>-linux-<arch>.yml    Linux ia32, arm (armv7l) or arm64
//
// where channel is "latest", or the name of another channel ("beta", or
// what a pre-release version's first identifier names): 1 to 32 ASCII
// letters and digits, the first a letter. A channel with any other
// character, or an arch the updater never asks for, is not read. Matching
// is exact and case-sensitive.
func IsChannelFile(name string) bool {
	base, ok := strings.CutSuffix(name, ".yml")
	if !ok {
		return false
	}
	channel, platform, hasPlatform := strings.Cut(base, "-")
	if !goodChannel(channel) {
		return false
	}
	switch platform {
	case "":
		return !hasPlatform
	case "mac", "linux", "linux-ia32", "linux-arm", "linux-arm64":
		return true
	}
	return false
}

// goodChannel reports whether s may name a channel: 1 to maxChannel ASCII
// letters and digits, the first a letter.
func goodChannel(s string) bool {
	if s == "" || len(s) > maxChannel || !letter(s[0]) {
		return false
	}
	for i := range len(s) {
		if !letter(s[i]) && (s[i] < '0' || s[i] > '9') {
			return false
		}
	}
	return true
}

func letter(c byte) bool { return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' }

// File is a channel file as electron-updater reads it (builder-util-runtime's
// UpdateInfo), the fields this package checks; the file holds others
// (size, blockMapSize, minimumSystemVersion, …) that are served as written.
type File struct {
	Version string     // node-semver's strict form, as written ("1.4.0", "v2.0.0-beta.1")
	Files   []Download // files, in order; empty when the file has only the legacy path

	// Path and SHA512 are the legacy top-level download electron-builder
	// still writes (the first of Files); "" when absent. The updater reads
	// them only when Files is empty.
	Path, SHA512 string

	// Packages are the Windows web installer's packages (packages), in
	// order: one the updater downloads beside the first of Files.
	Packages []Package

	ReleaseDate  string // as written, any scalar; "" when absent
	ReleaseName  string // "" when absent
	ReleaseNotes string // the notes as one text; "" when absent or a list
	// NotesList is the notes as a list, one per version (electron-builder's
	// fullChangelog); nil when absent or a text.
	NotesList []Note

	// StagingPercentage is the share of installs offered the update, 0 to
	// 100; nil when absent (all of them).
	StagingPercentage *int
}

// Download is one entry of File.Files.
type Download struct {
	URL    string // an asset's name (relative) or an absolute URL
	SHA512 string // the base64 of the file's SHA-512, as the publisher wrote it
}

// Package is one entry of File.Packages.
type Package struct {
	Arch   string // its key: "x64", "ia32", "arm64"
	Path   string // an asset's name (relative) or an absolute URL
	SHA512 string // the base64 of the package's SHA-512, as written
}

// Note is one entry of File.NotesList.
type Note struct {
	Version string
	Note    string // "" when null
}
