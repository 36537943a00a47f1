package release_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/storytold/craft-releases/pkg/release"
)

func TestClean(t *testing.T) {
	tests := []struct {
		name, s string
		limit   int
		notes   bool
		want    string
	}{
		{"fits", "abc", 3, false, "abc"},
		{"empty", "", 3, false, ""},
		{"one over", "abcd", 3, false, "abc…"},
		{"ascii", "abcdefgh", 6, false, "abcdef…"},
		{"never splits a 2-byte character", "abéc", 2, false, "ab…"},
		{"cut inside a 2-byte character", "abéc", 3, false, "ab…"},
		{"keeps a whole 2-byte character", "abécd", 4, false, "abé…"},
		{"never splits a 4-byte character", "a😀bc", 4, false, "a…"},
		{"keeps a whole 4-byte character", "a😀bcde", 5, false, "a😀…"},
		{"control characters dropped", "a\x00b\x1bc\u0085d\x7f", 10, false, "abcd"},
		{"line breaks dropped from a name", "a\nb\r\tc", 10, false, "abc"},
		{"line breaks kept in notes", "a\nb\r\n\tc\x07", 10, true, "a\nb\r\n\tc"},
		{"bidi dropped", "fdp\u202e.exe\u2066\u200f", 20, true, "fdp.exe"},
		{"dropped before the cut", "\u202e\u202e\u202eabc", 3, false, "abc"},
		{"invalid UTF-8 replaced", "a\xffb", 10, false, "a\uFFFDb"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clean, name := release.CleanName, "CleanName"
			if tt.notes {
				clean, name = release.CleanNotes, "CleanNotes"
			}
			if got := clean(tt.s, tt.limit); got != tt.want {
				t.Errorf("%s(%q, %d) = %q, want %q", name, tt.s, tt.limit, got, tt.want)
			}
		})
	}
}

const repo = "storytold/photocraft"

// photocraft is the app whose releases good spoils.
var photocraft = release.App{Key: "photocraft", Name: "PhotoCraft", Repo: repo}

// good is a release as the GitHub parser makes it, which every test case
// spoils in one way.
func good() *release.Release {
	sum := strings.Repeat("ab", 32)
	name := "photocraft-1.2.3-windows-x64.msi"
	return &release.Release{
		Tag: "v1.2.3", Version: "1.2.3", Name: "PhotoCraft 1.2.3",
		HTMLURL:       release.TagURL(repo, "v1.2.3"),
		NotesMarkdown: "## Fixed\r\n\t- crashes",
		Assets: []release.Asset{{
			Name: name, SizeBytes: 10, DownloadURL: release.DownloadURL(repo, "v1.2.3", name),
			SHA256: &sum, Platform: release.ParseAsset(name),
		}, {
			Name: "notes.txt", DownloadURL: release.DownloadURL(repo, "v1.2.3", "notes.txt"),
		}},
	}
}

func TestVersionOf(t *testing.T) {
	tests := []struct{ name, tag, prefix, want string }{
		{"v", "v1.2.3", "", "1.2.3"},
		{"V", "V1.2.3", "", "1.2.3"},
		{"no v", "1.2.3", "", "1.2.3"},
		{"one v only", "vv1", "", "v1"},
		{"another prefix kept without one", "artcraft-v0.41.0", "", "artcraft-v0.41.0"},
		{"a prefix and v", "artcraft-v0.41.0", "artcraft-v", "0.41.0"},
		{"a prefix then v", "artcraft-v0.41.0", "artcraft-", "0.41.0"},
		{"a prefix then V", "artcraft-V0.41.0", "artcraft-", "0.41.0"},
		{"a prefix without v", "artcraft-0.41.0", "artcraft-", "0.41.0"},
		{"a prefix then one v only", "artcraft-vv1", "artcraft-", "v1"},
		{"prerelease and build metadata", "artcraft-v1.0.0-rc.1+b.5", "artcraft-v", "1.0.0-rc.1+b.5"},
		{"a tag without the prefix keeps the rule", "v0.41.0", "artcraft-v", "0.41.0"},
		{"the prefix is case-sensitive", "ArtCraft-v0.41.0", "artcraft-v", "ArtCraft-v0.41.0"},
		{"the prefix only at the start", "x-artcraft-v1", "artcraft-v", "x-artcraft-v1"},
		{"the tag is the prefix", "artcraft-v", "artcraft-v", "artcraft-v"},
		{"the prefix and a v only", "artcraft-v", "artcraft-", "artcraft-v"},
		{"a prefix v", "vv1.0", "v", "1.0"},
		{"a prefix v on a tag with one v", "v1.0", "v", "1.0"},
		{"empty tag", "", "artcraft-v", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := release.VersionOf(tt.tag, tt.prefix); got != tt.want {
				t.Errorf("VersionOf(%q, %q) = %q, want %q", tt.tag, tt.prefix, got, tt.want)
			}
		})
	}
}

