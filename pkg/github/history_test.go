package github_test

import (
	"context"
	"encoding/json"
	"reflect"
	"testing"

	"github.com/storytold/craft-releases/pkg/github"
	"github.com/storytold/craft-releases/pkg/release"
	"github.com/storytold/craft-releases/test/fakegithub"
)

// TestParseHistory: the dated releases that are no drafts, newest first,
// each as ParseRelease keeps it; a release ParseRelease refuses is left
// out and an asset it cannot trust dropped, the rest kept.
func TestParseHistory(t *testing.T) {
	foreign := stable("v3.0.0", 3)
	foreign.Assets[0].BrowserDownloadURL = "https://github.com/attacker/photocraft/releases/download/v3.0.0/" + foreign.Assets[0].Name
	many := make([]fakegithub.Release, 0, 12)
	for i := range 12 {
		many = append(many, stable("v1.0."+string(rune('a'+i)), i))
	}
	for _, tt := range []struct {
		name string
		list []fakegithub.Release
		want []string
	}{
		{"newest first, kinds mixed", []fakegithub.Release{stable("v1.0.0", 1), pre("v2.0.0-rc.1", 2), stable("v2.0.0", 4)},
			[]string{"v2.0.0", "v2.0.0-rc.1", "v1.0.0"}},
		{"drafts and undated left out", []fakegithub.Release{stable("v9.0.0", 9, draft), stable("v8.0.0", 8, undated), stable("v1.0.0", 1)}, []string{"v1.0.0"}},
		{"a release with a bad tag left out", []fakegithub.Release{stable("bad tag\u0001", 7), stable("v1.0.0", 1)}, []string{"v1.0.0"}},
		{"a foreign download url: the asset dropped", []fakegithub.Release{foreign, stable("v1.0.0", 1)}, []string{"v3.0.0", "v1.0.0"}},
		{"a repeated tag: the first", []fakegithub.Release{stable("v1.0.0", 1), stable("v1.0.0", 5)}, []string{"v1.0.0"}},
		{"an empty list", nil, []string{}},
		{"past the tenth unread", many, []string{"v1.0.j", "v1.0.i", "v1.0.h", "v1.0.g", "v1.0.f", "v1.0.e", "v1.0.d", "v1.0.c", "v1.0.b", "v1.0.a"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			h, err := github.ParseHistory(app, listJSON(t, tt.list...))
			if err != nil {
				t.Fatal(err)
			}
			if got := h.Tags(); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("tags: got %q, want %q", got, tt.want)
			}
			for _, r := range h.Releases {
				checkRelease(t, repo, r)
				if r.Tag == "v3.0.0" && len(r.Assets) != len(foreign.Assets)-1 {
					t.Errorf("v3.0.0 kept %d assets, want all but the foreign one (%d)", len(r.Assets), len(foreign.Assets)-1)
				}
			}
		})
	}
}

func FuzzParseHistory(f *testing.F) {
	f.Add(listJSON(f, pre("v2.0.0-beta.1", 1), fakegithub.NewRelease(repo, "v1")))
	f.Add([]byte(`[{"draft":true},{"published_at":"2026-01-01T00:00:00Z","tag_name":"v1"}]`))
	f.Add([]byte(`[{"published_at":"2026-01-01T00:00:00Z","tag_name":".."},{"published_at":"2026-01-01T00:00:00Z","tag_name":"v1"}]`))
	f.Add([]byte(`[] `))
	f.Fuzz(func(t *testing.T, body []byte) {
		h, err := github.ParseHistory(app, body)
		if err != nil {
			if h != nil {
				t.Errorf("ParseHistory returned a history with the error %v", err)
			}
			return
		}
		if h == nil || h.Releases == nil || len(h.Releases) > release.MaxHistory {
			t.Fatalf("ParseHistory = %+v, want at most %d releases", h, release.MaxHistory)
		}
		var list []json.RawMessage
		if err := json.Unmarshal(body, &list); err != nil {
			t.Fatalf("a history from a list that does not decode: %v", err)
		}
		seen := map[string]bool{}
		for i, r := range h.Releases {
			checkRelease(t, repo, r)
			if r.PublishedAt == nil || seen[r.Tag] || i > 0 && r.PublishedAt.After(h.Releases[i-1].PublishedAt.Time) {
				t.Errorf("release %d (%s): undated, repeated or out of order", i, r.Tag)
			}
			seen[r.Tag] = true
		}
	})
}

// TestHistoryEntry: a history entry asks for the list with an ETag of its
// own, gets its releases and their asset refs by tag, and revalidates with
// a 304.
func TestHistoryEntry(t *testing.T) {
	gh := fakegithub.New(t)
	c := newClient(t, gh, github.Options{})
	entry := app.HistoryEntry()
	gh.Publish(repo, stable("v2.0.0", 2))
	gh.SetList(repo, stable("v2.0.0", 2), stable("v1.0.0", 1))

	first := c.Latest(context.Background(), entry, "")
	if first.Outcome != release.Fetched || first.Release != nil || !reflect.DeepEqual(first.History.Tags(), []string{"v2.0.0", "v1.0.0"}) {
		t.Fatalf("first = %v, release %+v, history %v (err %v); want fetched v2.0.0, v1.0.0 and no release",
			first.Outcome, first.Release, first.History.Tags(), first.Err)
	}
	for _, r := range first.History.Releases {
		if len(first.HistoryAssets[r.Tag]) != len(r.Assets) {
			t.Errorf("%s: %d asset refs for %d assets", r.Tag, len(first.HistoryAssets[r.Tag]), len(r.Assets))
		}
	}
	if first.ETag == "" || first.ETag != gh.ETag(fakegithub.List(repo)) {
		t.Fatalf("ETag = %q, want the list's %q", first.ETag, gh.ETag(fakegithub.List(repo)))
	}
	if a := c.Latest(context.Background(), entry, first.ETag); a.Outcome != release.NotModified {
		t.Errorf("revalidated = %v (err %v), want not modified", a.Outcome, a.Err)
	}
	gh.SetList(repo, stable("v2.0.0", 2))
	gh.Queue(fakegithub.List(repo), fakegithub.Status(200))
	if a := c.Latest(context.Background(), entry, ""); a.Outcome != release.Failed || a.History != nil {
		t.Errorf("a 200 that is not a list = %v, history %v; want failed, none", a.Outcome, a.History.Tags())
	}
	for i, r := range gh.Requests() {
		if r.Path != "/repos/"+repo+"/releases" {
			t.Errorf("request %d: %s, want the list", i, r.Path)
		}
	}
}
