package squirrel_test

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/storytold/craft-releases/pkg/release"
	"github.com/storytold/craft-releases/pkg/updates/squirrel"
)

const (
	app  = "photocraft"
	repo = "storytold/photocraft"
	tag  = "v1.2.0"
)

// Hashes as Squirrel.Windows writes them; shaUpper as a publisher may.
const (
	shaFull  = "3a2eadd15dd984e4559f2b4d790ec8badaeb6a39"
	shaDelta = "14db31d2647c6d2284882a2e101924a9c409ee67"
	shaIA32  = "0c5c5d5e9f1a2b3c4d5e6f708192a3b4c5d6e7f8"
	shaUpper = "ABCDEF0123456789ABCDEF0123456789ABCDEF01"
)

// photocraft is a release of Squirrel.Windows packages as electron-builder
// and Electron Forge publish them: x64 with a delta and the bare RELEASES,
// ia32 with Forge's prefix, arm64's RELEASES under electron-builder's name,
// and the macOS zips; by name, the asset's size.
var photocraft = map[string]int64{
	"PhotoCraft-1.2.0-delta.nupkg": 5242880, "PhotoCraft-1.2.0-full.nupkg": 104857600, "PhotoCraft.Setup.1.2.0.exe": 110000000, "RELEASES": 162,
	"ia32.PhotoCraft-1.2.0-full.nupkg": 99000000, "ia32.RELEASES": 87, "RELEASES-arm64": 80,
	"PhotoCraft-1.2.0-arm64-mac.zip": 120000000, "PhotoCraft-1.2.0-mac.zip": 121000000,
}

var published = release.NewTime(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))

// newRelease returns release tag of repo with these assets, by name and
// size, in name order.
func newRelease(version string, assets map[string]int64) *release.Release {
	r := &release.Release{Tag: tag, Version: version, Name: "PhotoCraft 1.2.0", PublishedAt: published,
		HTMLURL: release.TagURL(repo, tag), NotesMarkdown: "## Changes\n\n- faster"}
	for _, name := range slices.Sorted(maps.Keys(assets)) {
		r.Assets = append(r.Assets, release.Asset{Name: name, SizeBytes: assets[name], DownloadURL: release.DownloadURL(repo, tag, name)})
	}
	return r
}

func url(name string) string { return release.DownloadURL(repo, tag, name) }

// TestReleasesArch: the RELEASES names of each convention and their arch;
// anything else is none.
func TestReleasesArch(t *testing.T) {
	for _, tc := range []struct {
		name, arch string
		ok         bool
	}{
		{"RELEASES", "", true},
		{"RELEASES-x64", "x64", true},
		{"RELEASES-ia32", "ia32", true},
		{"RELEASES-arm64", "arm64", true},
		{"x64.RELEASES", "x64", true},
		{"ia32.RELEASES", "ia32", true},
		{"arm64.RELEASES", "arm64", true},
		{"releases", "", false},
		{"RELEASES.txt", "", false},
		{"RELEASES-", "", false},
		{"RELEASES-win", "", false}, // Velopack's legacy file, not Squirrel's
		{"RELEASES-x86", "", false},
		{"RELEASES-ARM64", "", false},
		{"arm64-RELEASES", "", false},
		{".RELEASES", "", false},
		{"x64.RELEASES-x64", "", false},
		{"RELEASES ", "", false},
		{"", "", false},
	} {
		arch, ok := squirrel.ReleasesArch(tc.name)
		if arch != tc.arch || ok != tc.ok {
			t.Errorf("ReleasesArch(%q) = %q, %v; want %q, %v", tc.name, arch, ok, tc.arch, tc.ok)
		}
		if got := squirrel.IsReleases(tc.name); got != tc.ok {
			t.Errorf("IsReleases(%q) = %v, want %v", tc.name, got, tc.ok)
		}
	}
}

