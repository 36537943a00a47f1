package github_test

import (
	"encoding/json"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/storytold/craft-releases/pkg/github"
	"github.com/storytold/craft-releases/pkg/release"
	"github.com/storytold/craft-releases/test/fakegithub"
)

// stable and pre return a published release or prerelease of repo tagged
// tag, published hours after the fake's default publication time, then
// changed by each of opts (draft, undated).
func stable(tag string, hours int, opts ...func(*fakegithub.Release)) fakegithub.Release {
	r := fakegithub.NewRelease(repo, tag)
	at := r.PublishedAt.Add(time.Duration(hours) * time.Hour)
	r.PublishedAt = &at
	for _, o := range opts {
		o(&r)
	}
	return r
}

func pre(tag string, hours int, opts ...func(*fakegithub.Release)) fakegithub.Release {
	r := stable(tag, hours, opts...)
	r.Prerelease = true
	return r
}

func draft(r *fakegithub.Release)   { r.Draft = true }
func undated(r *fakegithub.Release) { r.PublishedAt = nil }

func listJSON(t testing.TB, rs ...fakegithub.Release) []byte {
	t.Helper()
	b, err := json.Marshal(append([]fakegithub.Release{}, rs...))
	must(t, err)
	return b
}

// TestParseLists: of the first ListSize releases listed, ParsePrereleases
// chooses the newest dated prerelease that is no draft, wherever it is
// listed, unless a dated stable release that is no draft was published
// with it or after it (none: nil); ParseHistory keeps the dated releases
// that are no drafts, newest first, each as ParseRelease keeps it: a
// release ParseRelease refuses is left out and an asset it cannot trust
// dropped, the rest kept.
func TestParseLists(t *testing.T) {
	v1, none := stable("v1.0.0", 0), []string{}
	promoted := stable("v2.0.0-rc.1", 2) // promoted in place: published when it was a pre-release
	foreign := stable("v3.0.0", 3)
	foreign.Assets[0].BrowserDownloadURL = "https://github.com/attacker/photocraft/releases/download/v3.0.0/" + foreign.Assets[0].Name
	many := make([]fakegithub.Release, 0, 12)
	for i := range 12 {
		many = append(many, stable("v1.0."+string(rune('a'+i)), i))
	}
	for _, tt := range []struct {
		name    string
		history bool // ParseHistory, else ParsePrereleases
		list    []fakegithub.Release
		want    []string // the history's tags, or the chosen pre-release's
	}{
		{"a draft first", false, []fakegithub.Release{pre("v3.0.0-beta.1", 5, draft, undated), pre("v2.0.0-beta.2", 2), v1}, []string{"v2.0.0-beta.2"}},
		{"two prereleases", false, []fakegithub.Release{pre("v2.0.0-beta.1", 1), pre("v2.0.0-beta.2", 2)}, []string{"v2.0.0-beta.2"}},
		{"equals: the first listed", false, []fakegithub.Release{pre("v2.0.0-rc.1", 2), pre("v2.0.0-beta.2", 2)}, []string{"v2.0.0-rc.1"}},
		{"none at all", false, []fakegithub.Release{v1}, none},
		{"promoted in place", false, []fakegithub.Release{promoted, pre("v2.0.0-rc.0", 1), v1}, none},
		{"newer than the promoted one", false, []fakegithub.Release{pre("v2.0.0-rc.2", 3), promoted, pre("v2.0.0-rc.0", 1)}, []string{"v2.0.0-rc.2"}},
		{"a stable published with it", false, []fakegithub.Release{pre("v2.0.0-rc.0", 1), stable("v2.0.0", 1)}, none},
		{"a newer draft stable", false, []fakegithub.Release{stable("v2.0.0", 3, draft), pre("v2.0.0-rc.0", 1)}, []string{"v2.0.0-rc.0"}},
		{"a newer undated stable", false, []fakegithub.Release{stable("v2.0.0", 3, undated), pre("v2.0.0-rc.0", 1)}, []string{"v2.0.0-rc.0"}},
		{"an empty list", false, nil, none},
		{"only undated and drafts", false, []fakegithub.Release{pre("v2.5.0-beta.1", 0, undated), pre("v3.0.0-beta.1", 5, draft, undated)}, none},
		{"past the tenth", false, append(slices.Repeat([]fakegithub.Release{v1}, 10), pre("v9.0.0-beta.1", 9)), none},
		{"newest first, kinds mixed", true, []fakegithub.Release{stable("v1.0.0", 1), pre("v2.0.0-rc.1", 2), stable("v2.0.0", 4)}, []string{"v2.0.0", "v2.0.0-rc.1", "v1.0.0"}},
		{"drafts and undated left out", true, []fakegithub.Release{stable("v9.0.0", 9, draft), stable("v8.0.0", 8, undated), stable("v1.0.0", 1)}, []string{"v1.0.0"}},
		{"a release with a bad tag left out", true, []fakegithub.Release{stable("bad tag\u0001", 7), stable("v1.0.0", 1)}, []string{"v1.0.0"}},
		{"a foreign download url: the asset dropped", true, []fakegithub.Release{foreign, stable("v1.0.0", 1)}, []string{"v3.0.0", "v1.0.0"}},
		{"a repeated tag: the first", true, []fakegithub.Release{stable("v1.0.0", 1), stable("v1.0.0", 5)}, []string{"v1.0.0"}},
		{"an empty list", true, nil, none},
		{"past the tenth unread", true, many, []string{"v1.0.j", "v1.0.i", "v1.0.h", "v1.0.g", "v1.0.f", "v1.0.e", "v1.0.d", "v1.0.c", "v1.0.b", "v1.0.a"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			body, got, tags := listJSON(t, tt.list...), []*release.Release(nil), none
			if tt.history {
				h, err := github.ParseHistory(app, body)
				must(t, err)
				got, tags = h.Releases, h.Tags()
			} else if r, err := github.ParsePrereleases(app, body); err != nil {
				t.Fatal(err)
			} else if r != nil {
				got, tags = []*release.Release{r}, []string{r.Tag}
				if !r.Prerelease {
					t.Errorf("chose %s, not marked prerelease", r.Tag)
				}
			}
			if !reflect.DeepEqual(tags, tt.want) {
				t.Errorf("tags: got %q, want %q", tags, tt.want)
			}
			for _, r := range got {
				checkRelease(t, repo, r)
				if r.Tag == "v3.0.0" && len(r.Assets) != len(foreign.Assets)-1 {
					t.Errorf("v3.0.0 kept %d assets, want all but the foreign one (%d)", len(r.Assets), len(foreign.Assets)-1)
				}
			}
		})
	}
}

