package github_test

import (
	"cmp"
	"encoding/json"
	"fmt"
	"math"
	"net/url"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/storytold/craft-releases/pkg/github"
	"github.com/storytold/craft-releases/pkg/release"
	"github.com/storytold/craft-releases/test/fakegithub"
)

const repo = "storytold/photocraft"

// edit replaces or adds m's fields from fields and returns m; a nil value
// removes a field: use json.RawMessage("null") for a JSON null.
func edit(m, fields map[string]any) map[string]any {
	for k, v := range fields {
		if v == nil {
			delete(m, k)
			continue
		}
		m[k] = v
	}
	return m
}

// releaseJSON is a minimal good release edited by fields.
func releaseJSON(t testing.TB, fields map[string]any) []byte {
	t.Helper()
	b, err := json.Marshal(edit(map[string]any{"tag_name": "v1.2.3"}, fields))
	must(t, err)
	return b
}

// asset is a good asset of repo's release v1.2.3 edited by fields. Its
// download URL is that of its name, unless fields replace it.
func asset(fields map[string]any) map[string]any {
	m := edit(map[string]any{"name": "photocraft-1.2.3-windows-x64.msi", "size": 7, "digest": "sha256:" + strings.Repeat("ab", 32)}, fields)
	if _, ok := fields["browser_download_url"]; !ok {
		name, _ := m["name"].(string)
		m["browser_download_url"] = release.DownloadURL(repo, "v1.2.3", name)
	}
	return m
}

func mustParse(t testing.TB, body []byte) *release.Release {
	t.Helper()
	r, err := github.ParseRelease(app, body)
	if err != nil {
		t.Fatalf("ParseRelease(%.300s): %v", body, err)
	}
	return r
}

func TestParseReleaseWhole(t *testing.T) {
	body := `{
	  "url": "https://api.github.com/repos/storytold/photocraft/releases/1",
	  "id": 1, "author": {"login": "bot"}, "reactions": {"+1": 3}, "mentions_count": 2,
	  "html_url": "https://github.com/storytold/photocraft/releases/tag/v0.5.0",
	  "tag_name": "v0.5.0", "name": "PhotoCraft v0.5.0", "draft": false, "prerelease": true,
	  "created_at": "2026-10-08T14:50:00Z", "published_at": "2026-10-08T16:52:50.5+02:00",
	  "body": "Notes",
	  "assets": [
	    {"name": "photocraft-0.5.0-windows-x64.msi", "size": 7, "state": "uploaded",
	     "digest": "sha256:8A5EDAB282632443219E051E4ADE2D1D5BBC671C781051BF1437897CBDFEA0F1",
	     "browser_download_url": "https://github.com/storytold/photocraft/releases/download/v0.5.0/photocraft-0.5.0-windows-x64.msi"},
	    {"name": "SHA256SUMS.txt", "size": 2048, "digest": null, "uploader": {"login": "bot"},
	     "browser_download_url": "https://github.com/storytold/photocraft/releases/download/v0.5.0/SHA256SUMS.txt"}
	  ]
	}`
	sum := "8a5edab282632443219e051e4ade2d1d5bbc671c781051bf1437897cbdfea0f1"
	x64 := release.ArchX64
	dl := "https://github.com/storytold/photocraft/releases/download/v0.5.0/"
	want := &release.Release{
		Tag: "v0.5.0", Version: "0.5.0", Name: "PhotoCraft v0.5.0", Prerelease: true, NotesMarkdown: "Notes",
		PublishedAt: release.NewTime(time.Date(2026, 10, 8, 14, 52, 50, 500e6, time.UTC)),
		HTMLURL:     "https://github.com/storytold/photocraft/releases/tag/v0.5.0",
		Assets: []release.Asset{
			{Name: "photocraft-0.5.0-windows-x64.msi", SizeBytes: 7, DownloadURL: dl + "photocraft-0.5.0-windows-x64.msi", SHA256: &sum,
				Platform: &release.Platform{OS: release.OSWindows, Arch: &x64, PackageType: release.PackageMSI}},
			{Name: "SHA256SUMS.txt", SizeBytes: 2048, DownloadURL: dl + "SHA256SUMS.txt"},
		},
	}
	got := mustParse(t, []byte(body))
	gotJSON, _ := release.Marshal(got)
	wantJSON, _ := release.Marshal(want)
	if string(gotJSON) != string(wantJSON) {
		t.Errorf("ParseRelease:\n got %s\nwant %s", gotJSON, wantJSON)
	}
}