// TestParse: RELEASES files as Squirrel.Windows, electron-builder and
// Electron Forge write them, and as a publisher may edit them, read to
// their entries.
func TestParse(t *testing.T) {
	full := squirrel.Entry{SHA1: shaFull, Name: "PhotoCraft-1.2.0-full.nupkg", Size: 104857600}
	delta := squirrel.Entry{SHA1: shaDelta, Name: "PhotoCraft-1.2.0-delta.nupkg", Size: 5242880, Delta: true}
	staged := func(e squirrel.Entry, percent int) squirrel.Entry {
		e.Staged, e.Percent = true, percent
		return e
	}
	named := func(name string) squirrel.Entry { return squirrel.Entry{SHA1: shaFull, Name: name, Size: 100} }
	for _, tc := range []struct {
		name string
		body string
		want []squirrel.Entry
	}{
		{"one package, no final LF", shaFull + " PhotoCraft-1.2.0-full.nupkg 104857600", []squirrel.Entry{full}},
		{"delta then full, as Squirrel.Windows sorts them", shaDelta + " PhotoCraft-1.2.0-delta.nupkg 5242880\n" + shaFull + " PhotoCraft-1.2.0-full.nupkg 104857600", []squirrel.Entry{delta, full}},
		{"staged rollout", shaDelta + " PhotoCraft-1.2.0-delta.nupkg 5242880 # 10%\n" + shaFull + " PhotoCraft-1.2.0-full.nupkg 104857600 # 10%\n", []squirrel.Entry{staged(delta, 10), staged(full, 10)}},
		{"rollout paused and complete", shaDelta + " PhotoCraft-1.2.0-delta.nupkg 5242880 # 0%\n" + shaFull + " PhotoCraft-1.2.0-full.nupkg 104857600 # 100%", []squirrel.Entry{staged(delta, 0), staged(full, 100)}},
		{"byte order mark and CR LF", "\uFEFF" + shaDelta + " PhotoCraft-1.2.0-delta.nupkg 5242880\r\n" + shaFull + " PhotoCraft-1.2.0-full.nupkg 104857600\r\n", []squirrel.Entry{delta, full}},
		{"blank lines skipped", "\n  \n" + shaFull + " PhotoCraft-1.2.0-full.nupkg 104857600\n\t\r\n\n", []squirrel.Entry{full}},
		{"runs of spaces and tabs", shaFull + "   PhotoCraft-1.2.0-full.nupkg\t\t104857600 \t#  10%", []squirrel.Entry{staged(full, 10)}},
		{"absolute URL of the release", shaFull + " " + url("PhotoCraft-1.2.0-full.nupkg") + " 104857600", []squirrel.Entry{{SHA1: shaFull, Name: "PhotoCraft-1.2.0-full.nupkg", URL: url("PhotoCraft-1.2.0-full.nupkg"), Size: 104857600}}},
		{"SHA1 in capitals kept", shaUpper + " PhotoCraft-1.2.0-full.nupkg 104857600", []squirrel.Entry{{SHA1: shaUpper, Name: "PhotoCraft-1.2.0-full.nupkg", Size: 104857600}}},
		{"electron-builder's lowercase id", shaFull + " photocraft-1.2.0-full.nupkg 100", []squirrel.Entry{named("photocraft-1.2.0-full.nupkg")}},
		{"Forge's arch prefix", shaFull + " ia32.PhotoCraft-1.2.0-full.nupkg 100", []squirrel.Entry{named("ia32.PhotoCraft-1.2.0-full.nupkg")}},
		{"pre-release as NuGet writes it", shaFull + " PhotoCraft-1.2.0-beta2-full.nupkg 100", []squirrel.Entry{named("PhotoCraft-1.2.0-beta2-full.nupkg")}},
		{"pre-release tag with dashes", shaFull + " PhotoCraft-1.2.0-rc-2-full.nupkg 100", []squirrel.Entry{named("PhotoCraft-1.2.0-rc-2-full.nupkg")}},
		{"two-number and four-number versions", shaFull + " App-1.2-full.nupkg 100\n" + shaFull + " App-1.2.3.4-full.nupkg 100", []squirrel.Entry{named("App-1.2-full.nupkg"), named("App-1.2.3.4-full.nupkg")}},
		{"no -full", shaFull + " App-1.2.0.nupkg 100", []squirrel.Entry{named("App-1.2.0.nupkg")}},
		{"id with dashes and numbers", shaFull + " photo-craft-2-1.2.0-full.nupkg 100", []squirrel.Entry{named("photo-craft-2-1.2.0-full.nupkg")}},
		{"largest size", shaFull + " App-1.2.0-full.nupkg 9007199254740991", []squirrel.Entry{{SHA1: shaFull, Name: "App-1.2.0-full.nupkg", Size: release.MaxSizeBytes}}},
	} {
		if got := parsed(t, tc.body).Entries(); !slices.Equal(got, tc.want) {
			t.Errorf("%s: Parse = %+v\nwant    %+v", tc.name, got, tc.want)
		}
	}
}

