package electron_test

import (
	"reflect"
	"strings"
	"testing"

	"github.com/storytold/craft-releases/pkg/updates/electron"
)

func TestParse(t *testing.T) {
	t.Parallel()
	for _, tc := range valid {
		got, err := electron.Parse([]byte(fill(tc.body)))
		if err != nil || !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s: Parse: %v\ngot  %+v\nwant %+v", tc.name, err, got, tc.want)
		}
	}
}

// one is a file with one download, as electron-builder writes it.
const one = "version: 1.4.0\nfiles:\n  - url: Craft-Setup-1.4.0.exe\n    sha512: $SETUP\n"

func withVersion(v string) string { return strings.Replace(one, "1.4.0", v, 1) }

// refused are channel files Parse refuses, with a piece of its error, and
// whether electron-updater's own code (js-yaml's load, parseUpdateInfo,
// resolveFiles and node-semver's parse; TestClient runs it) accepts them.
// Those it accepts Parse refuses by rule: they would fail the download,
// or they are hostile, or no publisher writes them.
var refused = []struct {
	name, body, err string
	client          bool
}{
	{"empty", "", "empty", false},
	{"only a comment", "# nothing\n", "empty", false},
	{"not YAML", "version: [1.4.0\n", "not YAML", false},
	{"a list", "- version: 1.4.0\n", "not a YAML mapping", false},
	{"a scalar", "1.4.0\n", "not a YAML mapping", false},
	{"two documents", one + "---\n" + one, "more than one YAML document", false},
	{"a key twice", one + "version: 1.5.0\n", `key "version" twice`, false},
	{"no version", strings.Replace(one, "version: 1.4.0\n", "", 1), "no version", false},
	{"null version", withVersion("~"), "no version", false},
	{"version a number", withVersion("1.4"), "not a version", false},
	{"version a list", withVersion("[1, 4, 0]"), "not a version", false},
	{"version two parts", withVersion("'1.4'"), "not a version", false}, // the rest of SemVer's grammar: semver.TestParse
	{"version too big", withVersion("9007199254740992.0.0"), "not a version", false},
	{"version too long", withVersion("1.4.0-" + strings.Repeat("a", 251)), "not a version", false},
	{"version with v and =", withVersion("=v1.4.0"), "not a version", false},
	{"version latest", withVersion("latest"), "not a version", false},
	{"version with spaces", withVersion("' 1.4.0'"), "not a version", true}, // node-semver trims
	{"no files and no path", "version: 1.4.0\n", "nothing to download", false},
	{"empty files and no path", "version: 1.4.0\nfiles: []\n", "nothing to download", false},
	{"files a mapping", "version: 1.4.0\nfiles:\n  url: Craft-Setup-1.4.0.exe\n  sha512: $SETUP\npath: Craft-Setup-1.4.0.exe\nsha512: $SETUP\n", "files: not a list", true},
	{"a file a string", "version: 1.4.0\nfiles:\n  - Craft-Setup-1.4.0.exe\n", "files[0]: not a mapping", false},
	{"a file without url", strings.Replace(one, "url: Craft-Setup-1.4.0.exe\n    ", "", 1), "files[0]: no url", true}, // resolves the base URL itself
	{"a file without sha512", strings.Replace(one, "\n    sha512: $SETUP", "", 1), "files[0]: no sha512", false},
	{"a file with null sha512", strings.Replace(one, "$SETUP", "null", 1), "files[0]: no sha512", false},
	{"a file with sha2 only", strings.Replace(one, "sha512: $SETUP", "sha2: "+strings.Repeat("ab", 32), 1), "files[0]: no sha512", true},
	{"a sha512 in hex", strings.Replace(one, "$SETUP", strings.Repeat("ab", 64), 1), "not the base64 of a SHA-512", true},
	{"a sha512 too short", strings.Replace(one, "$SETUP", sum("x")[:86], 1), "not the base64 of a SHA-512", true},
	{"a sha512 without padding", strings.Replace(one, "$SETUP", strings.TrimRight(sum("x"), "=")+"AA", 1), "not the base64 of a SHA-512", true},
	{"a sha512 over two lines", strings.Replace(one, "$SETUP", "|-\n      "+shaSetup[:44]+"\n      "+shaSetup[44:], 1), "not the base64 of a SHA-512", true},
	{"a sha512 in URL-safe base64", strings.Replace(one, "$SETUP", strings.NewReplacer("+", "-", "/", "_").Replace(shaSetup), 1), "not the base64 of a SHA-512", true},
	{"a url number", strings.Replace(one, "Craft-Setup-1.4.0.exe", "1234", 1), "files[0].url: not a file name or URL", true},
	{"a url null", strings.Replace(one, "Craft-Setup-1.4.0.exe", "null", 1), "files[0]: no url", true},
	{"a url empty", strings.Replace(one, "Craft-Setup-1.4.0.exe", "''", 1), "files[0].url: not a file name or URL", true},
	{"a url a list", strings.Replace(one, "Craft-Setup-1.4.0.exe", "[a, b]", 1), "files[0].url: not a file name or URL", true},
	{"a url folded over two lines", strings.Replace(one, "Craft-Setup-1.4.0.exe", "Craft-Setup\n      -1.4.0.exe", 1), "not a plain or quoted scalar on one line", true},
	{"a url in a block scalar", strings.Replace(one, "Craft-Setup-1.4.0.exe", "|-\n      Craft-Setup-1.4.0.exe", 1), "not a plain or quoted scalar on one line", true},
	{"a url with an escape", strings.Replace(one, "Craft-Setup-1.4.0.exe", `"Craft-Setup-1.4.0\x2eexe"`, 1), "not a plain or quoted scalar on one line", true},
	{"a path without sha512", one + "path: Craft-Setup-1.4.0.exe\n", "path without sha512", true},
	{"a sha512 without path", one + "sha512: $SETUP\n", "sha512 without path", true},
	{"a legacy sha512 not base64", one + "path: Craft-Setup-1.4.0.exe\nsha512: abc\n", "sha512: not the base64", true},
	{"packages a list", one + "packages: [x64]\n", "packages: not a mapping", true},
	{"a package without path", one + "packages:\n  x64:\n    sha512: $7ZX64\n", "packages.x64: no path", true},
	{"a package without sha512", one + "packages:\n  x64:\n    path: craft-1.4.0-x64.nsis.7z\n", "packages.x64: no sha512", true},
	{"a size not a number", strings.Replace(one, "sha512: $SETUP", "sha512: $SETUP\n    size: big", 1), "files[0].size", true},
	{"a size negative", strings.Replace(one, "sha512: $SETUP", "sha512: $SETUP\n    size: -1", 1), "files[0].size", true},
	{"a size in hex", strings.Replace(one, "sha512: $SETUP", "sha512: $SETUP\n    size: 0x10", 1), "files[0].size", true},
	{"a blockMapSize too big", strings.Replace(one, "sha512: $SETUP", "sha512: $SETUP\n    blockMapSize: 9007199254740992", 1), "files[0].blockMapSize", true},
	{"isAdminRightsRequired not a boolean", strings.Replace(one, "sha512: $SETUP", "sha512: $SETUP\n    isAdminRightsRequired: 'no'", 1), "isAdminRightsRequired", true},
	{"stagingPercentage over 100", one + "stagingPercentage: 101\n", "stagingPercentage", true},
	{"stagingPercentage negative", one + "stagingPercentage: -5\n", "stagingPercentage", true},
	{"stagingPercentage a fraction", one + "stagingPercentage: 12.5\n", "stagingPercentage", true},
	{"stagingPercentage a text", one + "stagingPercentage: half\n", "stagingPercentage", true},
	{"releaseName a list", one + "releaseName: [a]\n", "releaseName: not a text", true},
	{"releaseNotes a mapping", one + "releaseNotes: {a: b}\n", "releaseNotes: neither a text nor a list", true},
	{"releaseNotes a list of texts", one + "releaseNotes: [a]\n", "releaseNotes[0]: not a version and a note", true},
	{"releaseDate a mapping", one + "releaseDate: {a: b}\n", "releaseDate: not a scalar", true},

	// Hostile.
	{"oversized", one + "releaseNotes: '" + strings.Repeat("x", electron.MaxFile) + "'\n", "larger than 65536 bytes", true},
	{"an alias bomb", "version: 1.4.0\na: &a [x, x, x, x, x, x, x, x, x, x]\nb: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a, *a]\nc: &c [*b, *b, *b, *b, *b, *b, *b, *b, *b, *b]\nd: &d [*c, *c, *c, *c, *c, *c, *c, *c, *c, *c]\ne: [*d, *d, *d, *d, *d, *d, *d, *d, *d, *d]\nfiles:\n  - url: Craft-Setup-1.4.0.exe\n    sha512: $SETUP\n", "an anchor", true},
	{"an alias to a url", "version: 1.4.0\nx: &u Craft-Setup-1.4.0.exe\nfiles:\n  - url: *u\n    sha512: $SETUP\n", "an anchor", true},
	{"a merge key", "version: 1.4.0\nfiles:\n  - <<: {url: Craft-Setup-1.4.0.exe}\n    sha512: $SETUP\n", "a merge key", true},
	{"a tag", strings.Replace(one, "Craft-Setup-1.4.0.exe", "!!str Craft-Setup-1.4.0.exe", 1), "a tag", true},
	{"a binary tag", one + "blob: !!binary aGVsbG8=\n", "a tag", true},
	{"a custom tag", one + "x: !evil 1\n", "a tag", false},
	{"a key not a string", one + "1: one\n", "a key that is not a string", true},
	{"a key a list", one + "? [a]\n: b\n", "a key that is not a string", true},
	{"deep nesting", one + "x: " + strings.Repeat("[", 16) + strings.Repeat("]", 16) + "\n", "nested deeper than 16", true},
	{"very deep nesting", one + "x: " + strings.Repeat("[", 20000) + strings.Repeat("]", 20000) + "\n", "not YAML", false},
	{"a NUL", one + "releaseName: a\x00b\n", "character U+0000", false},
	{"an escape character", one + "releaseName: a\x1b[31mb\n", "character U+001B", false},
	{"a DEL", one + "releaseName: a\x7fb\n", "character U+007F", false},
	{"a C1 control", one + "releaseName: a\u0085b\n", "character U+0085", true},
	{"a line separator", one + "releaseName: a\u2028b\n", "character U+2028", true},
	{"a byte-order mark", "\ufeff" + one, "character U+FEFF", true},
	{"a lone carriage return", one + "releaseName: a\rb\n", "character U+000D", false},
	{"an escaped control character", one + "releaseNotes: \"red \\e[31m\"\n", "a control character in a value", true},
	{"an escaped NUL in a url", strings.Replace(one, "Craft-Setup-1.4.0.exe", `"Craft-Setup-1.4.0.exe\0"`, 1), "a control character in a value", true},
	{"not UTF-8", one + "releaseName: \xff\xfe\n", "not UTF-8", true}, // read as U+FFFD
}

func TestParseRefuses(t *testing.T) {
	t.Parallel()
	for _, tc := range refused {
		if _, err := electron.Parse([]byte(fill(tc.body))); err == nil || !strings.Contains(err.Error(), tc.err) {
			t.Errorf("%s: Parse: got %v, want an error with %q", tc.name, err, tc.err)
		}
	}
}

// TestParseVersions: node-semver's bounds on SemVer (semver.TestParse): an
// optional "v", 256 bytes with it, numbers up to 2^53 − 1.
func TestParseVersions(t *testing.T) {
	t.Parallel()
	for _, v := range []string{
		"1.4.0", "v1.4.0", "1.4.0-rc.1+build.5", "9007199254740991.0.0", "1.4.0-" + strings.Repeat("a", 250),
	} {
		f, err := electron.Parse([]byte(fill(withVersion(v))))
		if err != nil || f.Version != v {
			t.Errorf("Parse of version %q: got %q, %v", v, f.Version, err)
		}
	}
}