// TestParseRejects: ParseRelease fails what is not one release object of
// fields of the right types, a draft or a bad tag; the list parsers what
// is not a list of release objects, a selection field of the wrong type in
// any of them, or a chosen pre-release that ParseRelease refuses: the
// whole answer fails, so that it replaces nothing.
func TestParseRejects(t *testing.T) {
	parsers := map[string]func([]byte) (bool, error){
		"ParseRelease":     func(b []byte) (bool, error) { r, err := github.ParseRelease(app, b); return r != nil, err },
		"ParsePrereleases": func(b []byte) (bool, error) { r, err := github.ParsePrereleases(app, b); return r != nil, err },
		"ParseHistory":     func(b []byte) (bool, error) { h, err := github.ParseHistory(app, b); return h != nil, err },
	}
	good := string(listJSON(t, stable("v1.0.0", 1)))
	for _, tt := range []struct{ name, only, body string }{
		{"empty", "ParseRelease", ""},
		{"not json", "ParseRelease", "<html>rate limited</html>"},
		{"truncated", "ParseRelease", `{"tag_name":"v1.0.0","name":"Tru`},
		{"array", "ParseRelease", `[{"tag_name":"v1.0.0"}]`},
		{"string", "ParseRelease", `"v1.0.0"`},
		{"null", "ParseRelease", `null`},
		{"trailing garbage", "ParseRelease", `{"tag_name":"v1.0.0"} {}`},
		{"draft", "ParseRelease", `{"tag_name":"v1.0.0","draft":true}`},
		{"tag missing", "ParseRelease", `{"name":"PhotoCraft"}`},
		{"tag empty", "ParseRelease", `{"tag_name":""}`},
		{"tag null", "ParseRelease", `{"tag_name":null}`},
		{"tag over 64 bytes", "ParseRelease", `{"tag_name":"v` + strings.Repeat("1", 64) + `"}`},
		{"tag a number", "ParseRelease", `{"tag_name":1}`},
		{"name a number", "ParseRelease", `{"tag_name":"v1","name":1}`},
		{"body an object", "ParseRelease", `{"tag_name":"v1","body":{}}`},
		{"draft a string", "ParseRelease", `{"tag_name":"v1","draft":"false"}`},
		{"prerelease a number", "ParseRelease", `{"tag_name":"v1","prerelease":0}`},
		{"published_at a number", "ParseRelease", `{"tag_name":"v1","published_at":1760000000}`},
		{"published_at not a time", "ParseRelease", `{"tag_name":"v1","published_at":"yesterday"}`},
		{"html_url a bool", "ParseRelease", `{"tag_name":"v1","html_url":true}`},
		{"assets an object", "ParseRelease", `{"tag_name":"v1","assets":{}}`},
		{"asset a string", "ParseRelease", `{"tag_name":"v1","assets":["a.msi"]}`},
		{"asset name a number", "ParseRelease", `{"tag_name":"v1","assets":[{"name":5}]}`},
		{"asset size a string", "ParseRelease", `{"tag_name":"v1","assets":[{"name":"a.msi","size":"7"}]}`},
		{"asset size a fraction", "ParseRelease", `{"tag_name":"v1","assets":[{"name":"a.msi","size":1.5}]}`},
		{"asset url a number", "ParseRelease", `{"tag_name":"v1","assets":[{"browser_download_url":1}]}`},
		{"asset digest an object", "ParseRelease", `{"tag_name":"v1","assets":[{"digest":{}}]}`},
		{"not json", "lists", `[`},
		{"an object", "lists", string(fakegithub.NewRelease(repo, "v1").JSON())},
		{"null", "lists", `null`},
		{"a number in the list", "lists", `[1]`},
		{"null in the list", "lists", `[null]`},
		{"prerelease of the wrong type", "lists", `[{"tag_name":"v1","prerelease":"yes"}]`},
		{"draft of the wrong type", "lists", `[{"tag_name":"v1","draft":0}]`},
		{"published_at not a time", "lists", `[{"tag_name":"v1","published_at":"yesterday"}]`},
		{"a pre-release's published_at not a time", "lists", `[{"tag_name":"v1","prerelease":true,"published_at":"yesterday"}]`},
		{"a good one, then a bad field", "lists", good[:1] + `{"prerelease":"yes"},` + good[1:]},
		{"the chosen one has a bad tag", "ParsePrereleases", string(listJSON(t, pre("bad tag\u0001", 1)))},
	} {
		for name, parse := range parsers {
			if tt.only != name && (tt.only != "lists" || name == "ParseRelease") {
				continue
			}
			if got, err := parse([]byte(tt.body)); err == nil || got {
				t.Errorf("%s: %s = %v, %v; want an error and nothing", tt.name, name, got, err)
			}
		}
	}
}