func TestParseReleaseFields(t *testing.T) {
	long := func(s string, n int) string { return strings.Repeat(s, n) }
	tagPage := "https://github.com/" + repo + "/releases/tag/v1.2.3"
	page := func(u string) map[string]any { return map[string]any{"html_url": u} }
	tests := []struct {
		name   string
		fields map[string]any
		field  func(*release.Release) any
		want   any
	}{
		{"tag of 64 bytes", map[string]any{"tag_name": long("1", 64)}, tag, long("1", 64)},
		{"version without v", map[string]any{"tag_name": "v1.2.3"}, version, "1.2.3"},
		{"only one of vV goes", map[string]any{"tag_name": "vV1"}, version, "V1"},
		{"unicode tag", map[string]any{"tag_name": "v1.0-ß"}, version, "1.0-ß"},

		{"name kept", map[string]any{"name": "PhotoCraft 1.2.3"}, name, "PhotoCraft 1.2.3"},
		{"name missing is the tag", nil, name, "v1.2.3"},
		{"name empty is the tag", map[string]any{"name": ""}, name, "v1.2.3"},
		{"name null is the tag", map[string]any{"name": json.RawMessage("null")}, name, "v1.2.3"},
		{"name of 200 bytes kept", map[string]any{"name": long("n", 200)}, name, long("n", 200)},
		{"name of 201 bytes cut", map[string]any{"name": long("n", 201)}, name, long("n", 200) + "…"},

		{"name without control characters", map[string]any{"name": "Photo\x1b[2J\nCraft\u0085"}, name, "Photo[2JCraft"},
		{"name of bidi characters only is the tag", map[string]any{"name": "\u202e\u2066"}, name, "v1.2.3"},

		{"notes missing", nil, notes, ""},
		{"notes keep line breaks and tabs, no other control or bidi character", map[string]any{"body": "a\r\n\tb\x1b[31m\u202ec\x00"}, notes, "a\r\n\tb[31mc"},
		{"notes null", map[string]any{"body": json.RawMessage("null")}, notes, ""},
		{"notes kept", map[string]any{"body": "## Fixed\n* things"}, notes, "## Fixed\n* things"},
		{"notes of 64 KiB kept", map[string]any{"body": long("b", 65536)}, notes, long("b", 65536)},
		{"notes over 64 KiB cut", map[string]any{"body": long("b", 65537)}, notes, long("b", 65536) + "…"},

		{"html_url kept", page(tagPage[:len(tagPage)-len(".3")] + "%2E3"), htmlURL, tagPage[:len(tagPage)-len(".3")] + "%2E3"},
		{"html_url in another case replaced", page("https://github.com/StoryTold/PhotoCraft/releases/tag/v1.2.3"), htmlURL, tagPage},
		{"html_url missing replaced", nil, htmlURL, tagPage},
		{"html_url of another repo replaced", page("https://github.com/evil/photocraft/releases/tag/v1.2.3"), htmlURL, tagPage},
		{"html_url of a longer repo replaced", page("https://github.com/" + repo + "x/releases/tag/v1"), htmlURL, tagPage},
		{"html_url over http replaced", page("http://github.com/" + repo + "/releases/tag/v1.2.3"), htmlURL, tagPage},
		{"html_url outside releases replaced", page("https://github.com/" + repo + "/releasesX"), htmlURL, tagPage},
		{"html_url with encoded dot segments replaced", page("https://github.com/" + repo + "/releases/%2e%2e/%2E%2E/attacker/x"), htmlURL, tagPage},
		{"html_url with a backslash replaced", page("https://github.com/" + repo + `/releases/..\..\attacker`), htmlURL, tagPage},
		{"html_url with a fragment replaced", page("https://github.com/" + repo + "/releases/tag/v1.2.3#x"), htmlURL, tagPage},
		{"html_url with user info replaced", page("https://x@github.com/" + repo + "/releases/tag/v1.2.3"), htmlURL, tagPage},
		{"html_url on another host replaced", page("https://github.com.evil/" + repo + "/releases/"), htmlURL, tagPage},

		{"prerelease true", map[string]any{"prerelease": true}, prerelease, true},
		{"prerelease false", map[string]any{"prerelease": false}, prerelease, false},
		{"prerelease missing", nil, prerelease, false},
		{"draft false is fine", map[string]any{"draft": false}, tag, "v1.2.3"},
		{"published_at null", map[string]any{"published_at": json.RawMessage("null")}, published, "null"},
		{"published_at missing", nil, published, "null"},
		{"published_at to UTC", map[string]any{"published_at": "2026-10-08T16:52:50+02:00"}, published, `"2026-10-08T14:52:50Z"`},
		{"unknown fields ignored", map[string]any{"uploader": map[string]any{"id": 1}, "zipball_url": 5}, tag, "v1.2.3"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := mustParse(t, releaseJSON(t, tt.fields))
			if got := tt.field(r); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
}

// TestParseReleaseTags: a tag that breaks git's ref-name rules, or holds
// anything unprintable, fails the answer.
func TestParseReleaseTags(t *testing.T) {
	good := []string{"v1.2.3", "V2.0.0-rc.1", "release/1.0", "v1+build.5", "версия-1"}
	bad := []string{"v1\x1b]0;pwned\x07\x1b[2J\r\n\x00", "v1\x1b[2J", "v1 2", "v1\u00a02", "v1\u202e2", "v1\u200b",
		"../../../../attacker/x/releases/tag/evil?#", "a..b", "v1~1", "v1^", "v1:2", "v1?", "v1*", "v1[2", `v1\2`,
		"v1@{2", "@", "v1.", "v1.lock", "a.lock/b", "/v1", "v1/", "a//b", ".v1", "a/.b"}
	for i, tag := range slices.Concat(good, bad) {
		_, err := github.ParseRelease(app, releaseJSON(t, map[string]any{"tag_name": tag}))
		if got, want := err == nil, i < len(good); got != want {
			t.Errorf("ParseRelease(tag %q) error = %v, want ok %v", tag, err, want)
		}
	}
}

func tag(r *release.Release) any        { return r.Tag }
func version(r *release.Release) any    { return r.Version }
func name(r *release.Release) any       { return r.Name }
func notes(r *release.Release) any      { return r.NotesMarkdown }
func htmlURL(r *release.Release) any    { return r.HTMLURL }
func prerelease(r *release.Release) any { return r.Prerelease }
func published(r *release.Release) any {
	b, _ := release.Marshal(r.PublishedAt)
	return string(b)
}

// TestParseReleaseAssetFilters: an asset is kept only with a good name, a
// size JSON numbers hold exactly, and a download URL that is exactly this
// asset's, with nothing a URL parser would resolve elsewhere.
func TestParseReleaseAssetFilters(t *testing.T) {
	const good = "photocraft-1.2.3-windows-x64.msi"
	gh := "https://github.com/" + repo + "/releases/download/v1.2.3/"
	dl := func(u string) map[string]any { return map[string]any{"browser_download_url": u} }
	named := func(n string) map[string]any { return map[string]any{"name": n} }
	type filterCase struct {
		name   string
		fields map[string]any
		kept   bool
	}
	tests := []filterCase{
		{"good", nil, true},
		{"name missing", map[string]any{"name": nil}, false},
		{"name empty", named(""), false},
		{"name null", map[string]any{"name": json.RawMessage("null")}, false},
		{"name of 200 bytes", named(strings.Repeat("a", 196) + ".msi"), true},
		{"name of 201 bytes", named(strings.Repeat("a", 197) + ".msi"), false},
		{"name starts with a dot", named(".photocraft.msi"), false},
		{"name with a dot inside", named("photo.craft.msi"), true},
		{"name with a space", named("photo craft.msi"), true},
		{"name with unicode", named("фото.msi"), true},
		{"name escaped in the url", named("photo craft+1.msi"), true},
		{"name with RLO", named("photocraft-setup-\u202egpj.msi"), false},
		{"name with an isolate", named("a\u2066b.msi"), false},
		{"name with RLM", named("a\u200fb.msi"), false},

		{"url missing", map[string]any{"browser_download_url": nil}, false},
		{"url escaped name", dl(gh + "photocraft-1.2.3-windows-x64%2Emsi"), true},
		{"url of another repo", dl("https://github.com/evil/photocraft/releases/download/v1/a.msi"), false},
		{"url of a repo with the same prefix", dl("https://github.com/" + repo + "-x/releases/download/v1/a.msi"), false},
		{"url in another case", dl("https://github.com/Storytold/PHOTOCRAFT/releases/download/v1/a.msi"), false},
		{"url over http", dl("http://github.com/" + repo + "/releases/download/v1/a.msi"), false},
		{"url on another host", dl("https://objects.example.com/" + repo + "/releases/download/v1/a.msi"), false},
		{"url of a tag page", dl("https://github.com/" + repo + "/releases/tag/v1.2.3"), false},
		{"url exactly the prefix", dl(gh[:len(gh)-len("v1.2.3/")]), false},
		{"url of another tag", dl("https://github.com/" + repo + "/releases/download/v1/" + good), false},
		{"url of another asset", dl(gh + "photocraft-1.2.3-windows-arm64.msi"), false},
		{"url dot segments into another repo", dl(gh + "../../../../attacker/payload/releases/download/v1/evil.msi"), false},
		{"url encoded dot segments", dl(gh + "%2e%2e/%2e%2e/%2e%2e/%2e%2e/attacker/payload/releases/download/v1/evil.msi"), false},
		{"url mixed encoded dot segment", dl(gh + ".%2E/" + good), false},
		{"url single dot segment", dl(gh + "./" + good), false},
		{"url backslashes", dl(gh + `..\..\..\..\attacker\payload\releases\download\v1\evil.msi`), false},
		{"url encoded backslash", dl(gh + "..%5c..%5cevil.msi"), false},
		{"url encoded slash", dl("https://github.com/" + repo + "/releases/download/v1.2.3%2F..%2F..%2Fx/" + good), false},
		{"url NUL and a header", dl(gh + good + "\x00\r\nSet-Cookie: x"), false},
		{"url encoded NUL", dl(gh + good + "%00"), false},
		{"url tab inside", dl(gh + "photo\tcraft-1.2.3-windows-x64.msi"), false},
		{"url space inside", dl("https://github.com/" + repo + "/releases/download/v1.2.3/ " + good), false},
		{"url query", dl(gh + good + "?x=1"), false},
		{"url empty query", dl(gh + good + "?"), false},
		{"url fragment", dl(gh + good + "#x"), false},
		{"url user info", dl("https://evil@github.com/" + repo + "/releases/download/v1.2.3/" + good), false},
		{"url user info before another host", dl("https://github.com@evil.example/" + repo + "/releases/download/v1.2.3/" + good), false},
		{"url port", dl("https://github.com:443/" + repo + "/releases/download/v1.2.3/" + good), false},
		{"url host in capitals", dl("https://GitHub.com/" + repo + "/releases/download/v1.2.3/" + good), false},
		{"url scheme in capitals", dl("HTTPS://github.com/" + repo + "/releases/download/v1.2.3/" + good), false},
		{"url host with a trailing dot", dl("https://github.com./" + repo + "/releases/download/v1.2.3/" + good), false},
		{"url double slash", dl("https://github.com//" + repo + "/releases/download/v1.2.3/" + good), false},
		{"url trailing slash", dl(gh + good + "/"), false},
		{"url leading space", dl(" " + gh + good), false},
		{"url non-ASCII", dl(gh + "фото.msi"), false},
		{"url bad escape", dl(gh + "photo%zzcraft.msi"), false},
		{"url truncated escape", dl(gh + good + "%2"), false},

		{"size zero", map[string]any{"size": 0}, true},
		{"size missing", map[string]any{"size": nil}, true},
		{"size big", map[string]any{"size": int64(1) << 40}, true},
		{"size negative", map[string]any{"size": -1}, false},
		{"size 2^53-1", map[string]any{"size": int64(1)<<53 - 1}, true},
		{"size 2^53+1", map[string]any{"size": int64(1)<<53 + 1}, false},
		{"size 2^63-1", map[string]any{"size": int64(math.MaxInt64)}, false},
	}
	for _, c := range "\x00\n\x7f\u0085/\\:<>\"|?*" {
		tests = append(tests, filterCase{fmt.Sprintf("name with %q", c), named("photo" + string(c) + ".msi"), false})
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := mustParse(t, releaseJSON(t, map[string]any{"assets": []any{asset(tt.fields)}}))
			if got := len(r.Assets) == 1; got != tt.kept {
				t.Fatalf("kept = %v, want %v (assets %+v)", got, tt.kept, r.Assets)
			}
		})
	}
	t.Run("kelvin sign for k dropped", func(t *testing.T) {
		// Unicode case folding takes U+212A KELVIN SIGN for "k"; GitHub does not.
		a := asset(map[string]any{"browser_download_url": "https://github.com/storytold/\u212araft/releases/download/v1/a.msi"})
		r, err := github.ParseRelease(release.App{Key: "kraft", Repo: "storytold/kraft"}, releaseJSON(t, map[string]any{"assets": []any{a}}))
		must(t, err)
		if len(r.Assets) != 0 {
			t.Errorf("asset under storytold/\\u212araft kept for storytold/kraft: %+v", r.Assets)
		}
	})
}