// TestParseRefuses: every file Squirrel.Windows rejects, every line it
// would read otherwise than meant, and hostile ones, with the error that
// names the line.
func TestParseRefuses(t *testing.T) {
	line := func(file string) string { return shaFull + " " + file + " 100" }
	good := line("App-1.2.0-full.nupkg")
	for _, tc := range []struct{ name, body, want string }{
		// The file.
		{"empty", "", "no package: Squirrel.Windows refuses an empty RELEASES"},
		{"blank lines only", "\n \r\n\t\n", "no package: Squirrel.Windows refuses an empty RELEASES"},
		{"over MaxReleases", good + "\n" + strings.Repeat(" ", squirrel.MaxReleases-len(good)), "1048577 bytes: over 1048576"},
		{"a package twice", good + "\n" + good, "line 2: App-1.2.0-full.nupkg is already on line 1"},
		{"a package twice, once by URL", shaFull + " " + url("App-1.2.0-full.nupkg") + " 100\n\n" + good, "line 3: App-1.2.0-full.nupkg is already on line 1"},
		// Characters.
		{"not UTF-8", good + "\n" + shaFull + " App-\xff-1.2.0-full.nupkg 100", "line 2: not UTF-8"},
		{"NUL", good + "\x00", "line 1: character U+0000: neither printable nor a tab"},
		{"control character in a name", line("App\x01-1.2.0-full.nupkg"), "line 1: character U+0001: neither printable nor a tab"},
		{"escape sequence", line("\x1b[2JApp-1.2.0-full.nupkg"), "line 1: character U+001B: neither printable nor a tab"},
		{"vertical tab", shaFull + "\vApp-1.2.0-full.nupkg 100", "line 1: character U+000B: neither printable nor a tab"},
		{"DEL", line("App\x7f-1.2.0-full.nupkg"), "line 1: character U+007F: neither printable nor a tab"},
		{"NEL", shaFull + "\u0085App-1.2.0-full.nupkg 100", "line 1: character U+0085: neither printable nor a tab"},
		{"no-break space", shaFull + "\u00a0App-1.2.0-full.nupkg 100", "line 1: character U+00A0: neither printable nor a tab"},
		{"line separator", good + "\u2028" + good, "line 1: character U+2028: neither printable nor a tab"},
		{"bidirectional override", line("App-1.2.0-\u202elluf.nupkg"), "line 1: character U+202E: neither printable nor a tab"},
		{"byte order mark on line 2", good + "\n\uFEFF" + good, "line 2: character U+FEFF: neither printable nor a tab"},
		{"CR inside a line", shaFull + "\rApp-1.2.0-full.nupkg 100", "line 1: character U+000D: neither printable nor a tab"},
		{"two CRs", good + "\r\r\n", "line 1: character U+000D: neither printable nor a tab"},
		// Fields.
		{"space before the SHA1", " " + good, "line 1: white space before the SHA1"},
		{"space at the end", good + " ", "line 1: white space at the end"},
		{"tab at the end before CR", good + "\t\r\n", "line 1: white space at the end"},
		{"two fields", shaFull + " App-1.2.0-full.nupkg", `line 1: 2 fields: want "<SHA1> <file> <size>", then optionally "# NN%"`},
		{"four fields", good + " 200", `line 1: 4 fields: want "<SHA1> <file> <size>", then optionally "# NN%"`},
		{"short SHA1", shaFull[1:] + " App-1.2.0-full.nupkg 100", `line 1: SHA1 "a2eadd15dd984e4559f2b4d790ec8badaeb6a39": not 40 hex digits`},
		{"long SHA1", shaFull + "0 App-1.2.0-full.nupkg 100", `line 1: SHA1 "3a2eadd15dd984e4559f2b4d790ec8badaeb6a390": not 40 hex digits`},
		{"SHA1 not hex", "g" + shaFull[1:] + " App-1.2.0-full.nupkg 100", `line 1: SHA1 "ga2eadd15dd984e4559f2b4d790ec8badaeb6a39": not 40 hex digits`},
		{"SHA-256 for a SHA1", strings.Repeat("ab", 32) + " App-1.2.0-full.nupkg 100", `line 1: SHA1 "abababababababababababababababababababababababababababababababab": not 40 hex digits`},
		// Sizes.
		{"size 0", shaFull + " App-1.2.0-full.nupkg 0", `line 1: size "0": not 1 to 9007199254740991 bytes`},
		{"size with a leading zero", shaFull + " App-1.2.0-full.nupkg 0100", `line 1: size "0100": not 1 to 9007199254740991 bytes`},
		{"negative size", shaFull + " App-1.2.0-full.nupkg -100", `line 1: size "-100": not 1 to 9007199254740991 bytes`},
		{"size with a fraction", shaFull + " App-1.2.0-full.nupkg 1.5", `line 1: size "1.5": not 1 to 9007199254740991 bytes`},
		{"size over MaxSizeBytes", shaFull + " App-1.2.0-full.nupkg 9007199254740992", `line 1: size "9007199254740992": not 1 to 9007199254740991 bytes`},
		{"size over int64", shaFull + " App-1.2.0-full.nupkg 99999999999999999999", `line 1: size "99999999999999999999": not 1 to 9007199254740991 bytes`},
		{"size in Arabic-Indic digits", shaFull + " App-1.2.0-full.nupkg ١٢٣", `line 1: size "١٢٣": not 1 to 9007199254740991 bytes`},
		// Staged rollouts and comments.
		{"rollout over 100%", good + " # 101%", `line 1: staged rollout "101%": not 0 to 100%`},
		{"rollout of four digits", good + " # 1000%", `line 1: staged rollout "1000%": not 0 to 100%`},
		{"rollout with a leading zero", good + " # 050%", `line 1: staged rollout "050%": not 0 to 100%`},
		{"rollout without a number", good + " # %", `line 1: staged rollout "%": not 0 to 100%`},
		{"rollout before CR", good + " # 10%\r\n", `line 1: a staged rollout "# NN%" before a CR: Squirrel.Windows would not read it`},
		{"rollout without a space after #", good + " #10%", `line 1: a "#" that is not a staged rollout "# NN%"`},
		{"rollout without a space before #", good + "# 10%", `line 1: a "#" that is not a staged rollout "# NN%"`},
		{"rollout with a space before %", good + " # 10 %", `line 1: a "#" that is not a staged rollout "# NN%"`},
		{"comment after an entry", good + " # built by CI", `line 1: a "#" that is not a staged rollout "# NN%"`},
		{"comment line", "# photocraft\n" + good, `line 1: a "#" that is not a staged rollout "# NN%"`},
		{"# in a name", line("App-1.2.0-full.nupkg#x"), `line 1: a "#" that is not a staged rollout "# NN%"`},
		// Names.
		{"not a nupkg", line("App-1.2.0-mac.zip"), `line 1: file "App-1.2.0-mac.zip": not a .nupkg`},
		{"NUPKG in capitals", line("App-1.2.0-full.NUPKG"), `line 1: file "App-1.2.0-full.NUPKG": not a .nupkg`},
		{"delta in capitals", line("App-1.2.0-DELTA.nupkg"), `line 1: file "App-1.2.0-DELTA.nupkg": write "-delta.nupkg" in lowercase`},
		{"Delta", line("App-1.2.0-Delta.nupkg"), `line 1: file "App-1.2.0-Delta.nupkg": write "-delta.nupkg" in lowercase`},
		{"no version", line("App-full.nupkg"), `line 1: file "App-full.nupkg": no version Squirrel.Windows reads, as in App-1.2.0-full.nupkg`},
		{"version of one number", line("App-1-full.nupkg"), `line 1: file "App-1-full.nupkg": no version Squirrel.Windows reads, as in App-1.2.0-full.nupkg`},
		{"version of five numbers", line("App-1.2.3.4.5-full.nupkg"), `line 1: file "App-1.2.3.4.5-full.nupkg": no version Squirrel.Windows reads, as in App-1.2.0-full.nupkg`},
		{"SemVer pre-release with a dot", line("App-1.2.0-beta.1-full.nupkg"), `line 1: file "App-1.2.0-beta.1-full.nupkg": no version Squirrel.Windows reads, as in App-1.2.0-full.nupkg`},
		{"pre-release starting with a digit", line("App-1.2.0-2beta-full.nupkg"), `line 1: file "App-1.2.0-2beta-full.nupkg": no version Squirrel.Windows reads, as in App-1.2.0-full.nupkg`},
		{"number over 9 digits", line("App-1234567890.0-full.nupkg"), `line 1: file "App-1234567890.0-full.nupkg": no version Squirrel.Windows reads, as in App-1.2.0-full.nupkg`},
		{"no id", line("-1.2.0-full.nupkg"), `line 1: file "-1.2.0-full.nupkg": no version Squirrel.Windows reads, as in App-1.2.0-full.nupkg`},
		{"no dash before the version", line("App1.2.0-full.nupkg"), `line 1: file "App1.2.0-full.nupkg": no version Squirrel.Windows reads, as in App-1.2.0-full.nupkg`},
		{"a path", line("packages/App-1.2.0-full.nupkg"), `line 1: file "packages/App-1.2.0-full.nupkg": not a file name`},
		{"a Windows path", line(`..\App-1.2.0-full.nupkg`), `line 1: file "..\\App-1.2.0-full.nupkg": not a file name`},
		{"a hidden file", line(".App-1.2.0-full.nupkg"), `line 1: file ".App-1.2.0-full.nupkg": not a file name`},
		{"a drive", line("C:App-1.2.0-full.nupkg"), `line 1: file "C:App-1.2.0-full.nupkg": not a file name`},
		{"a name over 200 bytes", line(strings.Repeat("a", 190) + "-1.2.0-full.nupkg"), `line 1: file "` + strings.Repeat("a", 128) + `"…: not a file name`},
		// URLs.
		{"another host", line("https://evil.example/App-1.2.0-full.nupkg"), `line 1: URL "https://evil.example/App-1.2.0-full.nupkg": not on https://github.com/`},
		{"a host that starts like GitHub's", line("https://github.com.evil.example/App-1.2.0-full.nupkg"), `line 1: URL "https://github.com.evil.example/App-1.2.0-full.nupkg": not on https://github.com/`},
		{"user info", line("https://github.com@evil.example/App-1.2.0-full.nupkg"), `line 1: URL "https://github.com@evil.example/App-1.2.0-full.nupkg": not on https://github.com/`},
		{"a port", line("https://github.com:8443/o/r/App-1.2.0-full.nupkg"), `line 1: URL "https://github.com:8443/o/r/App-1.2.0-full.nupkg": not on https://github.com/`},
		{"plain http", line("http://github.com/storytold/photocraft/releases/download/v1.2.0/App-1.2.0-full.nupkg"), `line 1: URL "http://github.com/storytold/photocraft/releases/download/v1.2.0/App-1.2.0-full.nupkg": not on https://github.com/`},
		{"scheme in capitals", line("HTTPS://github.com/storytold/photocraft/releases/download/v1.2.0/App-1.2.0-full.nupkg"), `line 1: URL "HTTPS://github.com/storytold/photocraft/releases/download/v1.2.0/App-1.2.0-full.nupkg": not on https://github.com/`},
		{"a bad escape", line("https://github.com/o/r/releases/download/v1/App%zz-1.2.0-full.nupkg"), `line 1: URL "https://github.com/o/r/releases/download/v1/App%zz-1.2.0-full.nupkg": invalid URL escape "%zz"`},
		{"a query", line("https://github.com/o/r/releases/download/v1/App-1.2.0-full.nupkg?x=1"), `line 1: file "App-1.2.0-full.nupkg?x=1": not a file name`},
		{"an escaped slash", line("https://github.com/o/r/releases/download/v1/x%2FApp-1.2.0-full.nupkg"), `line 1: file "x/App-1.2.0-full.nupkg": not a file name`},
		{"a URL to no package", line(url("PhotoCraft.Setup.1.2.0.exe")), `line 1: file "PhotoCraft.Setup.1.2.0.exe": not a .nupkg`},
		{"another scheme", line("file://C:/App-1.2.0-full.nupkg"), `line 1: file "file://C:/App-1.2.0-full.nupkg": not a file name`},
	} {
		r, err := squirrel.Parse([]byte(tc.body))
		if err == nil || err.Error() != tc.want {
			t.Errorf("%s: Parse = %+v, %v; want the error %q", tc.name, r.Entries(), err, tc.want)
		}
		if err != nil && len(err.Error()) > 300 {
			t.Errorf("%s: error of %d bytes: a hostile line is quoted in full", tc.name, len(err.Error()))
		}
	}
}

