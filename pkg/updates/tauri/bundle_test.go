package tauri

import (
	"strings"
	"testing"
)

// TestParseBundle: the names createUpdaterArtifacts gives Tauri v2's
// updater bundles (as tauri-action uploads them) read as their target, arch
// and bundle type; every other name, the bundler's other files and names
// shaped to pass for updater bundles, reads as none. want is
// "target/arch/bundle type", or "" for none.
func TestParseBundle(t *testing.T) {
	for _, tc := range []struct{ name, file, want string }{
		{"nsis x64", "ArtCraft_0.41.0_x64-setup.exe", "windows/x86_64/nsis"},
		{"nsis x86", "ArtCraft_0.41.0_x86-setup.exe", "windows/i686/nsis"},
		{"nsis arm64", "ArtCraft_0.41.0_arm64-setup.exe", "windows/aarch64/nsis"},
		{"msi x64", "ArtCraft_0.41.0_x64_en-US.msi", "windows/x86_64/msi"},
		{"msi x86", "ArtCraft_0.41.0_x86_en-US.msi", "windows/i686/msi"},
		{"msi arm64 with a script", "ArtCraft_0.41.0_arm64_sr-Latn-CS.msi", "windows/aarch64/msi"},
		{"app universal, tauri-action before its version", "ArtCraft_universal.app.tar.gz", "darwin/universal/app"},
		{"app universal", "ArtCraft_0.41.0_universal.app.tar.gz", "darwin/universal/app"},
		{"app aarch64", "ArtCraft_0.41.0_aarch64.app.tar.gz", "darwin/aarch64/app"},
		{"app x64", "ArtCraft_0.41.0_x64.app.tar.gz", "darwin/x86_64/app"},
		{"appimage amd64", "ArtCraft_0.41.0_amd64.AppImage", "linux/x86_64/appimage"},
		{"appimage i386", "ArtCraft_0.41.0_i386.AppImage", "linux/i686/appimage"},
		{"appimage aarch64", "ArtCraft_0.41.0_aarch64.AppImage", "linux/aarch64/appimage"},
		{"appimage armhf", "ArtCraft_0.41.0_armhf.AppImage", "linux/armv7/appimage"},
		{"deb amd64", "ArtCraft_0.41.0_amd64.deb", "linux/x86_64/deb"},
		{"deb i386", "ArtCraft_0.41.0_i386.deb", "linux/i686/deb"},
		{"deb arm64", "ArtCraft_0.41.0_arm64.deb", "linux/aarch64/deb"},
		{"deb armhf", "ArtCraft_0.41.0_armhf.deb", "linux/armv7/deb"},
		{"deb riscv64", "ArtCraft_0.41.0_riscv64.deb", "linux/riscv64/deb"},
		{"rpm x86_64", "ArtCraft-0.41.0-1.x86_64.rpm", "linux/x86_64/rpm"},
		{"rpm i686", "ArtCraft-0.41.0-1.i686.rpm", "linux/i686/rpm"},
		{"rpm aarch64", "ArtCraft-0.41.0-1.aarch64.rpm", "linux/aarch64/rpm"},
		{"rpm armhfp", "ArtCraft-0.41.0-1.armhfp.rpm", "linux/armv7/rpm"},
		{"rpm riscv64", "ArtCraft-0.41.0-1.riscv64.rpm", "linux/riscv64/rpm"},
		{"product renamed by github, pre-release version", "My.App_1.0.0-rc.1+b5_x64-setup.exe", "windows/x86_64/nsis"},

		{"dmg is no updater bundle", "ArtCraft_0.41.0_universal.dmg", ""},
		{"signature", "ArtCraft_0.41.0_x64-setup.exe.sig", ""},
		{"latest.json", "latest.json", ""},
		{"v1 nsis zip", "ArtCraft_0.41.0_x64-setup.nsis.zip", ""},
		{"v1 msi zip", "ArtCraft_0.41.0_x64_en-US.msi.zip", ""},
		{"v1 appimage tar.gz", "ArtCraft_0.41.0_amd64.AppImage.tar.gz", ""},
		{"zsync", "ArtCraft_0.41.0_amd64.AppImage.zsync", ""},
		{"app without arch", "ArtCraft.app.tar.gz", ""},
		{"universal only on macos", "ArtCraft_0.41.0_universal-setup.exe", ""},
		{"universal deb", "ArtCraft_0.41.0_universal.deb", ""},
		{"arch is case-sensitive", "ArtCraft_0.41.0_X64-setup.exe", ""},
		{"suffix is case-sensitive", "ArtCraft_0.41.0_x64-Setup.exe", ""},
		{"extension is case-sensitive", "ArtCraft_0.41.0_x64-setup.EXE", ""},
		{"empty head", "_x64-setup.exe", ""},
		{"no head", "x64-setup.exe", ""},
		{"msi without language", "ArtCraft_0.41.0_x64.msi", ""},
		{"msi without arch", "ArtCraft_0.41.0_en-US.msi", ""},
		{"msi language of one letter", "ArtCraft_0.41.0_x64_e.msi", ""},
		{"msi language with a digit", "ArtCraft_0.41.0_x64_en-U5.msi", ""},
		{"unknown arch", "ArtCraft_0.41.0_ppc64el.deb", ""},
		{"armel is not armv7", "ArtCraft_0.41.0_armel.deb", ""},
		{"x86_64 after an underscore", "ArtCraft_0.41.0_x86_64.deb", ""},
		{"rpm noarch", "ArtCraft-0.41.0-1.noarch.rpm", ""},
		{"rpm without head", ".x86_64.rpm", ""},
		{"rpm without dot", "x86_64.rpm", ""},
		{"space in arch", "ArtCraft_0.41.0_x64 -setup.exe", ""},
		{"trailing space", "ArtCraft_0.41.0_x64-setup.exe ", ""},
		{"leading dot", ".ArtCraft_0.41.0_x64-setup.exe", ""},
		{"bidi override", "ArtCraft\u202e_0.41.0_x64-setup.exe", ""},
		{"control character", "ArtCraft\x00_0.41.0_x64-setup.exe", ""},
		{"path", "dir/ArtCraft_0.41.0_x64-setup.exe", ""},
		{"invalid utf-8", "ArtCraft\xff_0.41.0_x64-setup.exe", ""},
		{"over 200 bytes", strings.Repeat("A", 200) + "_x64-setup.exe", ""},
		{"empty", "", ""},
	} {
		got := ""
		if b, ok := parseBundle(tc.file); ok {
			got = b.target + "/" + b.arch + "/" + b.bundleType
		}
		if got != tc.want {
			t.Errorf("%s: parseBundle(%q) = %q, want %q", tc.name, tc.file, got, tc.want)
		}
	}
}