// TestParseReleaseAssetDigests: an asset's digest is kept, lower-cased,
// only when it is "sha256:" and 64 hex digits.
func TestParseReleaseAssetDigests(t *testing.T) {
	hex64 := strings.Repeat("0123456789abcdef", 4)
	tests := []struct {
		name   string
		digest any    // nil removes it
		want   string // "" for nil
	}{
		{"lowercase", "sha256:" + hex64, hex64},
		{"uppercase", "sha256:" + strings.ToUpper(hex64), hex64},
		{"of 63", "sha256:" + hex64[:63], ""},
		{"of 65", "sha256:" + hex64 + "0", ""},
		{"not hex", "sha256:" + hex64[:63] + "g", ""},
		{"of another kind", "sha512:" + hex64, ""},
		{"prefix in capitals", "SHA256:" + hex64, ""},
		{"bare hex", hex64, ""},
		{"null", json.RawMessage("null"), ""},
		{"missing", nil, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := mustParse(t, releaseJSON(t, map[string]any{"assets": []any{asset(map[string]any{"digest": tt.digest})}}))
			if len(r.Assets) != 1 {
				t.Fatalf("%d assets, want 1", len(r.Assets))
			}
			if got := cmp.Or(r.Assets[0].SHA256, new(string)); *got != tt.want {
				t.Errorf("sha256 = %q, want %q", *got, tt.want)
			}
		})
	}
}

