package download_test

import (
	"errors"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/storytold/craft-releases/pkg/download"
	"github.com/storytold/craft-releases/pkg/release"
)

// assets builds a release's assets from file names, parsed as the poller does.
func assets(names ...string) []release.Asset {
	as := make([]release.Asset, len(names))
	for i, n := range names {
		as[i] = release.Asset{Name: n, DownloadURL: "https://github.com/storytold/photocraft/releases/download/v1/" + n,
			Platform: release.ParseAsset(n)}
	}
	return as
}

func TestPick(t *testing.T) {
	// Two x64 msi: the first wins.
	full := assets("SHA256SUMS.txt", "photocraft-1.0.0-windows-x64-portable.zip", "photocraft-1.0.0-windows-x64.msi",
		"photocraft-1.0.0-windows-arm64.msi", "photocraft-1.0.0-windows-x64.msi", "photocraft-1.0.0-macos-arm64.dmg",
		"photocraft-1.0.0-macos-universal.dmg", "photocraft-cli-1.0.0-macos-universal.zip", "photocraft-1.0.0-linux-x86_64.AppImage.zsync",
		"photocraft-1.0.0-linux-x86_64.tar.gz", "photocraft-1.0.0-linux-x86_64.deb", "photocraft-1.0.0-linux-x86_64.AppImage",
		"photocraft-1.0.0-linux-aarch64.rpm", "photocraft-1.0.0-freebsd-x86_64.tar.gz", "photocraft-web-1.0.0.zip")
	tests := []struct {
		name   string
		assets []release.Asset
		want   download.Want
		wantOK bool
		asset  string // the name of the asset picked
	}{
		{"windows prefers the msi", full, download.Want{OS: "windows", Arch: "x64"}, true, "photocraft-1.0.0-windows-x64.msi"},
		{"first of two equal assets", full, download.Want{OS: "windows", Arch: "x64", Package: "msi"}, true, "photocraft-1.0.0-windows-x64.msi"},
		{"explicit portable", full, download.Want{OS: "windows", Arch: "x64", Package: "portable_zip"}, true, "photocraft-1.0.0-windows-x64-portable.zip"},
		{"windows arm64", full, download.Want{OS: "windows", Arch: "arm64"}, true, "photocraft-1.0.0-windows-arm64.msi"},
		{"windows portable when no msi", assets("a-1-windows-x64-portable.zip"), download.Want{OS: "windows", Arch: "x64"}, true, "a-1-windows-x64-portable.zip"},
		{"no x86 build", full, download.Want{OS: "windows", Arch: "x86"}, false, ""},
		{"macos arm64: the first of arm64 and universal", full, download.Want{OS: "macos", Arch: "arm64"}, true, "photocraft-1.0.0-macos-arm64.dmg"},
		{"macos arm64: the native build though a universal one comes first", assets("a-1-macos-universal.dmg", "a-1-macos-arm64.dmg"), download.Want{OS: "macos", Arch: "arm64"}, true, "a-1-macos-arm64.dmg"},
		{"macos x64: the universal build when no native one", assets("a-1-macos-universal.dmg", "a-1-macos-arm64.dmg"), download.Want{OS: "macos", Arch: "x64"}, true, "a-1-macos-universal.dmg"},
		{"macos x64 takes the universal build", full, download.Want{OS: "macos", Arch: "x64"}, true, "photocraft-1.0.0-macos-universal.dmg"},
		{"macos universal asked for", full, download.Want{OS: "macos", Arch: "universal"}, true, "photocraft-1.0.0-macos-universal.dmg"},
		{"macos universal is not arm64", assets("a-1-macos-arm64.dmg"), download.Want{OS: "macos", Arch: "universal"}, false, ""},
		{"macos cli only when no dmg", assets("a-cli-1-macos-universal.zip"), download.Want{OS: "macos", Arch: "arm64"}, true, "a-cli-1-macos-universal.zip"},
		{"universal is only for macos", assets("a-1-linux-universal.deb"), download.Want{OS: "linux", Arch: "x64"}, false, ""},
		{"linux prefers the appimage", full, download.Want{OS: "linux", Arch: "x64"}, true, "photocraft-1.0.0-linux-x86_64.AppImage"},
		{"linux deb before tar.gz", assets("a-1-linux-x64.tar.gz", "a-1-linux-x64.rpm", "a-1-linux-x64.deb"), download.Want{OS: "linux", Arch: "x64"}, true, "a-1-linux-x64.deb"},
		{"linux rpm before flatpak", assets("a-1-linux-x64.flatpak", "a-1-linux-x64.rpm"), download.Want{OS: "linux", Arch: "x64"}, true, "a-1-linux-x64.rpm"},
		{"linux flatpak before tar.gz", assets("a-1-linux-x64.tar.gz", "a-1-linux-x64.flatpak"), download.Want{OS: "linux", Arch: "x64"}, true, "a-1-linux-x64.flatpak"},
		{"zsync is never preferred", assets("a-1-linux-x64.AppImage.zsync"), download.Want{OS: "linux", Arch: "x64"}, false, ""},
		{"zsync when asked for", full, download.Want{OS: "linux", Arch: "x64", Package: "app_image_zsync"}, true, "photocraft-1.0.0-linux-x86_64.AppImage.zsync"},
		{"linux arm64", full, download.Want{OS: "linux", Arch: "arm64"}, true, "photocraft-1.0.0-linux-aarch64.rpm"},
		{"freebsd", full, download.Want{OS: "freebsd", Arch: "x64"}, true, "photocraft-1.0.0-freebsd-x86_64.tar.gz"},
		{"web", full, download.Want{OS: "web"}, true, "photocraft-web-1.0.0.zip"},
		{"web has no arch", full, download.Want{OS: "web", Arch: "x64"}, false, ""},
		{"an arch matches no web build", assets("a-web-1.zip"), download.Want{OS: "linux", Arch: ""}, false, ""},
		{"package of another os", full, download.Want{OS: "windows", Arch: "x64", Package: "dmg"}, false, ""},
		{"no assets", nil, download.Want{OS: "windows", Arch: "x64"}, false, ""},
		{"only unrecognised assets", assets("SHA256SUMS.txt", "photocraft.exe"), download.Want{OS: "windows", Arch: "x64"}, false, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			i, ok := download.Pick(tt.assets, tt.want)
			if ok != tt.wantOK {
				t.Fatalf("Pick(%+v) ok = %v, want %v", tt.want, ok, tt.wantOK)
			}
			if !ok {
				if i != -1 {
					t.Errorf("Pick(%+v) = %d without a match, want -1", tt.want, i)
				}
				return
			}
			if got := tt.assets[i].Name; got != tt.asset {
				t.Errorf("Pick(%+v) = %s, want %s", tt.want, got, tt.asset)
			}
			if i != slices.IndexFunc(tt.assets, func(a release.Asset) bool { return a.Name == tt.asset }) {
				t.Errorf("Pick(%+v) = index %d, want the first %s", tt.want, i, tt.asset)
			}
		})
	}
}