func FuzzParsePrereleases(f *testing.F) {
	f.Add(listJSON(f, pre("v2.0.0-beta.1", 1), fakegithub.NewRelease(repo, "v1")))
	f.Add([]byte(`[{"draft":true},{"prerelease":true,"published_at":"2026-01-01T00:00:00Z","tag_name":"v1"}]`))
	f.Add([]byte(`[{"prerelease":true,"published_at":"2026-01-01T00:00:00Z","tag_name":".."}]`))
	f.Add([]byte(`[] `))
	f.Add([]byte(`[{"prerelease":false,"published_at":"2026-01-02T00:00:00Z"},{"prerelease":true,"published_at":"2026-01-01T00:00:00Z","tag_name":"v1"}]`))
	f.Fuzz(func(t *testing.T, body []byte) {
		r, err := github.ParsePrereleases(app, body)
		switch {
		case err != nil && r != nil:
			t.Errorf("ParsePrereleases returned a release with the error %v", err)
		case r != nil:
			checkRelease(t, repo, r)
			if !r.Prerelease || r.PublishedAt == nil {
				t.Errorf("chose %+v: not a dated prerelease", r)
			}
			var list []struct {
				Draft, Prerelease bool
				PublishedAt       *release.Time `json:"published_at"`
			}
			if err := json.Unmarshal(body, &list); err != nil {
				t.Fatalf("chose %s from a list that does not decode: %v", r.Tag, err)
			}
			for _, l := range list[:min(len(list), github.ListSize)] {
				if !l.Draft && !l.Prerelease && l.PublishedAt != nil && !l.PublishedAt.IsZero() && !r.PublishedAt.After(l.PublishedAt.Time) {
					t.Errorf("chose %s, published %v, beside a stable release published %v", r.Tag, r.PublishedAt, l.PublishedAt)
				}
			}
		}
	})
}
