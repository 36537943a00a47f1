package release_test

import (
	"strings"
	"testing"

	"github.com/storytold/craft-releases/pkg/release"
)

// assetVectors are the test vectors of docs/assets.md, plus cases for each rule
// that the vectors leave implicit, Tauri's bundle names and names shaped to
// pass for them. want is "os/arch/package_type", with "null"
// for a nil arch, or "" for a nil platform.
var assetVectors = []struct {
	name string
	file string
	want string
}{
	{"macos dmg", "photocraft-0.5.0-macos-universal.dmg", "macos/universal/dmg"},
	{"macos cli zip", "photocraft-cli-0.5.0-macos-universal.zip", "macos/universal/cli_zip"},
	{"windows arm64 portable", "photocraft-0.5.0-windows-arm64-portable.zip", "windows/arm64/portable_zip"},
	{"windows x64 portable", "photocraft-0.5.0-windows-x64-portable.zip", "windows/x64/portable_zip"},
	{"windows x86 portable", "photocraft-0.5.0-windows-x86-portable.zip", "windows/x86/portable_zip"},
	{"windows x86 msi", "photocraft-0.5.0-windows-x86.msi", "windows/x86/msi"},
	{"windows x64 msi", "photocraft-0.5.0-windows-x64.msi", "windows/x64/msi"},
	{"windows arm64 msi", "photocraft-0.5.0-windows-arm64.msi", "windows/arm64/msi"},
	{"linux aarch64 appimage", "photocraft-0.5.0-linux-aarch64.AppImage", "linux/arm64/app_image"},
	{"linux aarch64 zsync", "photocraft-0.5.0-linux-aarch64.AppImage.zsync", "linux/arm64/app_image_zsync"},
	{"linux aarch64 deb", "photocraft-0.5.0-linux-aarch64.deb", "linux/arm64/deb"},
	{"linux aarch64 rpm", "photocraft-0.5.0-linux-aarch64.rpm", "linux/arm64/rpm"},
	{"linux aarch64 flatpak", "photocraft-0.5.0-linux-aarch64.flatpak", "linux/arm64/flatpak"},
	{"linux aarch64 tar.gz", "photocraft-0.5.0-linux-aarch64.tar.gz", "linux/arm64/tar_gz"},
	{"linux x86_64 appimage", "photocraft-0.5.0-linux-x86_64.AppImage", "linux/x64/app_image"},
	{"linux x86_64 zsync", "photocraft-0.5.0-linux-x86_64.AppImage.zsync", "linux/x64/app_image_zsync"},
	{"linux x86_64 deb", "photocraft-0.5.0-linux-x86_64.deb", "linux/x64/deb"},
	{"linux x86_64 rpm", "photocraft-0.5.0-linux-x86_64.rpm", "linux/x64/rpm"},
	{"linux x86_64 flatpak", "photocraft-0.5.0-linux-x86_64.flatpak", "linux/x64/flatpak"},
	{"linux x86_64 tar.gz", "photocraft-0.5.0-linux-x86_64.tar.gz", "linux/x64/tar_gz"},
	{"freebsd tar.gz", "photocraft-0.5.0-freebsd-x86_64.tar.gz", "freebsd/x64/tar_gz"},
	{"hyphenated version", "photocraft-0.2.0-rc.1-linux-x86_64.tar.gz", "linux/x64/tar_gz"},
	{"web build", "photocraft-web-0.5.0.zip", "web/null/web_zip"},
	{"linux portable", "photocraft-0.5.0-linux-x86_64-portable.zip", "linux/x64/portable_zip"},
	{"os and arch only", "linux-x64.deb", "linux/x64/deb"},
	{"checksums", "SHA256SUMS.txt", ""},
	{"unknown os", "photocraft-0.5.0-plan9-x64.msi", ""},
	{"bare zip without cli", "photocraft-0.5.0-macos-universal.zip", ""},
	{"bare zip not macos", "photocraft-0.5.0-linux-x86_64.zip", ""},
	{"os is case-sensitive", "photocraft-0.5.0-Linux-x86_64.AppImage", ""},
	{"amd64 not accepted", "photocraft-0.5.0-linux-amd64.deb", ""},
	{"no known suffix", "photocraft-0.5.0-windows-x64.exe", ""},
	{"no hyphen in base", "x64.deb", ""},

	// Beyond the vectors of docs/assets.md, one case per rule they leave implicit.
	{"web wins over everything", "photocraft-web-0.5.0-windows-x64-portable.zip", "web/null/web_zip"},
	{"web needs zip", "photocraft-web-0.5.0.tar.gz", ""},
	{"web needs hyphens both sides", "photocraftweb-0.5.0.zip", ""},
	{"suffix is case-sensitive", "photocraft-0.5.0-windows-x64.MSI", ""},
	{"appimage suffix is case-sensitive", "photocraft-0.5.0-linux-x86_64.appimage", ""},
	{"arch is case-sensitive", "photocraft-0.5.0-windows-X64.msi", ""},
	{"x86 arch", "photocraft-0.5.0-linux-x86.deb", "linux/x86/deb"},
	{"arm64 arch", "photocraft-0.5.0-linux-arm64.deb", "linux/arm64/deb"},
	{"empty arch", "photocraft-0.5.0-linux-.deb", ""},
	{"empty os", "photocraft-0.5.0--x64.deb", ""},
	{"suffix only", ".msi", ""},
	{"empty name", "", ""},
	{"cli zip needs macos", "photocraft-cli-0.5.0-windows-x64.zip", ""},
	{"cli zip any arch", "photocraft-cli-0.5.0-macos-arm64.zip", "macos/arm64/cli_zip"},
	{"cli needs hyphens both sides", "photocraftcli-0.5.0-macos-universal.zip", ""},
	{"portable before zip", "photocraft-cli-0.5.0-macos-universal-portable.zip", "macos/universal/portable_zip"},
	{"no cross-check of os and package", "photocraft-0.5.0-linux-x64.msi", "linux/x64/msi"},
	{"dmg on windows", "photocraft-0.5.0-windows-x64.dmg", "windows/x64/dmg"},

	// Tauri's bundles (docs/assets.md, "Tauri's bundles").
	{"tauri nsis", "ArtCraft_0.41.0_x64-setup.exe", ""},
	{"tauri msi", "ArtCraft_0.41.0_x64_en-US.msi", "windows/x64/msi"},
	{"tauri msi x86", "ArtCraft_0.41.0_x86_en-US.msi", "windows/x86/msi"},
	{"tauri msi arm64", "ArtCraft_0.41.0_arm64_en-US.msi", "windows/arm64/msi"},
	{"tauri msi with a script", "ArtCraft_0.41.0_x64_sr-Latn-CS.msi", "windows/x64/msi"},
	{"tauri dmg universal", "ArtCraft_0.41.0_universal.dmg", "macos/universal/dmg"},
	{"tauri dmg aarch64", "ArtCraft_0.41.0_aarch64.dmg", "macos/arm64/dmg"},
	{"tauri dmg x64", "ArtCraft_0.41.0_x64.dmg", "macos/x64/dmg"},
	{"tauri app bundle", "ArtCraft_universal.app.tar.gz", ""},
	{"tauri appimage amd64", "ArtCraft_0.41.0_amd64.AppImage", "linux/x64/app_image"},
	{"tauri appimage aarch64", "ArtCraft_0.41.0_aarch64.AppImage", "linux/arm64/app_image"},
	{"tauri appimage i386", "ArtCraft_0.41.0_i386.AppImage", "linux/x86/app_image"},
	{"tauri deb amd64", "ArtCraft_0.41.0_amd64.deb", "linux/x64/deb"},
	{"tauri deb arm64", "ArtCraft_0.41.0_arm64.deb", "linux/arm64/deb"},
	{"tauri deb i386", "ArtCraft_0.41.0_i386.deb", "linux/x86/deb"},
	{"tauri rpm x86_64", "ArtCraft-0.41.0-1.x86_64.rpm", "linux/x64/rpm"},
	{"tauri rpm aarch64", "ArtCraft-0.41.0-1.aarch64.rpm", "linux/arm64/rpm"},
	{"tauri rpm i686", "ArtCraft-0.41.0-1.i686.rpm", "linux/x86/rpm"},
	{"tauri rpm of an older bundler", "ArtCraft_0.41.0-1.x86_64.rpm", "linux/x64/rpm"},
	{"tauri rpm release with a dot", "ArtCraft-0.41.0-1.el9.x86_64.rpm", "linux/x64/rpm"},
	{"tauri prerelease msi", "ArtCraft_0.42.0-rc.1+b5_x64_en-US.msi", "windows/x64/msi"},
	{"tauri prerelease rpm", "ArtCraft-0.42.0-rc.1-1.x86_64.rpm", "linux/x64/rpm"},
	{"tauri product with _ and .", "Art.Craft_Launcher_0.41.0_amd64.deb", "linux/x64/deb"},
	{"tauri appimage archive", "ArtCraft_0.41.0_amd64.AppImage.tar.gz", ""},
	{"tauri appimage signature", "ArtCraft_0.41.0_amd64.AppImage.sig", ""},
	{"tauri appimage archive signature", "ArtCraft_0.41.0_amd64.AppImage.tar.gz.sig", ""},
	{"tauri msi signature", "ArtCraft_0.41.0_x64_en-US.msi.sig", ""},
	{"tauri msi archive", "ArtCraft_0.41.0_x64_en-US.msi.zip", ""},
	{"tauri nsis archive", "ArtCraft_0.41.0_x64-setup.nsis.zip", ""},
	{"tauri updater manifest", "latest.json", ""},
	{"tauri armhf has no wire value", "ArtCraft_0.41.0_armhf.deb", ""},
	{"tauri riscv64 has no wire value", "ArtCraft_0.41.0_riscv64.deb", ""},
	{"tauri armhfp has no wire value", "ArtCraft-0.41.0-1.armhfp.rpm", ""},

	// Names shaped to pass for Tauri's.
	{"msi then exe", "evil_1.0_x64_en-US.msi.exe", ""},
	{"msi without a language", "ArtCraft_0.41.0_x64.msi", ""},
	{"msi language in lowercase", "ArtCraft_0.41.0_x64_en-us.msi", ""},
	{"msi language not a culture", "ArtCraft_0.41.0_x64_evil.msi", ""},
	{"msi language with a bad script", "ArtCraft_0.41.0_x64_sr-latn-CS.msi", ""},
	{"msi arch after the language", "ArtCraft_0.41.0_en-US_x64.msi", ""},
	{"no version", "ArtCraft_x64.dmg", ""},
	{"a version without a digit first", "ArtCraft_latest_x64.dmg", ""},
	{"a version with a space", "ArtCraft_0.41 .0_x64.dmg", ""},
	{"a version of dots", "ArtCraft_.._x64.dmg", ""},
	{"no product", "_0.41.0_x64.dmg", ""},
	{"arch is case-sensitive for tauri", "ArtCraft_0.41.0_AMD64.deb", ""},
	{"appimage suffix is case-sensitive for tauri", "ArtCraft_0.41.0_amd64.appimage", ""},
	{"dmg suffix is case-sensitive for tauri", "ArtCraft_0.41.0_universal.DMG", ""},
	{"a control character", "Art\x1bCraft_0.41.0_x64.dmg", ""},
	{"a NUL", "ArtCraft\x00_0.41.0_x64.dmg", ""},
	{"a line break", "ArtCraft\n_0.41.0_amd64.deb", ""},
	{"a bidi override", "ArtCraft\u202e_0.41.0_x64.dmg", ""},
	{"invalid UTF-8", "Art\xffCraft_0.41.0_amd64.deb", ""},
	{"a path", "../ArtCraft_0.41.0_x64.dmg", ""},
	{"a leading dot", "..ArtCraft_0.41.0_x64.dmg", ""},
	{"a backslash", "..\\ArtCraft_0.41.0_amd64.AppImage", ""},
	{"at the name bound", strings.Repeat("A", 185) + "_0.41.0_x64.dmg", "macos/x64/dmg"},
	{"over the name bound", strings.Repeat("A", 186) + "_0.41.0_x64.dmg", ""},
	{"rpm without a release", "ArtCraft-0.41.0.x86_64.rpm", ""},
	{"rpm without a product", "-0.41.0-1.x86_64.rpm", ""},
	{"rpm release with a space", "ArtCraft-0.41.0-1 .x86_64.rpm", ""},
	{"rpm signature", "ArtCraft-0.41.0-1.x86_64.rpm.sig", ""},
}

