package velopack_test

import (
	"strings"
	"testing"

	"github.com/storytold/craft-releases/pkg/updates/velopack"
)

// base is a valid feed of one package, which the refused variants change.
const base = `{"Assets":[{"PackageId":"ArtCraft","Version":"0.42.0","Type":"Full",` +
	`"FileName":"ArtCraft-0.42.0-full.nupkg","SHA1":"` + fullSHA1 + `","SHA256":"` + fullSHA256 + `",` +
	`"Size":48213377,"NotesMarkdown":"hi","NotesHTML":"<p>hi</p>"}]}`

// with returns base with its first old replaced by new; old must be in it.
func with(old, new string) string {
	if !strings.Contains(base, old) {
		panic("not in base: " + old)
	}
	return strings.Replace(base, old, new, 1)
}

// refused are feeds Parse refuses, and a word of its error. rust says
// that the Rust client refuses them too (TestClientReads holds it to
// that); the others it reads, but differently from the C# client, or as
// vpk never writes them.
var refused = []struct {
	name, body, want string
	rust             bool
}{
	// Bytes.
	{"empty", "", "not JSON", true},
	{"oversized", with(`"hi"`, `"`+strings.Repeat("a", velopack.MaxFeed)+`"`), "over", false},
	{"byte order mark", "\uFEFF" + base, "byte order mark", true},
	{"invalid utf-8", with(`"hi"`, "\"h\xffi\""), "UTF-8", false},
	{"lone high surrogate", with(`"hi"`, `"\ud800"`), "surrogate", true},
	{"lone low surrogate", with(`"hi"`, `"\udc00"`), "surrogate", true},
	{"high surrogate then a letter", with(`"hi"`, `"\ud83cA"`), "surrogate", true},
	{"high surrogate then another escape", with(`"hi"`, `"\ud83c\n"`), "surrogate", true},
	{"two high surrogates", with(`"hi"`, `"\ud83c\ud83c"`), "surrogate", true},
	{"lone surrogate in a key", with(`"Assets"`, `"X\udfff":1,"Assets"`), "surrogate", true},

	// Syntax.
	{"comment", "/* vpk */" + base, "not JSON", true},
	{"trailing comma in an asset", with(`"<p>hi</p>"}`, `"<p>hi</p>",}`), "not JSON", true},
	{"trailing comma in Assets", with(`}]}`, `},]}`), "not JSON", true},
	{"raw tab in a string", with(`"hi"`, "\"h\ti\""), "not JSON", true},
	{"invalid escape", with(`"hi"`, `"h\xi"`), "not JSON", true},
	{"single quotes", with(`"hi"`, `'hi'`), "not JSON", true},
	{"truncated", base[:len(base)-2], "not JSON", true},
	{"two objects", base + base, "more after", true},
	{"garbage after", base + "x", "more after", true},
	{"an array", "[" + base + "]", "not a JSON object", true},
	{"null", "null", "not a JSON object", true},
	{"deep nesting", with(`"Assets"`, `"X":`+strings.Repeat("[", 40)+strings.Repeat("]", 40)+`,"Assets"`), "deeper", false},
	{"number out of range", with(`"Assets"`, `"X":1e400,"Assets"`), "out of range", false},

	// Keys.
	{"no Assets", `{}`, `no "Assets"`, false},
	{"Assets in another case", strings.Replace(base, `"Assets"`, `"assets"`, 1), `write "Assets"`, false},
	{"key twice", with(`"Type"`, `"Version":"0.43.0","Type"`), "twice", true},
	{"key twice in another case", with(`"Type"`, `"version":"0.43.0","Type"`), "twice", false},
	{"NotesHTML and NotesHtml", with(`"NotesHTML"`, `"NotesHtml":"x","NotesHTML"`), "twice", false},
	{"Assets twice", with(`"Assets"`, `"Assets":[],"Assets"`), "twice", true},
	{"unknown key twice", with(`"Type"`, `"X":1,"x":2,"Type"`), "twice", false},
	{"FileName in another case", with(`"FileName"`, `"fileName"`), `write "FileName"`, false},
	{"SHA1 in another case", with(`"SHA1"`, `"Sha1"`), `write "SHA1"`, false},
	{"NotesHtml in another case", with(`"NotesHTML"`, `"noteshtml"`), `write "NotesH`, false},
	{"dotless i, FileName to C#", with(`"Type"`, `"F\u0131leName":"x","Type"`), "printable ASCII", false},
	{"kelvin sign, PackageId to Rust", with(`"Type"`, `"Pac\u212aageId":"x","Type"`), "printable ASCII", false},
	{"control character in a key", with(`"Type"`, `"X\u0000":1,"Type"`), "printable ASCII", false},

	// Values.
	{"Assets null", `{"Assets":null}`, "not an array", true},
	{"Assets an object", `{"Assets":{}}`, "not an array", true},
	{"asset not an object", `{"Assets":[1]}`, "not a JSON object", true},
	{"asset null", `{"Assets":[null]}`, "not a JSON object", true},
	{"no PackageId", with(`"PackageId":"ArtCraft",`, ``), `no "PackageId"`, false},
	{"no Version", with(`"Version":"0.42.0",`, ``), `no "Version"`, false},
	{"no Type", with(`"Type":"Full",`, ``), `no "Type"`, false},
	{"no FileName", with(`"FileName":"ArtCraft-0.42.0-full.nupkg",`, ``), `no "FileName"`, false},
	{"no SHA1", with(`"SHA1":"`+fullSHA1+`",`, ``), `no "SHA1"`, false},
	{"no Size", with(`"Size":48213377,`, ``), `no "Size"`, false},
	{"null string", with(`"`+fullSHA1+`"`, `null`), "not a string", true},
	{"number for a string", with(`"ArtCraft"`, `5`), "not a string", true},
	{"null notes", with(`"hi"`, `null`), "not a string", true},
	{"null Size", with(`48213377`, `null`), `"Size"`, true},
	{"Size a string", with(`48213377`, `"48213377"`), `"Size"`, true},
	{"Size with a fraction", with(`48213377`, `48213377.0`), `"Size"`, true},
	{"Size with an exponent", with(`48213377`, `4e7`), `"Size"`, true},
	{"Size negative", with(`48213377`, `-1`), `"Size"`, true},
	{"Size over 64 bits", with(`48213377`, `18446744073709551616`), `"Size"`, true},
	{"Size over MaxSizeBytes", with(`48213377`, `9007199254740992`), `"Size"`, false},
	{"Size minus zero", with(`48213377`, `-0`), `"Size"`, true},
	{"PackageId empty", with(`"ArtCraft"`, `""`), "NuGet id", false},
	{"PackageId with a space", with(`"ArtCraft"`, `"Art Craft"`), "NuGet id", false},
	{"PackageId with a slash", with(`"ArtCraft"`, `"Art/Craft"`), "NuGet id", false},
	{"PackageId over 256 bytes", with(`"ArtCraft"`, `"`+strings.Repeat("A", 257)+`"`), "NuGet id", false},
	{"Version with v", with(`"0.42.0"`, `"v0.42.0"`), "SemVer", false},
	{"Version of two parts", with(`"0.42.0"`, `"0.42"`), "SemVer", false}, // the rest of SemVer's grammar: semver.TestParse
	{"Version over an int", with(`"0.42.0"`, `"2147483648.0.0"`), "SemVer", false},
	{"Version with a pre-release number over an int", with(`"0.42.0"`, `"0.42.0-rc.2147483648"`), "SemVer", false},
	{"Version empty", with(`"0.42.0"`, `""`), "SemVer", false},
	{"Type lowercase", with(`"Full"`, `"full"`), "want", false},
	{"Type Portable", with(`"Full"`, `"Portable"`), "want", false},
	{"Type a number", with(`"Full"`, `1`), "not a string", true},
	{"Type flags", with(`"Full"`, `"Full, Delta"`), "want", false},
	{"FileName empty", with(`"ArtCraft-0.42.0-full.nupkg"`, `""`), "FileName", false},
	{"FileName over 2048 bytes", with(`"ArtCraft-0.42.0-full.nupkg"`, `"`+strings.Repeat("a", 2049)+`"`), "FileName", false},
	{"FileName with a NUL", with(`"ArtCraft-0.42.0-full.nupkg"`, `"ArtCraft\u0000.nupkg"`), "control", false},
	{"FileName with a line feed", with(`"ArtCraft-0.42.0-full.nupkg"`, `"ArtCraft\n.nupkg"`), "control", false},
	{"FileName with a C1 control", with(`"ArtCraft-0.42.0-full.nupkg"`, `"ArtCraft\u0085.nupkg"`), "control", false},
	{"FileName with a bidi override", with(`"ArtCraft-0.42.0-full.nupkg"`, `"ArtCraft\u202egkpun.exe"`), "bidirectional", false},
	{"SHA1 short", with(fullSHA1, fullSHA1[1:]), "SHA1", false},
	{"SHA1 not hex", with(fullSHA1, "G"+fullSHA1[1:]), "SHA1", false},
	{"SHA1 empty", with(`"`+fullSHA1+`"`, `""`), "SHA1", false},
	{"SHA256 long", with(fullSHA256, fullSHA256+"0"), "SHA256", false},
	{"SHA256 empty", with(`"`+fullSHA256+`"`, `""`), "SHA256", false},
	{"SHA256 null", with(`"`+fullSHA256+`"`, `null`), "not a string", true},
	{"notes with a bell", with(`"hi"`, `"h\u0007i"`), "control", false},
	{"notes with a NUL", with(`"<p>hi</p>"`, `"\u0000"`), "control", false},
}

