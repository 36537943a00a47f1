package velopack_test

import (
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/storytold/craft-releases/pkg/release"
	"github.com/storytold/craft-releases/pkg/updates/velopack"
)

const (
	repo = "storytold/artcraft"
	tag  = "v0.42.0"
)

// The hashes of the fixtures' packages.
const (
	fullSHA1     = "52E6D8AB88471AF82DA12A0EAE7AAB01357E3881"
	fullSHA256   = "A18B869B2E81C0C529552A3C4FA5C92ED08B98A4E146AED778D71D27517F83AC"
	deltaSHA1    = "736FCAB46D3C183000B547CAA2F1F0ABCDCD1C87"
	deltaSHA256  = "4F4A9410FFCDF895C4ADB880659E9B5C0DD1F23A30790684340B3EAACB045398"
	linuxSHA1    = "ba324ca7b1c77fc20bb970d5aff6eea9377918a5"
	notesMD      = "## Café & crème\n\n- Pinceaux « aquarelle »\n- 日本語のメニュー\n- 🎨 <kbd>Ctrl</kbd>+K"
	notesHTML    = "<h2 id=\"cafe-creme\">Café &amp; crème</h2>\n<ul>\n<li>Pinceaux « aquarelle »</li>\n<li>日本語のメニュー</li>\n<li>🎨 <kbd>Ctrl</kbd>+K</li>\n</ul>\n"
	linuxVersion = "0.42.0-beta.2+build.7"
)

// asset is an asset of the release the fixtures belong to.
type asset struct {
	name   string
	size   int64
	sha256 string // lowercase, as GitHub's digest; "" for none
}

// assets are the release's assets: the packages of both fixtures, the
// feeds, and an installer.
var assets = []asset{
	{"ArtCraft-0.42.0-full.nupkg", 48213377, strings.ToLower(fullSHA256)},
	{"ArtCraft-0.42.0-delta.nupkg", 1822051, strings.ToLower(deltaSHA256)},
	{"ArtCraft-0.42.0-linux-full.nupkg", 52001113, ""},
	{"ArtCraft-0.42.0-linux-delta.nupkg", 0, ""},
	{"ArtCraft-win-Setup.exe", 50000000, ""},
	{"releases.win.json", 3180, ""},
	{"releases.linux.json", 905, ""},
}

func newRelease(assets []asset) *release.Release {
	rel := &release.Release{Tag: tag, Version: strings.TrimPrefix(tag, "v")}
	for _, a := range assets {
		x := release.Asset{Name: a.name, SizeBytes: a.size, DownloadURL: release.DownloadURL(repo, tag, a.name)}
		if a.sha256 != "" {
			x.SHA256 = &a.sha256
		}
		rel.Assets = append(rel.Assets, x)
	}
	return rel
}

func url(name string) string { return release.DownloadURL(repo, tag, name) }

func readFile(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(name)
	must(t, err)
	return b
}

// fixtures are feeds as vpk writes them, and what Parse reads in them.
var fixtures = []struct {
	file string
	want []velopack.Asset
}{
	// As vpk pack writes it (System.Text.Json, indented, everything but
	// ASCII letters, digits and a few marks escaped): a full package and its
	// delta, notes with Unicode and HTML.
	{"testdata/releases.win.json", []velopack.Asset{
		{PackageID: "ArtCraft", Version: "0.42.0", Type: velopack.TypeFull, FileName: "ArtCraft-0.42.0-full.nupkg",
			SHA1: fullSHA1, SHA256: fullSHA256, Size: 48213377, NotesMarkdown: notesMD, NotesHTML: notesHTML},
		{PackageID: "ArtCraft", Version: "0.42.0", Type: velopack.TypeDelta, FileName: "ArtCraft-0.42.0-delta.nupkg",
			SHA1: deltaSHA1, SHA256: deltaSHA256, Size: 1822051, NotesMarkdown: notesMD, NotesHTML: notesHTML},
	}},
	// Compact, keys in another order, "NotesHtml" as the Rust library
	// writes it, no SHA256 (vpk before it wrote one), no notes, keys the
	// clients ignore, a pre-release with build metadata, a FileName already
	// absolute, lowercase hashes.
	{"testdata/releases.linux.json", []velopack.Asset{
		{PackageID: "ArtCraft", Version: linuxVersion, Type: velopack.TypeFull, FileName: url("ArtCraft-0.42.0-linux-full.nupkg"), SHA1: linuxSHA1,
			Size: 52001113, NotesMarkdown: "Plain notes, \"quoted\"\tand tabbed\r\n", NotesHTML: "<p>Plain notes, &quot;quoted&quot;</p>"},
		{PackageID: "ArtCraft", Version: linuxVersion, Type: velopack.TypeDelta, FileName: "ArtCraft-0.42.0-linux-delta.nupkg", SHA1: strings.ToLower(deltaSHA1)},
	}},
}

// TestParse: the feeds vpk writes read as the packages they list, every
// value decoded.
func TestParse(t *testing.T) {
	for _, fx := range fixtures {
		if got, err := velopack.Parse(readFile(t, fx.file)); err != nil || !slices.Equal(got.Assets, fx.want) {
			t.Errorf("%s: Parse: %v\n%+v\nwant\n%+v", fx.file, err, got.Assets, fx.want)
		}
	}
	got, err := velopack.Parse([]byte(`{"Assets":[]}`))
	if err != nil || len(got.Assets) != 0 {
		t.Errorf("Parse of an empty feed = %+v, %v; want no assets", got, err)
	}
}

// TestIsFeed: the feed assets are releases.{channel}.json, the channel as
// vpk allows it and GitHub keeps it; nothing else is one.
func TestIsFeed(t *testing.T) {
	for _, tc := range []struct{ name, file, want string }{
		{"windows", "releases.win.json", "win"},
		{"macos", "releases.osx.json", "osx"},
		{"linux", "releases.linux.json", "linux"},
		{"case kept", "releases.Beta.json", "Beta"},
		{"dots, dashes and underscores", "releases.win-x64_beta.2.json", "win-x64_beta.2"},
		{"64 bytes", "releases." + strings.Repeat("c", 64) + ".json", strings.Repeat("c", 64)},

		{"empty channel", "releases..json", ""},
		{"65 bytes", "releases." + strings.Repeat("c", 65) + ".json", ""},
		{"legacy RELEASES", "RELEASES", ""},
		{"legacy RELEASES of a channel", "RELEASES-beta", ""},
		{"assets file", "assets.win.json", ""},
		{"prefix case", "Releases.win.json", ""},
		{"suffix case", "releases.win.JSON", ""},
		{"no suffix", "releases.win", ""},
		{"tauri", "latest.json", ""},
		{"space", "releases.w in.json", ""},
		{"slash", "releases.a/b.json", ""},
		{"plus", "releases.a+b.json", ""},
		{"non-ascii word character", "releases.bêta.json", ""},
		{"control character", "releases.w\x00.json", ""},
		{"empty", "", ""},
	} {
		got, ok := velopack.IsFeed(tc.file)
		if got != tc.want || ok != (tc.want != "") {
			t.Errorf("%s: IsFeed(%q) = %q, %v; want %q", tc.name, tc.file, got, ok, tc.want)
		}
	}
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