func TestParseReleaseAssetList(t *testing.T) {
	named := func(n int) []any {
		as := make([]any, n)
		for i := range as {
			as[i] = asset(map[string]any{"name": fmt.Sprintf("a%03d.msi", i)})
		}
		return as
	}
	tests := []struct {
		name   string
		assets any // nil: no assets field
		want   []string
	}{
		{"missing", nil, []string{}},
		{"null", json.RawMessage("null"), []string{}},
		{"empty", []any{}, []string{}},
		{"all dropped", []any{asset(map[string]any{"name": ""}), json.RawMessage("null")}, []string{}},
		{"order kept", []any{asset(map[string]any{"name": "b.msi"}), asset(map[string]any{"name": ".x"}), asset(map[string]any{"name": "a.msi"})}, []string{"b.msi", "a.msi"}},
		{"first 200 that remain", append([]any{asset(map[string]any{"name": ".dropped"})}, named(250)...), names(0, 200)},
		{"exactly 200", named(200), names(0, 200)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fields := map[string]any{}
			if tt.assets != nil {
				fields["assets"] = tt.assets
			}
			r := mustParse(t, releaseJSON(t, fields))
			if r.Assets == nil {
				t.Fatal("Assets is nil, want a non-nil slice")
			}
			got := make([]string, len(r.Assets))
			for i, a := range r.Assets {
				got[i] = a.Name
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("assets = %v, want %v", got, tt.want)
			}
			b, _ := release.Marshal(r)
			if len(tt.want) == 0 && !strings.Contains(string(b), `"assets":[]`) {
				t.Errorf("JSON = %s, want \"assets\":[]", b)
			}
		})
	}
}