func TestPreferred(t *testing.T) {
	for _, tt := range []struct {
		os   string
		want []string
	}{
		{"windows", []string{"msi", "portable_zip"}}, {"macos", []string{"dmg", "cli_zip"}}, {"linux", []string{"app_image", "deb", "rpm", "flatpak", "tar_gz"}},
		{"freebsd", []string{"tar_gz"}}, {"web", []string{"web_zip"}}, {"plan9", nil},
	} {
		if got := download.Preferred(tt.os); !reflect.DeepEqual(got, tt.want) {
			t.Errorf("Preferred(%q) = %q, want %q", tt.os, got, tt.want)
		}
	}
}

func TestCheck(t *testing.T) {
	tests := []struct {
		name      string
		want      download.Want
		wantParam string // "" for no error
		wantMsg   string
	}{
		{"nothing given", download.Want{}, "", ""},
		{"every value", download.Want{OS: "linux", Arch: "arm64", Package: "app_image_zsync"}, "", ""},
		{"web", download.Want{OS: "web", Package: "web_zip"}, "", ""},
		{"os in upper case", download.Want{OS: "Windows"}, "os", `bad os "Windows": want one of windows, macos, linux, freebsd, web`},
		{"amd64", download.Want{OS: "linux", Arch: "amd64"}, "arch", `bad arch "amd64": want one of x64, x86, arm64, universal`},
		{"exe", download.Want{Package: "exe"}, "package", `bad package "exe": want one of msi, portable_zip, dmg, cli_zip, app_image, app_image_zsync, deb, rpm, flatpak, tar_gz, web_zip`},
		{"the first bad value", download.Want{OS: "x", Arch: "y"}, "os", `bad os "x": want one of windows, macos, linux, freebsd, web`},
		{"both channels", download.Want{Channel: "stable"}, "", ""},
		{"prerelease", download.Want{OS: "web", Channel: "prerelease"}, "", ""},
		{"beta", download.Want{Channel: "beta"}, "channel", `bad channel "beta": want one of stable, prerelease`},
		{"channel in upper case", download.Want{Channel: "Prerelease"}, "channel", `bad channel "Prerelease": want one of stable, prerelease`},
		{"a quote and a long value", download.Want{Arch: `"` + strings.Repeat("a", 100)}, "arch",
			`bad arch "\"` + strings.Repeat("a", 63) + `…": want one of x64, x86, arm64, universal`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := download.Check(tt.want)
			if tt.wantParam == "" {
				if err != nil {
					t.Fatalf("Check(%+v) = %v, want nil", tt.want, err)
				}
				return
			}
			var bad *download.BadValueError
			if !errors.As(err, &bad) || bad.Param != tt.wantParam {
				t.Fatalf("Check(%+v) = %v, want a bad %s", tt.want, err, tt.wantParam)
			}
			if got := err.Error(); got != tt.wantMsg {
				t.Errorf("message:\n got %s\nwant %s", got, tt.wantMsg)
			}
		})
	}
}

