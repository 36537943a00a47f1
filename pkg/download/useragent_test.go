package download_test

import (
	"testing"

	"github.com/storytold/craft-releases/pkg/download"
)

// agents are User-Agent strings real clients send (current major versions;
// only the version numbers change between releases). Where an agent says less
// than it runs on, the case name says what it runs on and want says what the
// agent lets anyone infer.
var agents = []struct {
	name     string
	ua       string
	os, arch string
}{
	// Windows 11 sends "Windows NT 10.0"; Chromium's frozen platform token and
	// Firefox say "Win64; x64" on x64 and on Arm alike.
	{"chrome windows 11, x64 or arm64", "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36", "windows", "x64"},
	{"edge windows 11, x64 or arm64", "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36 Edg/131.0.0.0", "windows", "x64"},
	{"firefox windows 11, x64 or arm64", "Mozilla/5.0 (Windows NT 10.0; Win64; x64; rv:133.0) Gecko/20100101 Firefox/133.0", "windows", "x64"},
	{"firefox 32-bit on 64-bit windows", "Mozilla/5.0 (Windows NT 10.0; WOW64; rv:115.0) Gecko/20100101 Firefox/115.0", "windows", "x64"},
	{"an agent that says windows arm64", "Mozilla/5.0 (Windows NT 10.0; ARM64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36", "windows", "arm64"},

	// Every macOS browser says "Intel Mac OS X 10_15_7" (Firefox: 10.15),
	// on Apple silicon too.
	{"safari macos, apple silicon or intel", "Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/18.1 Safari/605.1.15", "macos", "x64"},
	{"chrome macos, apple silicon or intel", "Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36", "macos", "x64"},
	{"edge macos apple silicon", "Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36 Edg/131.0.0.0", "macos", "x64"},
	{"firefox macos, apple silicon or intel", "Mozilla/5.0 (Macintosh; Intel Mac OS X 10.15; rv:133.0) Gecko/20100101 Firefox/133.0", "macos", "x64"},

	{"chrome linux x64", "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36", "linux", "x64"},
	{"chromium linux arm64", "Mozilla/5.0 (X11; Linux aarch64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/130.0.0.0 Safari/537.36", "linux", "arm64"},
	{"edge linux x64", "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36 Edg/131.0.0.0", "linux", "x64"},
	{"firefox linux x64", "Mozilla/5.0 (X11; Linux x86_64; rv:133.0) Gecko/20100101 Firefox/133.0", "linux", "x64"},
	{"firefox ubuntu x64", "Mozilla/5.0 (X11; Ubuntu; Linux x86_64; rv:133.0) Gecko/20100101 Firefox/133.0", "linux", "x64"},
	{"firefox linux arm64", "Mozilla/5.0 (X11; Linux aarch64; rv:133.0) Gecko/20100101 Firefox/133.0", "linux", "arm64"},
	{"firefox freebsd", "Mozilla/5.0 (X11; FreeBSD amd64; rv:133.0) Gecko/20100101 Firefox/133.0", "freebsd", "x64"},

	{"electron app windows", "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) ArtCraftLauncher/0.2.0 Chrome/130.0.6723.191 Electron/33.3.1 Safari/537.36", "windows", "x64"},
	{"electron app macos", "Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/537.36 (KHTML, like Gecko) ArtCraftLauncher/0.2.0 Chrome/130.0.6723.191 Electron/33.3.1 Safari/537.36", "macos", "x64"},
	{"electron app linux arm64", "Mozilla/5.0 (X11; Linux aarch64) AppleWebKit/537.36 (KHTML, like Gecko) ArtCraftLauncher/0.2.0 Chrome/130.0.6723.191 Electron/33.3.1 Safari/537.36", "linux", "arm64"},

	// Only the platform comment counts.
	{"a product token outside the comment", "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36 WindowsCompat/1.0 arm64", "linux", "x64"},
	{"a comment-less agent naming its system", "PhotoCraft-Updater/1.0 Windows arm64", "windows", "arm64"},
	{"an unclosed comment", "Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7", "macos", "x64"},

	// Nothing this service builds for.
	{"curl", "curl/8.5.0", "", "x64"},
	{"wget", "Wget/1.21.3", "", "x64"},
	{"go http client", "Go-http-client/1.1", "", "x64"},
	{"empty", "", "", "x64"},
	{"safari iphone", "Mozilla/5.0 (iPhone; CPU iPhone OS 18_1 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/18.1 Mobile/15E148 Safari/604.1", "", "x64"},
	{"chrome android", "Mozilla/5.0 (Linux; Android 10; K) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Mobile Safari/537.36", "", "x64"},
	{"chrome os", "Mozilla/5.0 (X11; CrOS x86_64 14541.0.0) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36", "", "x64"},
}

func TestGuess(t *testing.T) {
	for _, tt := range agents {
		t.Run(tt.name, func(t *testing.T) {
			os, arch := download.Guess(tt.ua)
			if os != tt.os || arch != tt.arch {
				t.Errorf("Guess(%q) = %q, %q; want %q, %q", tt.ua, os, arch, tt.os, tt.arch)
			}
		})
	}
}
