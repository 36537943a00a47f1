// Package download chooses the asset a download link stands for: the
// platform a User-Agent says it runs on, the package type each operating
// system prefers, and the first asset of a release that matches. It is pure
// (no I/O, no clock) and, on the paths that find an asset, allocates nothing.
package download

import (
	"errors"
	"slices"
	"strconv"
	"strings"

	"github.com/storytold/craft-releases/pkg/release"
)

// Want is what a download link asks for, in the wire's values (os, arch,
// package_type) and a channel; "" means not given.
type Want struct {
	OS      string
	Arch    string
	Package string
	// Channel is "stable" or "prerelease": the app's pre-release when it
	// has one, else its release.
	Channel string
}

// Prerelease reports whether w asks for the pre-release channel.
func (w Want) Prerelease() bool { return w.Channel == string(release.Prerelease) }

// preferred lists, per os, the package types a link without one tries, in
// order: an installer before a portable archive. On Linux the AppImage comes
// first because it runs on every distribution, where a .deb or .rpm needs the
// right one; the AppImage's .zsync is update metadata and never a download.
// Nothing may modify these slices.
var preferred = map[string][]string{
	release.OSWindows: {release.PackageMSI, release.PackagePortableZip},
	release.OSMacOS:   {release.PackageDMG, release.PackageCLIZip},
	release.OSLinux: {release.PackageAppImage, release.PackageDeb, release.PackageRPM,
		release.PackageFlatpak, release.PackageTarGz},
	release.OSFreeBSD: {release.PackageTarGz},
	release.OSWeb:     {release.PackageWebZip},
}

// Preferred returns the package types tried, in order, for os when a link
// gives none, or nil for an os that is not a wire value. The caller must not
// modify the slice.
func Preferred(os string) []string { return preferred[os] }

// The values each parameter accepts, in the order error messages list them.
var (
	oses     = []string{release.OSWindows, release.OSMacOS, release.OSLinux, release.OSFreeBSD, release.OSWeb}
	arches   = []string{release.ArchX64, release.ArchX86, release.ArchARM64, release.ArchUniversal}
	packages = []string{release.PackageMSI, release.PackagePortableZip, release.PackageDMG, release.PackageCLIZip,
		release.PackageAppImage, release.PackageAppImageZsync, release.PackageDeb, release.PackageRPM,
		release.PackageFlatpak, release.PackageTarGz, release.PackageWebZip}
	channels = []string{"stable", string(release.Prerelease)}
)

// BadValueError is a parameter whose value is not one of the wire's values.
type BadValueError struct {
	Param string // "os", "arch", "package" or "channel"
	Value string
	Want  []string // the values Param accepts
}

func (e *BadValueError) Error() string {
	return "bad " + e.Param + " " + quote(e.Value) + ": want one of " + strings.Join(e.Want, ", ")
}

// Check reports the first of w's given values that is not a wire value, as a
// *BadValueError, or nil. Values are case-sensitive, as on the wire.
func Check(w Want) error {
	for _, p := range [...]struct {
		param, value string
		want         []string
	}{{"os", w.OS, oses}, {"arch", w.Arch, arches}, {"package", w.Package, packages}, {"channel", w.Channel, channels}} {
		if p.value != "" && !slices.Contains(p.want, p.value) {
			return &BadValueError{Param: p.param, Value: p.value, Want: p.want}
		}
	}
	return nil
}

// ErrUnknownOS is Resolve's error when a link gives no os and the User-Agent
// does not say one.
var ErrUnknownOS = errors.New("no os given and the User-Agent names none: add os=" + strings.Join(oses, ", os="))

// Resolve fills in what w leaves out: os and arch from userAgent (see Guess),
// except that the web build has no arch. usedAgent reports whether userAgent
// decided anything, which makes the answer vary with it. The package type is
// left to Pick. When w has no os and userAgent names none, Resolve returns
// ErrUnknownOS.
func Resolve(w Want, userAgent string) (resolved Want, usedAgent bool, err error) {
	if w.OS != "" && (w.Arch != "" || w.OS == release.OSWeb) {
		return w, false, nil
	}
	os, arch := Guess(userAgent)
	if w.OS == "" {
		if os == "" {
			return w, true, ErrUnknownOS
		}
		w.OS = os
	}
	if w.Arch == "" && w.OS != release.OSWeb {
		w.Arch = arch
	}
	return w, true, nil
}

// Pick returns the index in assets of the asset w stands for: with w.Package,
// the first asset of that platform; without, the first asset of the first
// package type in Preferred(w.OS) that has one. A macOS universal build
// serves any macOS arch. w.Arch "" matches only assets without an arch (the
// web build). ok is false when no asset matches. Assets without a platform
// never match.
func Pick(assets []release.Asset, w Want) (i int, ok bool) {
	if w.Package != "" {
		return first(assets, w, w.Package)
	}
	for _, pkg := range preferred[w.OS] {
		if i, ok := first(assets, w, pkg); ok {
			return i, true
		}
	}
	return -1, false
}

// first returns the index of the first asset of w's os and arch with package
// pkg; on macOS, failing that, the first universal build, so that a native
// build listed after a universal one is still what its arch asks for.
func first(assets []release.Asset, w Want, pkg string) (int, bool) {
	universal := -1
	for i, a := range assets {
		p := a.Platform
		if p == nil || p.OS != w.OS || p.PackageType != pkg {
			continue
		}
		switch {
		case p.Arch == nil:
			if w.Arch == "" {
				return i, true
			}
		case *p.Arch == w.Arch:
			return i, true
		case *p.Arch == release.ArchUniversal && w.OS == release.OSMacOS && universal < 0:
			universal = i
		}
	}
	return universal, universal >= 0
}

// Platforms returns the distinct platforms of assets, in the order of their
// first asset; assets without a platform are left out.
func Platforms(assets []release.Asset) []release.Platform {
	var ps []release.Platform
	for _, a := range assets {
		if a.Platform != nil && !containsPlatform(ps, *a.Platform) {
			ps = append(ps, *a.Platform)
		}
	}
	return ps
}

// SamePlatform reports whether a and b name the same os, arch and package type.
func SamePlatform(a, b release.Platform) bool {
	return a.OS == b.OS && a.PackageType == b.PackageType &&
		(a.Arch == nil) == (b.Arch == nil) && (a.Arch == nil || *a.Arch == *b.Arch)
}

func containsPlatform(ps []release.Platform, p release.Platform) bool {
	for _, q := range ps {
		if SamePlatform(p, q) {
			return true
		}
	}
	return false
}

// quote quotes s for an error message, cut to 64 bytes: the value comes from
// the request.
func quote(s string) string {
	const limit = 64
	if len(s) > limit {
		s = strings.ToValidUTF8(s[:limit], "") + "…"
	}
	return strconv.Quote(s)
}