func names(from, to int) []string {
	var out []string
	for i := from; i < to; i++ {
		out = append(out, fmt.Sprintf("a%03d.msi", i))
	}
	return out
}

// checkRelease fails t unless r obeys every bound and filter of ParseRelease
// for a release of repo.
func checkRelease(t testing.TB, repo string, r *release.Release) {
	t.Helper()
	if r.Tag == "" || len(r.Tag) > github.MaxTag {
		t.Errorf("tag %q: empty or over %d bytes", r.Tag, github.MaxTag)
	}
	if v := r.Version; v != r.Tag && "v"+v != r.Tag && "V"+v != r.Tag {
		t.Errorf("version %q of tag %q", v, r.Tag)
	}
	if r.Name == "" || len(r.Name) > github.MaxName+len("…") || !utf8.ValidString(r.Name) {
		t.Errorf("name %q: empty, over %d bytes or not UTF-8", r.Name, github.MaxName)
	}
	if len(r.NotesMarkdown) > github.MaxNotes+len("…") || !utf8.ValidString(r.NotesMarkdown) {
		t.Errorf("notes of %d bytes: over %d and the ellipsis, or not UTF-8", len(r.NotesMarkdown), github.MaxNotes)
	}
	if !strings.HasPrefix(r.HTMLURL, "https://github.com/"+repo+"/releases/") || strings.ContainsAny(r.HTMLURL, "?#\\ ") ||
		strings.Contains(r.HTMLURL, "/.") || strings.Contains(strings.ToLower(r.HTMLURL), "%2e") || strings.Contains(strings.ToLower(r.HTMLURL), "%2f") {
		t.Errorf("html_url %q not plainly under the repo's releases", r.HTMLURL)
	}
	if r.Assets == nil || len(r.Assets) > github.MaxAssets {
		t.Errorf("assets: nil or %d, over %d", len(r.Assets), github.MaxAssets)
	}
	for _, a := range r.Assets {
		if a.Name == "" || len(a.Name) > github.MaxAssetName || a.Name[0] == '.' ||
			strings.ContainsAny(a.Name, `/\:<>"|?*`) || strings.ContainsFunc(a.Name, unicode.IsControl) {
			t.Errorf("asset name %q kept", a.Name)
		}
		if !plainDownload(a.DownloadURL, "/"+repo+"/releases/download/"+r.Tag+"/"+a.Name) {
			t.Errorf("asset %q: download_url %q kept", a.Name, a.DownloadURL)
		}
		if strings.ContainsFunc(a.Name, release.Bidi) {
			t.Errorf("asset name %q with a bidirectional formatting character kept", a.Name)
		}
		if a.SizeBytes < 0 || a.SizeBytes > release.MaxSizeBytes {
			t.Errorf("asset %q: size %d", a.Name, a.SizeBytes)
		}
		if a.SHA256 != nil && (len(*a.SHA256) != 64 || strings.Trim(*a.SHA256, "0123456789abcdef") != "") {
			t.Errorf("asset %q: sha256 %q", a.Name, *a.SHA256)
		}
		if got, want := a.Platform, release.ParseAsset(a.Name); !reflect.DeepEqual(got, want) {
			t.Errorf("asset %q: platform %+v, want %+v", a.Name, got, want)
		}
	}
	if err := release.Verify(app, r); err != nil {
		t.Errorf("release fails the trust check: %v", err)
	}
	if b, err := release.Marshal(r); err != nil {
		t.Errorf("release does not encode: %v", err)
	} else if _, err := release.Decode(app, b); err != nil {
		t.Errorf("release as stored does not decode: %v", err)
	}
}