// TestCheck: a RELEASES file is served for a release only when every line
// names one of its packages, by name or by its exact download URL, with
// its size.
func TestCheck(t *testing.T) {
	rel := newRelease("1.2.0", photocraft)
	for _, tc := range []struct{ name, body, want string }{
		{"names of the release", shaDelta + " PhotoCraft-1.2.0-delta.nupkg 5242880\n" + shaFull + " PhotoCraft-1.2.0-full.nupkg 104857600", ""},
		{"download URLs of the release", shaFull + " " + url("PhotoCraft-1.2.0-full.nupkg") + " 104857600\n" + shaIA32 + " " + url("ia32.PhotoCraft-1.2.0-full.nupkg") + " 99000000", ""},
		{"a package of an older release", shaFull + " PhotoCraft-1.1.0-full.nupkg 104857600\n" + shaFull + " PhotoCraft-1.2.0-full.nupkg 104857600", "line 1: PhotoCraft-1.1.0-full.nupkg is not an asset of release v1.2.0"},
		{"a name in other letter case", shaFull + " photocraft-1.2.0-full.nupkg 104857600", "line 1: photocraft-1.2.0-full.nupkg is not an asset of release v1.2.0"},
		{"a URL into another repository", shaFull + " https://github.com/storytold/other/releases/download/v1.2.0/PhotoCraft-1.2.0-full.nupkg 104857600", `line 1: URL "https://github.com/storytold/other/releases/download/v1.2.0/PhotoCraft-1.2.0-full.nupkg": not the download URL of PhotoCraft-1.2.0-full.nupkg in release v1.2.0`},
		{"a URL into another release", "\n" + shaFull + " " + release.DownloadURL(repo, "v1.1.0", "PhotoCraft-1.2.0-full.nupkg") + " 104857600", `line 2: URL "https://github.com/storytold/photocraft/releases/download/v1.1.0/PhotoCraft-1.2.0-full.nupkg": not the download URL of PhotoCraft-1.2.0-full.nupkg in release v1.2.0`},
		{"a URL that climbs into another repository", shaFull + " https://github.com/storytold/photocraft/releases/download/v1.2.0/../../../../evil/x/releases/download/v1.2.0/PhotoCraft-1.2.0-full.nupkg 104857600", `line 1: URL "https://github.com/storytold/photocraft/releases/download/v1.2.0/../../../../evil/x/releases/download/v1.2.0/PhotoCraft-1.2.0-fu"…: not the download URL of PhotoCraft-1.2.0-full.nupkg in release v1.2.0`},
		{"a URL escaped otherwise", shaFull + " https://github.com/storytold/photocraft/releases/download/v1.2.0/PhotoCraft%2D1.2.0-full.nupkg 104857600", `line 1: URL "https://github.com/storytold/photocraft/releases/download/v1.2.0/PhotoCraft%2D1.2.0-full.nupkg": not the download URL of PhotoCraft-1.2.0-full.nupkg in release v1.2.0`},
		{"a size that is not the asset's", shaFull + " PhotoCraft-1.2.0-full.nupkg 104857601", "line 1: size 104857601, but asset PhotoCraft-1.2.0-full.nupkg has 104857600 bytes"},
	} {
		err := parsed(t, tc.body).Check(rel)
		if got := fmt.Sprint(err); tc.want == "" && err != nil || tc.want != "" && got != tc.want {
			t.Errorf("%s: Check = %v, want %q", tc.name, err, tc.want)
		}
	}
}