func TestResolve(t *testing.T) {
	const (
		windows  = "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36"
		linuxARM = "Mozilla/5.0 (X11; Linux aarch64; rv:133.0) Gecko/20100101 Firefox/133.0"
		curl     = "curl/8.5.0"
	)
	tests := []struct {
		name      string
		want      download.Want
		ua        string
		resolved  download.Want
		usedAgent bool
		err       error
	}{
		{"all explicit", download.Want{OS: "linux", Arch: "x64", Package: "deb"}, windows, download.Want{OS: "linux", Arch: "x64", Package: "deb"}, false, nil},
		{"os and arch explicit, no package", download.Want{OS: "macos", Arch: "arm64"}, windows, download.Want{OS: "macos", Arch: "arm64"}, false, nil},
		{"web needs no arch", download.Want{OS: "web"}, curl, download.Want{OS: "web"}, false, nil},
		{"nothing given", download.Want{}, windows, download.Want{OS: "windows", Arch: "x64"}, true, nil},
		{"nothing given, arm64", download.Want{}, linuxARM, download.Want{OS: "linux", Arch: "arm64"}, true, nil},
		{"package given", download.Want{Package: "portable_zip"}, windows, download.Want{OS: "windows", Arch: "x64", Package: "portable_zip"}, true, nil},
		{"os given, arch from the agent", download.Want{OS: "linux"}, linuxARM, download.Want{OS: "linux", Arch: "arm64"}, true, nil},
		{"os given, curl", download.Want{OS: "linux"}, curl, download.Want{OS: "linux", Arch: "x64"}, true, nil},
		{"arch given, os from the agent", download.Want{Arch: "arm64"}, windows, download.Want{OS: "windows", Arch: "arm64"}, true, nil},
		{"curl names no os", download.Want{}, curl, download.Want{}, true, download.ErrUnknownOS},
		{"a phone names no os", download.Want{Arch: "x64"}, "Mozilla/5.0 (Linux; Android 10; K) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Mobile Safari/537.36", download.Want{Arch: "x64"}, true, download.ErrUnknownOS},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, used, err := download.Resolve(tt.want, tt.ua)
			if !errors.Is(err, tt.err) {
				t.Fatalf("Resolve(%+v) error = %v, want %v", tt.want, err, tt.err)
			}
			if got != tt.resolved || used != tt.usedAgent {
				t.Errorf("Resolve(%+v) = %+v, %v; want %+v, %v", tt.want, got, used, tt.resolved, tt.usedAgent)
			}
		})
	}
}