func platformString(p *release.Platform) string {
	if p == nil {
		return ""
	}
	arch := "null"
	if p.Arch != nil {
		arch = *p.Arch
	}
	return p.OS + "/" + arch + "/" + p.PackageType
}

func TestParseAsset(t *testing.T) {
	for _, tc := range assetVectors {
		t.Run(tc.name, func(t *testing.T) {
			if got := platformString(release.ParseAsset(tc.file)); got != tc.want {
				t.Errorf("ParseAsset(%q) = %q, want %q", tc.file, got, tc.want)
			}
		})
	}
}

// TestParseAssetSharesArch checks the promise of ParseAsset's doc comment:
// two results for the same arch point at one string.
func TestParseAssetSharesArch(t *testing.T) {
	a := release.ParseAsset("photocraft-0.5.0-windows-x64.msi")
	b := release.ParseAsset("photocraft-0.5.0-linux-x86_64.deb")
	if a == nil || b == nil || a.Arch == nil || b.Arch == nil {
		t.Fatalf("ParseAsset: got %v and %v, want two platforms with an arch", a, b)
	}
	if a.Arch != b.Arch {
		t.Errorf("x64 arch pointers: got %p and %p, want the same pointer", a.Arch, b.Arch)
	}
	if a == b {
		t.Errorf("platform pointers: got the same %p twice, want a new Platform per call", a)
	}
}