// TestCheckRelease: no release, or one whose asset points elsewhere (a
// release that did not pass release.Verify), serves no RELEASES.
func TestCheckRelease(t *testing.T) {
	r := parsed(t, shaFull+" PhotoCraft-1.2.0-full.nupkg 104857600")
	elsewhere := newRelease("1.2.0", map[string]int64{"PhotoCraft-1.2.0-full.nupkg": 104857600})
	elsewhere.Assets[0].DownloadURL = release.DownloadURL("storytold/other", tag, "PhotoCraft-1.2.0-full.nupkg")
	injected := newRelease("1.2.0", map[string]int64{"PhotoCraft-1.2.0-full.nupkg": 104857600})
	injected.Assets[0].DownloadURL += " 1\n" + shaFull + " https://evil.example/x.nupkg"
	noPage := newRelease("1.2.0", map[string]int64{"PhotoCraft-1.2.0-full.nupkg": 104857600})
	noPage.HTMLURL = "https://evil.example/"
	for _, tc := range []struct {
		name string
		rel  *release.Release
		want string
	}{
		{"no release", nil, "no release"},
		{"an asset in another repository", elsewhere, "asset PhotoCraft-1.2.0-full.nupkg: download URL not in release v1.2.0 of storytold/photocraft"},
		{"a download URL with a line in it", injected, "asset PhotoCraft-1.2.0-full.nupkg: download URL not in release v1.2.0 of storytold/photocraft"},
		{"no page on GitHub", noPage, "release v1.2.0: no page on GitHub"},
	} {
		if err := r.Check(tc.rel); fmt.Sprint(err) != tc.want {
			t.Errorf("%s: Check = %v, want %q", tc.name, err, tc.want)
		}
		if b, err := r.Absolute(tc.rel); err == nil || b != nil {
			t.Errorf("%s: Absolute = %q, %v; want Check's error", tc.name, b, err)
		}
	}
	if err := (squirrel.Releases{}).Check(newRelease("1.2.0", photocraft)); fmt.Sprint(err) != "no package" {
		t.Errorf("Check of the zero Releases = %v, want no package", err)
	}
}

