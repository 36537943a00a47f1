package electron_test

import (
	"crypto/sha512"
	"encoding/base64"
	"strings"
	"testing"

	"github.com/storytold/craft-releases/pkg/release"
	"github.com/storytold/craft-releases/pkg/updates/electron"
)

const (
	repo = "storytold/craft"
	tag  = "v1.4.0"
)

// The assets of craft: what electron-builder uploads for Windows (NSIS, and
// the web installer with its packages), macOS (a zip and a DMG per arch)
// and Linux (an AppImage per arch), with their channel files.
var assets = []string{
	"Craft-Setup-1.4.0.exe", "Craft-Setup-1.4.0.exe.blockmap",
	"Craft-Web-Setup-1.4.0.exe", "craft-1.4.0-x64.nsis.7z", "craft-1.4.0-arm64.nsis.7z",
	"Craft-1.4.0-arm64-mac.zip", "Craft-1.4.0-arm64.dmg", "Craft-1.4.0-mac.zip", "Craft-1.4.0.dmg",
	"Craft-1.4.0.AppImage", "Craft-1.4.0-arm64.AppImage",
	"latest.yml", "latest-mac.yml", "latest-linux.yml", "latest-linux-arm64.yml",
	"Craft's Setup 1.4.0.exe", // a quote in its name, for the quoting rules
}

// craft returns the release v1.4.0 of storytold/craft carrying assets.
func craft() *release.Release {
	rel := &release.Release{Tag: tag, Version: "1.4.0", Name: "Craft 1.4.0"}
	for _, name := range assets {
		rel.Assets = append(rel.Assets, release.Asset{Name: name, SizeBytes: 1, DownloadURL: release.DownloadURL(repo, tag, name)})
	}
	return rel
}

func url(name string) string { return release.DownloadURL(repo, tag, name) }

// sum returns the sha512 electron-builder writes for a file holding s.
func sum(s string) string {
	h := sha512.Sum512([]byte(s))
	return base64.StdEncoding.EncodeToString(h[:])
}

// Checksums of the fixtures' files, by a short name.
var (
	shaSetup, shaWeb, sha7zX64, sha7zARM, shaQuoted = sum("setup"), sum("web"), sum("x64.7z"), sum("arm64.7z"), sum("quoted")
	shaZipARM, shaDMGARM, shaZipX64, shaDMGX64      = sum("arm64.zip"), sum("arm64.dmg"), sum("x64.zip"), sum("x64.dmg")
	shaAppX64                                       = sum("x64.AppImage")
)

// fill replaces each $NAME in s with the checksum of that name.
func fill(s string) string {
	return strings.NewReplacer("$SETUP", shaSetup, "$WEB", shaWeb, "$7ZX64", sha7zX64, "$7ZARM", sha7zARM,
		"$ZIPARM", shaZipARM, "$DMGARM", shaDMGARM, "$ZIPX64", shaZipX64, "$DMGX64", shaDMGX64,
		"$APPX64", shaAppX64, "$QUOTED", shaQuoted).Replace(s)
}

