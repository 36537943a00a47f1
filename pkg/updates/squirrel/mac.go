package squirrel

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/storytold/craft-releases/pkg/release"
	"github.com/storytold/craft-releases/pkg/updates/semver"
)

// macArches are the arches a macOS update zip is built for.
var macArches = [...]string{ArchX64, ArchARM64, ArchUniversal}

// MacZipArch reads name as the name of a macOS update zip of version (a
// release's version, as Update's version reads it: without one leading
// "v") and returns its arch, one of ArchX64, ArchARM64 or ArchUniversal;
// ok reports whether it is one. The zips are those Squirrel.Mac installs,
// as the two tools name them by default, with a non-empty head (the
// product's name, which GitHub writes with "." for a space):
//
//	<head>-<version>-mac.zip             electron-builder, x64
//	<head>-<version>-<arch>-mac.zip      electron-builder, any arch ("${arch}" in its artifactName)
//	<head>-darwin-<arch>-<version>.zip   Electron Forge's zip maker
//
// Matching is exact and case-sensitive, and the version in the name must
// be the release's: a zip of another version would make every app that
// takes it ask again, and install it again. A Mac App Store build
// ("-mas-"), a DMG or a .blockmap is none.
func MacZipArch(name, version string) (arch string, ok bool) {
	version = strings.TrimPrefix(version, "v")
	if version == "" || !release.GoodAssetName(name) {
		return "", false
	}
	if head, ok := strings.CutSuffix(name, "-"+version+"-mac.zip"); ok && head != "" {
		return ArchX64, true
	}
	for _, a := range macArches {
		if head, ok := strings.CutSuffix(name, "-"+version+"-"+a+"-mac.zip"); ok && head != "" {
			return a, true
		}
		if head, ok := strings.CutSuffix(name, "-darwin-"+a+"-"+version+".zip"); ok && head != "" {
			return a, true
		}
	}
	return "", false
}

// Update is what Squirrel.Mac reads from a 200: the zip to install and
// what the app may show of it, in this order.
type Update struct {
	URL   string `json:"url"`   // the zip's download URL on GitHub
	Name  string `json:"name"`  // the release's name on GitHub (its tag when it has none)
	Notes string `json:"notes"` // the release notes, Markdown
	// PubDate is published_at in whole seconds, "2006-01-02T15:04:05Z":
	// Squirrel.Mac reads ISO 8601 without a fraction of a second. It is
	// left out when unknown.
	PubDate string `json:"pub_date,omitempty"`

	version semver.Version // the release's, without build metadata
}

// MacUpdate returns the update the release rel of app offers a Squirrel.Mac
// app of arch (ArchX64, ArchARM64 or ArchUniversal): the first of rel's
// assets that MacZipArch reads as a zip of rel's version for arch, else,
// for x64 and arm64, the first universal one. The error, for the 404, says
// what is missing: no release ("photocraft has no release on GitHub"), a
// version that is not SemVer (naming the tag), an unknown arch, or no zip
// ("photocraft v1.2.0 has no macOS zip for arm64"). Whether an app takes
// the update is Newer's to say.
func MacUpdate(app string, rel *release.Release, arch string) (Update, error) {
	if rel == nil {
		return Update{}, fmt.Errorf("%s has no release on GitHub", app)
	}
	v, ok := parseVersion(rel.Version)
	if !ok {
		return Update{}, fmt.Errorf("%s %s has no SemVer version", app, rel.Tag)
	}
	if !slices.Contains(macArches[:], arch) {
		return Update{}, errors.New("unknown arch: want x64, arm64 or universal")
	}
	var chosen *release.Asset
	for i := range rel.Assets {
		a := &rel.Assets[i]
		got, ok := MacZipArch(a.Name, rel.Version)
		if !ok {
			continue
		}
		if got == arch {
			chosen = a
			break
		}
		if chosen == nil && got == ArchUniversal {
			chosen = a // unless the arch's own comes later
		}
	}
	if chosen == nil {
		return Update{}, fmt.Errorf("%s %s has no macOS zip for %s", app, rel.Tag, arch)
	}
	u := Update{URL: chosen.DownloadURL, Name: rel.Name, Notes: rel.NotesMarkdown, version: v}
	if u.Name == "" {
		u.Name = rel.Tag
	}
	if rel.PublishedAt != nil {
		u.PubDate = rel.PublishedAt.UTC().Format("2006-01-02T15:04:05Z")
	}
	return u, nil
}

// Newer reports whether an app at version current should install u: it is
// lower than u's release version in SemVer 2.0.0 precedence, build
// metadata left out, as node-semver and the other Squirrel servers compare
// (1.2.0+b is no update of 1.2.0). When it is false the endpoint answers
// 204: Squirrel.Mac installs whatever a 200 offers, the same version
// included. The error says that current is not a version (SemVer, after
// one leading "v"): offering an update to an app whose version cannot be
// compared would have it install the same release again at every check.
func (u Update) Newer(current string) (bool, error) {
	c, ok := parseVersion(current)
	if !ok {
		return false, fmt.Errorf("version %s: not SemVer", excerpt(current))
	}
	return c.Compare(u.version) < 0, nil
}

// parseVersion reads s as the endpoint reads a version: SemVer 2.0.0
// (semver.Parse) after at most one leading "v". It returns the version
// without its build metadata, which precedence leaves out.
func parseVersion(s string) (semver.Version, bool) {
	v, ok := semver.Parse(strings.TrimPrefix(s, "v"))
	return v.WithoutBuild(), ok
}
