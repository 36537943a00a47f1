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