var (
	knownOSes = map[string]bool{
		release.OSWindows: true, release.OSMacOS: true, release.OSLinux: true,
		release.OSFreeBSD: true, release.OSWeb: true,
	}
	knownArches = map[string]bool{
		release.ArchX64: true, release.ArchX86: true, release.ArchARM64: true, release.ArchUniversal: true,
	}
	// packageSuffix is the file-name ending each non-web package type requires.
	packageSuffix = map[string]string{
		release.PackageMSI:           ".msi",
		release.PackagePortableZip:   "-portable.zip",
		release.PackageDMG:           ".dmg",
		release.PackageCLIZip:        ".zip",
		release.PackageAppImage:      ".AppImage",
		release.PackageAppImageZsync: ".AppImage.zsync",
		release.PackageDeb:           ".deb",
		release.PackageRPM:           ".rpm",
		release.PackageFlatpak:       ".flatpak",
		release.PackageTarGz:         ".tar.gz",
	}
)

func FuzzParseAsset(f *testing.F) {
	for _, tc := range assetVectors {
		f.Add(tc.file)
	}
	f.Fuzz(func(t *testing.T, name string) {
		p := release.ParseAsset(name)
		if p == nil {
			return
		}
		if !knownOSes[p.OS] {
			t.Errorf("ParseAsset(%q).OS = %q, want one of the enum", name, p.OS)
		}
		isWeb := p.OS == release.OSWeb
		if isWeb != (p.PackageType == release.PackageWebZip) {
			t.Errorf("ParseAsset(%q) = %s, want web_zip exactly when os is web", name, platformString(p))
		}
		switch {
		case isWeb && p.Arch != nil:
			t.Errorf("ParseAsset(%q).Arch = %q, want nil for the web build", name, *p.Arch)
		case !isWeb && p.Arch == nil:
			t.Errorf("ParseAsset(%q).Arch = nil, want an arch for os %q", name, p.OS)
		case !isWeb && !knownArches[*p.Arch]:
			t.Errorf("ParseAsset(%q).Arch = %q, want one of the enum", name, *p.Arch)
		}
		if isWeb {
			if !strings.Contains(name, "-web-") || !strings.HasSuffix(name, ".zip") {
				t.Errorf("ParseAsset(%q) = web, want web only for -web- … .zip", name)
			}
			return
		}
		suffix, ok := packageSuffix[p.PackageType]
		if !ok {
			t.Fatalf("ParseAsset(%q).PackageType = %q, want one of the enum", name, p.PackageType)
		}
		if !strings.HasSuffix(name, suffix) {
			t.Errorf("ParseAsset(%q).PackageType = %q, want a name ending in %q", name, p.PackageType, suffix)
		}
	})
}

func BenchmarkParseAsset(b *testing.B) {
	for _, tc := range assetVectors {
		b.Run(tc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				release.ParseAsset(tc.file)
			}
		})
	}
}
