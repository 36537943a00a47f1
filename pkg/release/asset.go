package release

import "strings"

// The values of Platform.OS.
const (
	OSWindows = "windows"
	OSMacOS   = "macos"
	OSLinux   = "linux"
	OSFreeBSD = "freebsd"
	OSWeb     = "web"
)

// The values of *Platform.Arch.
const (
	ArchX64       = "x64"
	ArchX86       = "x86"
	ArchARM64     = "arm64"
	ArchUniversal = "universal"
)

// The values of Platform.PackageType.
const (
	PackageMSI           = "msi"
	PackagePortableZip   = "portable_zip"
	PackageDMG           = "dmg"
	PackageCLIZip        = "cli_zip"
	PackageAppImage      = "app_image"
	PackageAppImageZsync = "app_image_zsync"
	PackageDeb           = "deb"
	PackageRPM           = "rpm"
	PackageFlatpak       = "flatpak"
	PackageTarGz         = "tar_gz"
	PackageWebZip        = "web_zip"
)

// arches holds the values of Platform.Arch. ParseAsset points into it so that
// recognising an asset allocates only its Platform; nothing may write to it.
var arches = [...]string{ArchX64, ArchX86, ArchARM64, ArchUniversal}

// suffixes are the file-name endings of docs/assets.md rule 2, in the order they
// are tried: longer endings come before the endings they contain.
var suffixes = [...]struct{ suffix, packageType string }{
	{"-portable.zip", PackagePortableZip},
	{".AppImage.zsync", PackageAppImageZsync},
	{".AppImage", PackageAppImage},
	{".tar.gz", PackageTarGz},
	{".msi", PackageMSI},
	{".dmg", PackageDMG},
	{".deb", PackageDeb},
	{".rpm", PackageRPM},
	{".flatpak", PackageFlatpak},
	{".zip", PackageCLIZip},
}

// ParseAsset reports the platform an asset's file name names, following
// docs/assets.md: "<app>-<version>-<os>-<arch>[-portable].<ext>", the macOS
// command-line "<app>-cli-<version>-macos-universal.zip", the web build
// "<app>-web-<version>.zip", and, for a name none of those give a platform,
// the names Tauri's bundler gives an MSI, a DMG, an AppImage, a deb and an
// rpm ("Tauri's bundles" there). Matching is exact and case-sensitive. It returns nil
// for any other name, so it is safe on untrusted input.
//
// Each call returns a new Platform, but its Arch points at a string shared by
// every result: callers must treat *Arch as read-only. ParseAsset is safe for
// concurrent use.
func ParseAsset(name string) *Platform {
	if strings.Contains(name, "-web-") && strings.HasSuffix(name, ".zip") {
		return &Platform{OS: OSWeb, PackageType: PackageWebZip}
	}
	if p := craftPlatform(name); p != nil {
		return p
	}
	return tauriPlatform(name)
}

// craftPlatform is ParseAsset's Craft naming, docs/assets.md rules 2 to 7.
func craftPlatform(name string) *Platform {
	base, packageType, ok := cutSuffix(name)
	if !ok {
		return nil
	}
	i := strings.LastIndexByte(base, '-')
	if i < 0 {
		return nil
	}
	arch := archOf(base[i+1:])
	// With a single "-" the os is everything before it (docs/assets.md rule 3).
	os := base[:i]
	if j := strings.LastIndexByte(os, '-'); j >= 0 {
		os = os[j+1:]
	}
	if arch == nil || !knownOS(os) {
		return nil
	}
	if packageType == PackageCLIZip && (os != OSMacOS || !strings.Contains(base, "-cli-")) {
		return nil
	}
	return &Platform{OS: os, Arch: arch, PackageType: packageType}
}

// cutSuffix removes the first known suffix from name.
func cutSuffix(name string) (base, packageType string, ok bool) {
	for _, s := range suffixes {
		if base, ok := strings.CutSuffix(name, s.suffix); ok {
			return base, s.packageType, true
		}
	}
	return "", "", false
}

// archOf maps an arch as written in a file name to the shared wire value.
func archOf(s string) *string {
	switch s {
	case "x64", "x86_64":
		return &arches[0]
	case "x86":
		return &arches[1]
	case "arm64", "aarch64":
		return &arches[2]
	case "universal":
		return &arches[3]
	}
	return nil
}

func knownOS(s string) bool {
	switch s {
	case OSWindows, OSMacOS, OSLinux, OSFreeBSD:
		return true
	}
	return false
}

