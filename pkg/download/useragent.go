package download

import (
	"strings"

	"github.com/storytold/craft-releases/pkg/release"
)

// Guess returns the operating system a User-Agent says it runs on, as a wire
// value ("" when it names none this service builds for, as curl does, or a
// phone: iOS and Android agents name macOS and Linux too), and its arch:
// arm64 when the agent says arm64 or aarch64, else x64.
//
// Agents often say less than they run on: browsers on Apple silicon send
// "Intel Mac OS X", and Chrome, Edge and Firefox on Windows on Arm send
// "Win64; x64". Both run x64 builds (Rosetta 2, Windows' emulation), and on
// macOS a universal build matches any arch (Pick), so the guess is safe; an
// explicit arch gives the native build.
//
// Only the agent's first comment is read, "(Windows NT 10.0; Win64; x64)",
// where browsers and Electron apps name the system, or the whole agent when
// it has none.
func Guess(userAgent string) (os, arch string) {
	ua := platform(userAgent)
	switch {
	case has(ua, "iPhone", "iPad", "iPod", "Android", "CrOS", "Windows Phone"):
		os = ""
	case has(ua, "Windows"):
		os = release.OSWindows
	case has(ua, "Macintosh", "Mac OS X"):
		os = release.OSMacOS
	case has(ua, "FreeBSD"):
		os = release.OSFreeBSD
	case has(ua, "Linux", "X11"):
		os = release.OSLinux
	}
	arch = release.ArchX64
	if has(ua, "arm64", "ARM64", "aarch64", "AArch64") {
		arch = release.ArchARM64
	}
	return os, arch
}

// platform returns the text of ua's first comment, or ua when it has none.
func platform(ua string) string {
	_, rest, ok := strings.Cut(ua, "(")
	if !ok {
		return ua
	}
	comment, _, _ := strings.Cut(rest, ")")
	return comment
}

// has reports whether s contains one of subs.
func has(s string, subs ...string) bool {
	for _, sub := range subs {
		if strings.Contains(s, sub) {
			return true
		}
	}
	return false
}