// valid are channel files as electron-builder writes them, and what they
// say.
var valid = []struct {
	name string
	body string
	want electron.File
	// served is what Absolute makes of body; "" when it is body with each
	// relative download ": <name>" at the end of a line as ": <its URL>".
	served string
}{
	{
		"windows nsis", `version: 1.4.0
files:
  - url: Craft-Setup-1.4.0.exe
    sha512: $SETUP
    size: 81234567
    isAdminRightsRequired: false
path: Craft-Setup-1.4.0.exe
sha512: $SETUP
releaseDate: '2026-11-02T10:11:12.345Z'
`, electron.File{Version: "1.4.0", Files: []electron.Download{{URL: "Craft-Setup-1.4.0.exe", SHA512: shaSetup}},
			Path: "Craft-Setup-1.4.0.exe", SHA512: shaSetup, ReleaseDate: date}, "",
	},
	{
		"windows web installer with packages", `version: 1.4.0
files:
  - url: Craft-Web-Setup-1.4.0.exe
    sha512: $WEB
    size: 512345
packages:
  x64:
    size: 80123456
    sha512: $7ZX64
    blockMapSize: 84512
    path: craft-1.4.0-x64.nsis.7z
  arm64:
    size: 79123456
    sha512: $7ZARM
    blockMapSize: 84001
    path: craft-1.4.0-arm64.nsis.7z
path: Craft-Web-Setup-1.4.0.exe
sha512: $WEB
releaseDate: '2026-11-02T10:11:12.345Z'
`, electron.File{Version: "1.4.0", Files: []electron.Download{{URL: "Craft-Web-Setup-1.4.0.exe", SHA512: shaWeb}},
			Path: "Craft-Web-Setup-1.4.0.exe", SHA512: shaWeb, ReleaseDate: date, Packages: []electron.Package{
				{Arch: "x64", Path: "craft-1.4.0-x64.nsis.7z", SHA512: sha7zX64}, {Arch: "arm64", Path: "craft-1.4.0-arm64.nsis.7z", SHA512: sha7zARM}}}, "",
	},
	{
		"mac zip and dmg for each arch, notes and a staged rollout", `version: 1.4.0
files:
  - url: Craft-1.4.0-arm64-mac.zip
    sha512: $ZIPARM
    size: 101234567
  - url: Craft-1.4.0-arm64.dmg
    sha512: $DMGARM
    size: 105234567
  - url: Craft-1.4.0-mac.zip
    sha512: $ZIPX64
    size: 102234567
  - url: Craft-1.4.0.dmg
    sha512: $DMGX64
    size: 106234567
path: Craft-1.4.0-arm64-mac.zip
sha512: $ZIPARM
releaseDate: '2026-11-02T10:11:12.345Z'
releaseName: Craft 1.4.0 — “Lumière”
releaseNotes: |-
  ## What's new
  - Faster exports: url: and #tags are text here
stagingPercentage: 25
`, electron.File{Version: "1.4.0", Files: []electron.Download{
			{URL: "Craft-1.4.0-arm64-mac.zip", SHA512: shaZipARM}, {URL: "Craft-1.4.0-arm64.dmg", SHA512: shaDMGARM},
			{URL: "Craft-1.4.0-mac.zip", SHA512: shaZipX64}, {URL: "Craft-1.4.0.dmg", SHA512: shaDMGX64}},
			Path: "Craft-1.4.0-arm64-mac.zip", SHA512: shaZipARM, ReleaseDate: date, ReleaseName: "Craft 1.4.0 — “Lumière”",
			ReleaseNotes: "## What's new\n- Faster exports: url: and #tags are text here", StagingPercentage: ptr(25)}, "",
	},
	{
		"linux appimage, absolute urls already", `version: 1.4.0
files:
  - url: ` + url("Craft-1.4.0.AppImage") + `
    sha512: $APPX64
    size: 120000000
    blockMapSize: 126000
path: ` + url("Craft-1.4.0.AppImage") + `
sha512: $APPX64
releaseDate: '2026-11-02T10:11:12.345Z'
`, electron.File{Version: "1.4.0", Files: []electron.Download{{URL: url("Craft-1.4.0.AppImage"), SHA512: shaAppX64}},
			Path: url("Craft-1.4.0.AppImage"), SHA512: shaAppX64, ReleaseDate: date}, "",
	},
	{
		"legacy path only, pre-release version, notes as a list", `# written by hand
version: v1.4.0-beta.2+build.7
path: Craft-Setup-1.4.0.exe
sha512: $SETUP
releaseNotes:
  - version: 1.4.0-beta.2
    note: Fixes
  - version: 1.4.0-beta.1
    note: null
`, electron.File{Version: "v1.4.0-beta.2+build.7", Path: "Craft-Setup-1.4.0.exe", SHA512: shaSetup,
			NotesList: []electron.Note{{Version: "1.4.0-beta.2", Note: "Fixes"}, {Version: "1.4.0-beta.1"}}}, "",
	},
	{
		"quoted, flow style, CRLF and comments", "version: '1.4.0'   # the version\r\n" +
			"files: [{url: 'Craft''s Setup 1.4.0.exe', sha512: \"$QUOTED\"}, {sha512: $SETUP, url: Craft-Setup-1.4.0.exe}]\r\n" +
			"path: \"Craft-Setup-1.4.0.exe\" # legacy\r\n" +
			"sha512: '$SETUP'\r\n" +
			"packages: {x64: {path: " + url("craft-1.4.0-x64.nsis.7z") + ", sha512: $7ZX64}}\r\n" +
			"unknownKey: {nested: [1, 2, {deeper: x}]}\r\n",
		electron.File{Version: "1.4.0", Files: []electron.Download{{URL: "Craft's Setup 1.4.0.exe", SHA512: shaQuoted}, {URL: "Craft-Setup-1.4.0.exe", SHA512: shaSetup}},
			Path: "Craft-Setup-1.4.0.exe", SHA512: shaSetup, Packages: []electron.Package{{Arch: "x64", Path: url("craft-1.4.0-x64.nsis.7z"), SHA512: sha7zX64}}},
		// Each in its style; a plain URL in a flow mapping is quoted, where
		// a "," would end it; an absolute URL stays as written.
		"version: '1.4.0'   # the version\r\n" +
			"files: [{url: '" + url("Craft's Setup 1.4.0.exe") + "', sha512: \"$QUOTED\"}, {sha512: $SETUP, url: '" + url("Craft-Setup-1.4.0.exe") + "'}]\r\n" +
			"path: \"" + url("Craft-Setup-1.4.0.exe") + "\" # legacy\r\n" +
			"sha512: '$SETUP'\r\n" +
			"packages: {x64: {path: " + url("craft-1.4.0-x64.nsis.7z") + ", sha512: $7ZX64}}\r\n" +
			"unknownKey: {nested: [1, 2, {deeper: x}]}\r\n",
	},
}

// date is the fixtures' releaseDate.
const date = "2026-11-02T10:11:12.345Z"

func ptr[T any](v T) *T { return &v }

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