// tauriKinds are the bundles of docs/assets.md's Tauri rules that map to a
// platform the wire has, by suffix. Tauri's other files (the NSIS
// "-setup.exe", the updater's ".app.tar.gz", ".AppImage.tar.gz" and ".zip"
// archives, ".sig" signatures) have none.
var tauriKinds = [...]struct{ suffix, os, packageType string }{
	{".msi", OSWindows, PackageMSI},
	{".dmg", OSMacOS, PackageDMG},
	{".AppImage", OSLinux, PackageAppImage},
	{".deb", OSLinux, PackageDeb},
	{".rpm", OSLinux, PackageRPM},
}

// tauriPlatform is ParseAsset's Tauri naming (docs/assets.md, "Tauri's
// bundles"): a GoodAssetName that is
//
//	<product>_<version>_<arch>_<language>.msi
//	<product>_<version>_<arch>.dmg, .AppImage or .deb
//	<product>-<version>-<release>.<arch>.rpm ("_" before the version too)
//
// with a non-empty product, a version that starts with a digit and holds only
// ASCII letters, digits, ".", "+" and "-", an arch of tauriArch, a language
// such as "en-US" (msiLanguage) and an rpm release of rpmRelease; else nil.
func tauriPlatform(name string) *Platform {
	if !GoodAssetName(name) {
		return nil
	}
	for _, k := range tauriKinds {
		base, ok := strings.CutSuffix(name, k.suffix)
		if !ok {
			continue
		}
		if k.packageType == PackageMSI {
			rest, lang, ok := cutLast(base, '_')
			if !ok || !msiLanguage(lang) {
				return nil
			}
			base = rest
		}
		var head, arch, release string
		if k.packageType == PackageRPM {
			head, arch, ok = cutLast(base, '.')
			head, release, _ = cutLast(head, '-')
			ok = ok && rpmRelease(release) && productVersion(head, "-_")
		} else {
			head, arch, ok = cutLast(base, '_')
			ok = ok && productVersion(head, "_")
		}
		if p := tauriArch(arch); ok && p != nil {
			return &Platform{OS: k.os, Arch: p, PackageType: k.packageType}
		}
		return nil
	}
	return nil
}

// cutLast splits s around its last sep.
func cutLast(s string, sep byte) (before, after string, ok bool) {
	i := strings.LastIndexByte(s, sep)
	if i < 0 {
		return s, "", false
	}
	return s[:i], s[i+1:], true
}

// tauriArch maps an arch as Tauri's bundler writes it (and the Craft
// spellings) to the shared wire value: x64, amd64 and x86_64 → x64; x86,
// i386 and i686 → x86; arm64 and aarch64 → arm64; universal.
func tauriArch(s string) *string {
	switch s {
	case "amd64":
		return &arches[0]
	case "i386", "i686":
		return &arches[1]
	}
	return archOf(s)
}

// productVersion reports whether s is a non-empty product, one of seps, and
// a version: a digit, then ASCII letters, digits, ".", "+" and "-".
func productVersion(s, seps string) bool {
	for i := 1; i < len(s); i++ {
		if strings.IndexByte(seps, s[i]) >= 0 && version(s[i+1:]) {
			return true
		}
	}
	return false
}

func version(s string) bool {
	if s == "" || s[0] < '0' || s[0] > '9' {
		return false
	}
	for i := range len(s) {
		if c := s[i]; !alnum(c) && c != '.' && c != '+' && c != '-' {
			return false
		}
	}
	return true
}

// msiLanguage reports whether s is a WiX culture as Tauri names MSIs with:
// two or three lowercase letters, optionally a script ("Latn"), and a region
// of two capitals, joined by "-": "en-US", "sr-Latn-CS".
func msiLanguage(s string) bool {
	lang, region, ok := cutLast(s, '-')
	if !ok || len(region) != 2 || !upper(region[0]) || !upper(region[1]) {
		return false
	}
	if l, script, ok := cutLast(lang, '-'); ok {
		if len(script) != 4 || !upper(script[0]) || !lowerOnly(script[1:]) {
			return false
		}
		lang = l
	}
	return (len(lang) == 2 || len(lang) == 3) && lowerOnly(lang)
}

// lowerOnly reports whether s holds only a to z.
func lowerOnly(s string) bool {
	for i := range len(s) {
		if s[i] < 'a' || s[i] > 'z' {
			return false
		}
	}
	return true
}

// rpmRelease reports whether s is an rpm release: ASCII letters, digits,
// ".", "_", "+" and "~", at least one.
func rpmRelease(s string) bool {
	if s == "" {
		return false
	}
	for i := range len(s) {
		if c := s[i]; !alnum(c) && c != '.' && c != '_' && c != '+' && c != '~' {
			return false
		}
	}
	return true
}

func upper(c byte) bool { return 'A' <= c && c <= 'Z' }

func alnum(c byte) bool { return upper(c) || 'a' <= c && c <= 'z' || '0' <= c && c <= '9' }
