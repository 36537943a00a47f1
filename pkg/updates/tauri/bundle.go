package tauri

import (
	"strings"

	"github.com/storytold/craft-releases/pkg/release"
)

// The targets, as the updater's {{target}} names them.
const (
	TargetDarwin  = "darwin"
	TargetLinux   = "linux"
	TargetWindows = "windows"
)

// The arches, as the updater's {{arch}} names them.
const (
	ArchX86_64  = "x86_64"
	ArchI686    = "i686"
	ArchAArch64 = "aarch64"
	ArchARMv7   = "armv7"
	ArchRISCV64 = "riscv64"
)

// The bundle types, as the updater's {{bundle_type}} names them.
const (
	BundleAppImage = "appimage"
	BundleDeb      = "deb"
	BundleRPM      = "rpm"
	BundleApp      = "app"
	BundleMSI      = "msi"
	BundleNSIS     = "nsis"
	BundleUnknown  = "unknown"
)

// universal is the arch of a macOS build for both Mac arches.
const universal = "universal"

var (
	targets = [...]string{TargetDarwin, TargetLinux, TargetWindows}
	arches  = [...]string{ArchX86_64, ArchI686, ArchAArch64, ArchARMv7, ArchRISCV64}
)

// bundlesOf lists each target's bundle types, the one that "unknown" gets
// first.
var bundlesOf = map[string][]string{
	TargetDarwin:  {BundleApp},
	TargetLinux:   {BundleAppImage, BundleDeb, BundleRPM},
	TargetWindows: {BundleNSIS, BundleMSI},
}

// BundleType returns s when it is a bundle type the updater sends, and
// BundleUnknown for anything else: "unknown" itself, and the placeholder
// "{{bundle_type}}" an updater before plugin 2.10 leaves in the URL.
func BundleType(s string) string {
	switch s {
	case BundleAppImage, BundleDeb, BundleRPM, BundleApp, BundleMSI, BundleNSIS:
		return s
	}
	return BundleUnknown
}

// bundle is what an updater bundle's file name says: its bundle type, the
// target that installs it, and its arch (one of arches, or universal).
type bundle struct{ bundleType, target, arch string }

// kinds are the updater bundles createUpdaterArtifacts makes, by suffix,
// and how the part before the suffix ends: "_<arch>" or, for an rpm,
// ".<arch>"; an MSI has "_<arch>_<language>".
var kinds = [...]struct {
	suffix, bundleType, target string
	sep                        byte
}{
	{"-setup.exe", BundleNSIS, TargetWindows, '_'},
	{".msi", BundleMSI, TargetWindows, '_'},
	{".app.tar.gz", BundleApp, TargetDarwin, '_'},
	{".AppImage", BundleAppImage, TargetLinux, '_'},
	{".deb", BundleDeb, TargetLinux, '_'},
	{".rpm", BundleRPM, TargetLinux, '.'},
}

// parseBundle reads name as the name of an updater bundle of Tauri v2
// (docs/updates.md, "Which files are served"): a release.GoodAssetName
// that is
//
//	<head>_<arch>-setup.exe            NSIS
//	<head>_<arch>_<language>.msi       MSI
//	<head>_<arch>.app.tar.gz           macOS, also universal
//	<head>_<arch>.AppImage or .deb     AppImage, deb
//	<head>.<arch>.rpm                  rpm
//
// with a non-empty head and an arch that archOf maps; ok reports whether it
// is one. Matching is exact and case-sensitive.
func parseBundle(name string) (b bundle, ok bool) {
	if !release.GoodAssetName(name) {
		return bundle{}, false
	}
	for _, k := range kinds {
		base, found := strings.CutSuffix(name, k.suffix)
		if !found {
			continue
		}
		if k.bundleType == BundleMSI {
			if base, ok = cutLast(base, '_', msiLanguage); !ok {
				return bundle{}, false
			}
		}
		i := strings.LastIndexByte(base, k.sep)
		if i <= 0 {
			return bundle{}, false
		}
		arch := archOf(base[i+1:])
		if arch == "" || arch == universal && k.bundleType != BundleApp {
			return bundle{}, false
		}
		return bundle{k.bundleType, k.target, arch}, true
	}
	return bundle{}, false
}

// cutLast returns s without its last sep and what follows, which must
// satisfy part.
func cutLast(s string, sep byte, part func(string) bool) (string, bool) {
	i := strings.LastIndexByte(s, sep)
	if i < 0 || !part(s[i+1:]) {
		return "", false
	}
	return s[:i], true
}

// msiLanguage reports whether s may be an MSI's language ("en-US"): ASCII
// letters and "-", at least two.
func msiLanguage(s string) bool {
	return len(s) >= 2 && !strings.ContainsFunc(s, func(r rune) bool {
		return r != '-' && (r < 'a' || r > 'z') && (r < 'A' || r > 'Z')
	})
}

// archOf maps an arch as Tauri's bundlers write it into file names to the
// updater's: x64, amd64, x86_64 → x86_64; x86, i386, i686 → i686; arm64,
// aarch64 → aarch64; armhf, armhfp, armv7 → armv7; riscv64; universal
// (macOS, both Mac arches). Anything else is "".
func archOf(s string) string {
	switch s {
	case "x64", "amd64", "x86_64":
		return ArchX86_64
	case "x86", "i386", "i686":
		return ArchI686
	case "arm64", "aarch64":
		return ArchAArch64
	case "armhf", "armhfp", "armv7":
		return ArchARMv7
	case "riscv64":
		return ArchRISCV64
	case universal:
		return universal
	}
	return ""
}

// serves reports whether b is a bundle an updater of target and arch may
// install as bundleType (a concrete type, never BundleUnknown): a universal
// macOS build serves both Mac arches.
func (b bundle) serves(target, arch, bundleType string) bool {
	return b.bundleType == bundleType && b.target == target &&
		(b.arch == arch || b.arch == universal && (arch == ArchX86_64 || arch == ArchAArch64))
}