// TestParseRefuses: Parse refuses every feed that a client rejects, reads
// otherwise than the other client, or that vpk never writes, each for its
// reason.
func TestParseRefuses(t *testing.T) {
	_, err := velopack.Parse([]byte(base))
	must(t, err)
	for _, tc := range refused {
		if f, err := velopack.Parse([]byte(tc.body)); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: Parse = %+v, %v; want an error about %q", tc.name, f, err, tc.want)
		}
	}
}

// kept are feeds that both clients read alike and vpk may write: keys they
// ignore, at any depth up to the bound, with any JSON value; escapes; white
// space; a pre-release and build metadata; the largest numbers.
var kept = []struct{ name, body string }{
	{"unknown keys of any value", with(`"Type"`, `"Extra":{"a":[1,-2.5e10,true,false,null,"s",{}],"b":{}},"Type"`)},
	{"unknown key at the root", with(`"Assets"`, `"Version":2,"Assets"`)},
	{"nested to the bound", with(`"Assets"`, `"X":`+strings.Repeat("[", 29)+strings.Repeat("]", 29)+`,"Assets"`)},
	{"escaped key", with(`"FileName"`, `"File\u004eame"`)},
	{"escaped file name", with(`"ArtCraft-0.42.0-full.nupkg"`, `"ArtCraft\u002d0.42.0-full.nupkg"`)},
	{"surrogate pair", with(`"hi"`, `"\ud83c\udfa8"`)},
	{"escaped solidus and backslash", with(`"hi"`, `"a\/b\\c\"d"`)},
	{"white space", "\r\n\t " + strings.ReplaceAll(base, ",", " ,\n  ") + "\n"},
	{"NotesHtml", with(`"NotesHTML"`, `"NotesHtml"`)},
	{"no notes", with(`,"NotesMarkdown":"hi","NotesHTML":"<p>hi</p>"`, ``)},
	{"no SHA256", with(`"SHA256":"`+fullSHA256+`",`, ``)},
	{"lowercase hashes", with(fullSHA1, strings.ToLower(fullSHA1))},
	{"pre-release and build", with(`"0.42.0"`, `"0.42.0-rc.1.x-y+b.007"`)},
	{"largest version numbers", with(`"0.42.0"`, `"2147483647.2147483647.2147483647-2147483647"`)},
	{"largest Size", with(`48213377`, `9007199254740991`)},
	{"Size zero", with(`48213377`, `0`)},
	{"Unicode package id", with(`"ArtCraft"`, `"Art_Cr\u00e4ft.Pro-2"`)},
	{"an unknown number as large as a float", with(`"Assets"`, `"X":1.7976931348623157e308,"Y":1e-400,"Assets"`)},
}

// TestParseKeeps: Parse reads the feeds of kept.
func TestParseKeeps(t *testing.T) {
	for _, tc := range kept {
		if _, err := velopack.Parse([]byte(tc.body)); err != nil {
			t.Errorf("%s: Parse: %v", tc.name, err)
		}
	}
}
