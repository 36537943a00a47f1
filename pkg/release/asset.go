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
// command-line "<app>-cli-<version>-macos-universal.zip", and the web build
// "<app>-web-<version>.zip". Matching is exact and case-sensitive. It returns
// nil for any other name, so it is safe on untrusted input.
//
// Each call returns a new Platform, but its Arch points at a string shared by
// every result: callers must treat *Arch as read-only. ParseAsset is safe for
// concurrent use.
func ParseAsset(name string) *Platform {
	if strings.Contains(name, "-web-") && strings.HasSuffix(name, ".zip") {
		return &Platform{OS: OSWeb, PackageType: PackageWebZip}
	}
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