// TestVerifyTagPrefix: the version of a release must be its tag's by its
// app's prefix, so that a release written under another rule (another
// prefix, or none) is refused.
func TestVerifyTagPrefix(t *testing.T) {
	const tag = "artcraft-v0.41.0"
	artcraft := release.App{Key: "artcraft", Repo: repo, TagPrefix: "artcraft-v"}
	r := good()
	r.Tag, r.HTMLURL, r.Assets = tag, release.TagURL(repo, tag), []release.Asset{}
	tests := []struct {
		name    string
		app     release.App
		version string
		ok      bool
	}{
		{"the prefix's version", artcraft, "0.41.0", true},
		{"the version without the prefix", artcraft, "artcraft-v0.41.0", false},
		{"no prefix, today's version", photocraft, "artcraft-v0.41.0", true},
		{"no prefix, the prefix's version", photocraft, "0.41.0", false},
		{"another prefix", release.App{Repo: repo, TagPrefix: "artcraft-"}, "0.41.0", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r.Version = tt.version
			if err := release.Verify(tt.app, r); (err == nil) != tt.ok {
				t.Errorf("Verify(prefix %q, version %q) = %v, want ok %v", tt.app.TagPrefix, tt.version, err, tt.ok)
			}
		})
	}
}

func TestGoodTagPrefix(t *testing.T) {
	good := []string{"artcraft-v", "v", "release/", "app@", "a.b_c+d-", strings.Repeat("p", release.MaxTagPrefix)}
	bad := []string{"", strings.Repeat("p", release.MaxTagPrefix+1), "a b", "a\tb", "a\nb", "a\x00", "a\x7f", "a,b", "a=b",
		"фото", "a\u202e", "a..", "a~", "a^", "a:", "a?", "a*", "a[", "a\\", ".a", "/a", "a//", "a@{", "a.lock/"}
	for i, prefix := range slices.Concat(good, bad) {
		if got, want := release.GoodTagPrefix(prefix), i < len(good); got != want {
			t.Errorf("GoodTagPrefix(%q) = %v, want %v", prefix, got, want)
		}
	}
}

func TestVerify(t *testing.T) {
	if err := release.Verify(photocraft, good()); err != nil {
		t.Fatalf("Verify(good) = %v, want nil", err)
	}
	if err := release.Verify(photocraft, nil); err != nil {
		t.Fatalf("Verify(nil) = %v, want nil: no release is a release state", err)
	}
	str := func(s string) *string { return &s }
	tests := []struct {
		name  string
		spoil func(r *release.Release)
	}{
		{"no tag", func(r *release.Release) { r.Tag = "" }},
		{"a tag git refuses", func(r *release.Release) { r.Tag, r.Version = "v1..2", "1..2" }},
		{"a tag over the bound", func(r *release.Release) { r.Tag = "v" + strings.Repeat("1", 64) }},
		{"a version not the tag's", func(r *release.Release) { r.Version = "9.9.9" }},
		{"no name", func(r *release.Release) { r.Name = "" }},
		{"a bidi override in the name", func(r *release.Release) { r.Name = "PhotoCraft \u202eexe.pdf" }},
		{"a control character in the name", func(r *release.Release) { r.Name = "Photo\x1b[2JCraft" }},
		{"a line break in the name", func(r *release.Release) { r.Name = "Photo\nCraft" }},
		{"a name over the bound", func(r *release.Release) { r.Name = strings.Repeat("n", 201) }},
		{"a control character in the notes", func(r *release.Release) { r.NotesMarkdown = "\x07" }},
		{"notes over the bound", func(r *release.Release) { r.NotesMarkdown = strings.Repeat("n", 65537) }},
		{"html_url in another repository", func(r *release.Release) { r.HTMLURL = release.TagURL("evil/photocraft", "v1.2.3") }},
		{"html_url in another case", func(r *release.Release) { r.HTMLURL = release.TagURL("StoryTold/PhotoCraft", "v1.2.3") }},
		{"html_url of another tag", func(r *release.Release) { r.HTMLURL = release.TagURL(repo, "v9") }},
		{"html_url elsewhere in the repository", func(r *release.Release) { r.HTMLURL = "https://github.com/" + repo + "/releases" }},
		{"no html_url", func(r *release.Release) { r.HTMLURL = "" }},
		{"published_at zero", func(r *release.Release) { r.PublishedAt = &release.Time{} }},
		{"too many assets", func(r *release.Release) { r.Assets = make([]release.Asset, 201) }},
		{"download_url in another repository", func(r *release.Release) {
			r.Assets[0].DownloadURL = release.DownloadURL("evil/photocraft", "v1.2.3", r.Assets[0].Name)
		}},
		{"download_url of another tag", func(r *release.Release) { r.Assets[0].DownloadURL = release.DownloadURL(repo, "v9", r.Assets[0].Name) }},
		{"download_url of another file", func(r *release.Release) { r.Assets[0].DownloadURL = release.DownloadURL(repo, "v1.2.3", "evil.msi") }},
		{"no download_url", func(r *release.Release) { r.Assets[0].DownloadURL = "" }},
		{"a sha256 not hex", func(r *release.Release) { r.Assets[0].SHA256 = str(strings.Repeat("zz", 32)) }},
		{"a sha256 in capitals", func(r *release.Release) { r.Assets[0].SHA256 = str(strings.Repeat("AB", 32)) }},
		{"a short sha256", func(r *release.Release) { r.Assets[0].SHA256 = str("ab") }},
		{"a platform the name does not say", func(r *release.Release) { r.Assets[0].Platform = &release.Platform{OS: "linux", PackageType: "deb"} }},
		{"an arch the name does not say", func(r *release.Release) {
			r.Assets[0].Platform = &release.Platform{OS: "windows", Arch: str("arm64"), PackageType: "msi"}
		}},
		{"a platform for a name without one", func(r *release.Release) { r.Assets[1].Platform = r.Assets[0].Platform }},
		{"no platform for a name with one", func(r *release.Release) { r.Assets[0].Platform = nil }},
		{"a negative size", func(r *release.Release) { r.Assets[0].SizeBytes = -1 }},
		{"a size past 2^53", func(r *release.Release) { r.Assets[0].SizeBytes = 1 << 53 }},
		{"an asset name with a slash", func(r *release.Release) { r.Assets[1].Name = "a/b" }},
		{"an asset name with a bidi override", func(r *release.Release) { r.Assets[1].Name = "a\u202eb" }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := good()
			tt.spoil(r)
			if err := release.Verify(photocraft, r); err == nil {
				t.Errorf("Verify accepted %+v", r)
			}
		})
	}
}