func TestPlatforms(t *testing.T) {
	as := assets("SHA256SUMS.txt", "a-1-windows-x64.msi", "a-1-linux-x64.deb", "b-1-windows-x64.msi", "a-web-1.zip", "a-1-linux-arm64.deb")
	var got []string
	for _, p := range download.Platforms(as) {
		arch := "null"
		if p.Arch != nil {
			arch = *p.Arch
		}
		got = append(got, p.OS+"/"+arch+"/"+p.PackageType)
	}
	want := []string{"windows/x64/msi", "linux/x64/deb", "web/null/web_zip", "linux/arm64/deb"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Platforms = %q, want %q", got, want)
	}
	if got := download.Platforms(nil); got != nil {
		t.Errorf("Platforms(nil) = %v, want nil", got)
	}
}

func TestPickAllocs(t *testing.T) {
	as := assets("a-1-linux-x64.tar.gz", "a-1-linux-x64.deb", "a-1-windows-x64.msi")
	if got := testing.AllocsPerRun(100, func() {
		w, _, _ := download.Resolve(download.Want{}, agents[0].ua)
		download.Pick(as, w)
	}); got != 0 {
		t.Errorf("allocations per Resolve and Pick: got %v, want 0", got)
	}
}

func TestLink(t *testing.T) {
	x64 := "x64"
	tests := []struct {
		app  string
		p    release.Platform
		want string
	}{
		{"photocraft", release.Platform{OS: "windows", Arch: &x64, PackageType: "msi"}, "/v1/craft_apps/download/photocraft?os=windows&arch=x64&package=msi"},
		{"photocraft", release.Platform{OS: "web", PackageType: "web_zip"}, "/v1/craft_apps/download/photocraft?os=web&package=web_zip"},
		{"a b/c", release.Platform{OS: "web", PackageType: "web_zip"}, "/v1/craft_apps/download/a%20b%2Fc?os=web&package=web_zip"},
	}
	for _, tt := range tests {
		if got := download.Link(tt.app, tt.p); got != tt.want {
			t.Errorf("Link(%q, %+v) = %s, want %s", tt.app, tt.p, got, tt.want)
		}
	}
}

// FuzzChoose feeds arbitrary links and agents through Check, Resolve and
// Pick: they must not panic, and an asset picked must be of the platform
// asked for.
func FuzzChoose(f *testing.F) {
	for _, a := range agents {
		f.Add(a.ua, "", "", "")
	}
	f.Add("curl/8.5.0", "macos", "arm64", "dmg")
	f.Add("", "web", "", "web_zip")
	f.Add("Windows ARM64", "", "x86", "msi")
	as := assets("SHA256SUMS.txt", "a-1-windows-x64.msi", "a-1-windows-arm64-portable.zip", "a-1-macos-universal.dmg",
		"a-cli-1-macos-arm64.zip", "a-1-linux-x86_64.AppImage", "a-1-linux-aarch64.deb", "a-1-freebsd-x64.tar.gz", "a-web-1.zip")
	f.Fuzz(func(t *testing.T, ua, os, arch, pkg string) {
		gos, garch := download.Guess(ua)
		if (gos != "" && download.Preferred(gos) == nil) || (garch != "x64" && garch != "arm64") {
			t.Fatalf("Guess(%q) = %q, %q: not wire values", ua, gos, garch)
		}
		want := download.Want{OS: os, Arch: arch, Package: pkg}
		if download.Check(want) != nil {
			return
		}
		w, _, err := download.Resolve(want, ua)
		if err != nil {
			return
		}
		i, ok := download.Pick(as, w)
		if !ok {
			return
		}
		p := as[i].Platform
		if p.OS != w.OS || (w.Package != "" && p.PackageType != w.Package) {
			t.Fatalf("Pick(%+v) = %s", w, as[i].Name)
		}
	})
}