// TestAbsolute: the file as served: every line's package at its GitHub
// download URL, deltas kept, hashes, sizes and rollouts as written, LF
// line ends, whatever the file's own.
func TestAbsolute(t *testing.T) {
	rel := newRelease("1.2.0", photocraft)
	want := shaDelta + " https://github.com/storytold/photocraft/releases/download/v1.2.0/PhotoCraft-1.2.0-delta.nupkg 5242880 # 10%\n" +
		shaUpper + " https://github.com/storytold/photocraft/releases/download/v1.2.0/PhotoCraft-1.2.0-full.nupkg 104857600 # 10%\n"
	for _, tc := range []struct{ name, body, want string }{
		{"file names", shaDelta + " PhotoCraft-1.2.0-delta.nupkg 5242880 # 10%\n" + shaUpper + " PhotoCraft-1.2.0-full.nupkg 104857600 # 10%", want},
		{"URLs, BOM, blank lines and tabs", "\uFEFF\n" + shaDelta + "\t" + url("PhotoCraft-1.2.0-delta.nupkg") + " 5242880  #  10%\n\n" + shaUpper + " PhotoCraft-1.2.0-full.nupkg\t104857600 # 10%\n\n", want},
		{"the served file again", want, want},
		{"CR LF", shaIA32 + " ia32.PhotoCraft-1.2.0-full.nupkg 99000000\r\n", shaIA32 + " " + url("ia32.PhotoCraft-1.2.0-full.nupkg") + " 99000000\n"},
	} {
		if got, err := parsed(t, tc.body).Absolute(rel); err != nil || string(got) != tc.want {
			t.Errorf("%s: Absolute = %q, %v\nwant %q", tc.name, got, err, tc.want)
		}
	}
}