func TestDecode(t *testing.T) {
	b, err := release.Marshal(good())
	if err != nil {
		t.Fatal(err)
	}
	if r, err := release.Decode(photocraft, b); err != nil || r == nil || r.Name != good().Name {
		t.Fatalf("Decode(Marshal(good)) = %v, %v; want good", r, err)
	}
	if r, err := release.Decode(photocraft, []byte("null")); err != nil || r != nil {
		t.Fatalf("Decode(null) = %v, %v; want no release", r, err)
	}
	s := string(b)
	tests := []struct{ name, data string }{
		{"empty", ""},
		{"not JSON", "{"},
		{"a key in capitals", strings.Replace(s, `"tag"`, `"TAG"`, 1)},
		{"an unknown key", strings.Replace(s, `{"tag"`, `{"x":1,"tag"`, 1)},
		{"a key twice", strings.Replace(s, `{"tag":"v1.2.3"`, `{"tag":"v1.2.3","tag":"v1.2.3"`, 1)},
		{"spaces", strings.Replace(s, `"tag":`, `"tag": `, 1)},
		{"keys in another order", `{"version":"1.2.3",` + strings.Replace(s[1:], `"version":"1.2.3",`, "", 1)},
		{"trailing data", s + " "},
		{"another repository's release", strings.ReplaceAll(s, repo, "evil/photocraft")},
		{"over the bound", `{"tag":"v1","name":"` + strings.Repeat("n", release.MaxEncoded) + `"}`},
		{"an array", "[]"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if r, err := release.Decode(photocraft, []byte(tt.data)); err == nil {
				t.Errorf("Decode(%.80q) = %+v, want an error", tt.data, r)
			}
		})
	}
}

// FuzzDecode holds Decode to its promise on any bytes: what it accepts is
// what Marshal writes, and passes Verify.
func FuzzDecode(f *testing.F) {
	b, _ := release.Marshal(good())
	f.Add(b)
	f.Add([]byte("null"))
	f.Add([]byte(`{"TAG":"v1"}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		r, err := release.Decode(photocraft, data)
		if err != nil {
			return
		}
		if err := release.Verify(photocraft, r); err != nil {
			t.Fatalf("Decode accepted a release Verify refuses: %v", err)
		}
		canon, err := release.Marshal(r)
		if err != nil || string(canon) != string(data) {
			t.Fatalf("Decode accepted %q, which Marshal writes as %q", data, canon)
		}
	})
}
