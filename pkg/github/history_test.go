package github_test

import (
	"encoding/json"
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