// FuzzParse: Parse never panics; what it accepts is well formed, and
// served for a release carrying its packages it reads back to the same
// entries, each with its URL.
func FuzzParse(f *testing.F) {
	for _, s := range []string{
		shaDelta + " PhotoCraft-1.2.0-delta.nupkg 5242880 # 10%\n" + shaFull + " PhotoCraft-1.2.0-full.nupkg 104857600 # 10%",
		"\uFEFF" + shaFull + " " + url("App-1.2.0-beta2-full.nupkg") + " 1\r\n\r\n",
		shaFull + " App-1.2.3.4.nupkg 9007199254740991\n\t\n" + shaUpper + " ü-1.0-delta.nupkg 7 # 0%",
		shaFull + " https://github.com/o/r/releases/download/a%2Fb/%C3%BC-1.0-full.nupkg 1",
		"", "\n", "# 10%", shaFull + " App-1.2.0-full.nupkg 0100", shaFull + " App\x00-1.2.0-full.nupkg 1",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		r, err := squirrel.Parse(body)
		if err != nil {
			if r.Entries() != nil {
				t.Fatalf("Parse failed with %v yet returned %+v", err, r.Entries())
			}
			return
		}
		entries := r.Entries()
		if len(entries) == 0 {
			t.Fatalf("Parse accepted %q with no entry", body)
		}
		assets := map[string]int64{}
		for _, e := range entries {
			if len(e.SHA1) != 40 || !release.GoodAssetName(e.Name) || !strings.HasSuffix(e.Name, ".nupkg") ||
				e.Size < 1 || e.Size > release.MaxSizeBytes || e.Percent < 0 || e.Percent > 100 || !e.Staged && e.Percent != 0 ||
				e.Delta != strings.HasSuffix(e.Name, "-delta.nupkg") || e.URL != "" && !strings.HasPrefix(e.URL, "https://github.com/") {
				t.Fatalf("Parse(%q) returned %+v", body, e)
			}
			if _, dup := assets[e.Name]; dup {
				t.Fatalf("Parse(%q) returned %s twice", body, e.Name)
			}
			assets[e.Name] = e.Size
		}
		rel := newRelease("1.2.0", assets)
		served, err := r.Absolute(rel)
		if err != nil {
			for _, e := range entries {
				if e.URL != "" && e.URL != url(e.Name) {
					return // a URL elsewhere: Check's to refuse
				}
			}
			t.Fatalf("Absolute(%q): %v", body, err)
		}
		again, err := squirrel.Parse(served)
		must(t, err)
		for i := range entries {
			entries[i].URL = url(entries[i].Name)
		}
		if got := again.Entries(); !slices.Equal(got, entries) {
			t.Fatalf("Parse of the served %q = %+v\nwant %+v", served, got, entries)
		}
	})
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// parsed is the RELEASES file body as Parse reads it; a refusal stops t.
func parsed(t testing.TB, body string) squirrel.Releases {
	t.Helper()
	r, err := squirrel.Parse([]byte(body))
	must(t, err)
	return r
}