// plainDownload is an oracle for the download URL filter, by other means:
// the standard parser finds exactly path on https://github.com, and nothing
// in the URL is a character or an escape that parsers read differently.
func plainDownload(raw, path string) bool {
	u, err := url.Parse(raw)
	if err != nil || u.Scheme != "https" || u.Host != "github.com" || u.User != nil ||
		u.RawQuery != "" || u.ForceQuery || u.Fragment != "" || u.Path != path {
		return false
	}
	lower := strings.ToLower(raw)
	for _, bad := range []string{`\`, "%2e", "%2f", "%5c", "/./", "/../", "#", "?"} {
		if strings.Contains(lower, bad) {
			return false
		}
	}
	return !strings.ContainsFunc(raw, func(r rune) bool { return r <= ' ' || r >= 0x7f })
}

func FuzzParseRelease(f *testing.F) {
	f.Add(fakegithub.NewRelease(repo, "v0.5.0").JSON())
	f.Add(fakegithub.Oversized(300).Body)
	f.Add([]byte(`{"tag_name":"v1","draft":false,"name":"` + strings.Repeat("é", 150) + `"}`))
	f.Add([]byte(`{"tag_name":"v1","html_url":"https://github.com/STORYTOLD/photocraft/releases/x","assets":[` +
		`{"name":"a.msi","size":-1,"browser_download_url":"https://github.com/storytold/photocraft/releases/download/a"},` +
		`{"name":".b","size":1,"browser_download_url":"https://github.com/storytold/photocraft/releases/download/b"},` +
		`{"name":"c\u0001","digest":"sha256:` + strings.Repeat("F", 64) + `"}]}`))
	f.Add([]byte(`{"tag_name":"V","body":null,"published_at":"2026-01-01T00:00:00+14:00"}`))
	f.Add([]byte(`{"tag_name":"v1","draft":true}`))
	f.Add([]byte(`not json`))
	f.Fuzz(func(t *testing.T, body []byte) {
		r, err := github.ParseRelease(app, body)
		if err != nil {
			if r != nil {
				t.Errorf("ParseRelease returned a release with the error %v", err)
			}
			return
		}
		checkRelease(t, repo, r)
	})
}

func TestParseReleaseRealistic(t *testing.T) {
	for _, tag := range []string{"v0.5.0", "V2.0.0-rc.1", "1.0.0"} {
		t.Run(tag, func(t *testing.T) {
			fr := fakegithub.NewRelease(repo, tag)
			r := mustParse(t, fr.JSON())
			checkRelease(t, repo, r)
			if len(r.Assets) != len(fr.Assets) {
				t.Errorf("%d assets kept, want all %d", len(r.Assets), len(fr.Assets))
			}
			recognised := 0
			for _, a := range r.Assets {
				if a.Platform != nil {
					recognised++
				}
				if a.SHA256 == nil {
					t.Errorf("asset %s lost its digest", a.Name)
				}
			}
			if recognised != len(fr.Assets)-1 {
				t.Errorf("%d assets with a platform, want all but the checksum file (%d)", recognised, len(fr.Assets)-1)
			}
		})
	}
}
