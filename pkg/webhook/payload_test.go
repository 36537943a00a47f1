package webhook_test

import (
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/storytold/craft-releases/pkg/release"
	"github.com/storytold/craft-releases/pkg/webhook"
)

func TestParse(t *testing.T) {
	tests := []struct {
		name     string
		body     string
		want     webhook.Payload
		wantHint string
		wantErr  bool
	}{
		{"published", `{"action":"published","release":{"tag_name":"v1.2.0","draft":false,"prerelease":false,"published_at":"2026-10-10T12:00:00Z"},"repository":{"full_name":"StoryTold/PhotoCraft"}}`, webhook.Payload{Action: "published", Repo: "StoryTold/PhotoCraft", Tag: "v1.2.0", Dated: true}, "v1.2.0", false},
		{"released", `{"action":"released","release":{"tag_name":"v2","published_at":"2026-10-10T12:00:00Z"},"repository":{"full_name":"o/p"}}`, webhook.Payload{Action: "released", Repo: "o/p", Tag: "v2", Dated: true}, "v2", false},
		{"prereleased: no hint", `{"action":"prereleased","release":{"tag_name":"v2-rc1","prerelease":true,"published_at":"2026-10-10T12:00:00Z"},"repository":{"full_name":"o/p"}}`, webhook.Payload{Action: "prereleased", Repo: "o/p", Tag: "v2-rc1", Pre: true, Dated: true}, "", false},
		{"published prerelease: no hint", `{"action":"published","release":{"tag_name":"v2-rc1","prerelease":true,"published_at":"x"},"repository":{"full_name":"o/p"}}`, webhook.Payload{Action: "published", Repo: "o/p", Tag: "v2-rc1", Pre: true, Dated: true}, "", false},
		{"created draft: no hint", `{"action":"created","release":{"tag_name":"v3","draft":true,"published_at":null},"repository":{"full_name":"o/p"}}`, webhook.Payload{Action: "created", Repo: "o/p", Tag: "v3", Draft: true}, "", false},
		{"published without a date: no hint", `{"action":"published","release":{"tag_name":"v3"},"repository":{"full_name":"o/p"}}`, webhook.Payload{Action: "published", Repo: "o/p", Tag: "v3"}, "", false},
		{"deleted: no hint", `{"action":"deleted","release":{"tag_name":"v3","published_at":"x"},"repository":{"full_name":"o/p"}}`, webhook.Payload{Action: "deleted", Repo: "o/p", Tag: "v3", Dated: true}, "", false},
		{"edited: no hint", `{"action":"edited","release":{"tag_name":"v3","published_at":"x"},"repository":{"full_name":"o/p"}}`, webhook.Payload{Action: "edited", Repo: "o/p", Tag: "v3", Dated: true}, "", false},
		{"published with a tag of 256 bytes: no hint", `{"action":"published","release":{"tag_name":"` + strings.Repeat("a", 256) + `","published_at":"x"},"repository":{"full_name":"o/p"}}`, webhook.Payload{Action: "published", Repo: "o/p", Tag: strings.Repeat("a", 256), Dated: true}, "", false},
		{"no release object", `{"action":"published","repository":{"full_name":"o/p"}}`, webhook.Payload{Action: "published", Repo: "o/p"}, "", false},
		{"unknown fields are ignored", `{"zen":"Keep it logically awesome.","repository":{"full_name":"o/p","id":1}}`, webhook.Payload{Repo: "o/p"}, "", false},
		{"no repository", `{"action":"published","release":{"tag_name":"v1"}}`, webhook.Payload{}, "", true},
		{"empty full_name", `{"repository":{"full_name":""}}`, webhook.Payload{}, "", true},
		{"wrong type", `{"repository":{"full_name":7}}`, webhook.Payload{}, "", true},
		{"not JSON", `payload=%7B%7D`, webhook.Payload{}, "", true},
		{"an array", `[]`, webhook.Payload{}, "", true},
		{"empty", ``, webhook.Payload{}, "", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := webhook.Parse([]byte(tt.body))
			if (err != nil) != tt.wantErr {
				t.Fatalf("Parse error %v, want error %v", err, tt.wantErr)
			}
			if got != tt.want {
				t.Errorf("Parse got %+v, want %+v", got, tt.want)
			}
			if h := got.Hint(); h != tt.wantHint {
				t.Errorf("Hint got %q, want %q", h, tt.wantHint)
			}
		})
	}
}

func TestMatching(t *testing.T) {
	apps := []release.App{{Key: "photocraft", Repo: "storytold/photocraft"}, {Key: "vectorcraft", Repo: "storytold/vectorcraft"}, {Key: "photo2", Repo: "StoryTold/PhotoCraft"}}
	for _, tt := range []struct {
		repo string
		want []string
	}{
		{"storytold/photocraft", []string{"photocraft", "photo2"}}, {"STORYTOLD/PHOTOCRAFT", []string{"photocraft", "photo2"}},
		{"storytold/vectorcraft", []string{"vectorcraft"}}, {"storytold/filmcraft", nil}, {"storytold/photocraf", nil}, {"", nil},
	} {
		if got := webhook.Matching(apps, tt.repo); !reflect.DeepEqual(got, tt.want) {
			t.Errorf("Matching(%q) got %v, want %v", tt.repo, got, tt.want)
		}
	}
}

// FuzzParse: any body either parses to a payload with a repository and a
// bounded hint, or fails; it never panics.
func FuzzParse(f *testing.F) {
	for _, s := range []string{
		`{"action":"published","release":{"tag_name":"v1.2.0","draft":false,"prerelease":false,"published_at":"2026-10-10T12:00:00Z"},"repository":{"full_name":"storytold/photocraft"}}`,
		`{"zen":"Design for failure.","hook_id":1,"repository":{"full_name":"o/p"}}`,
		`{"repository":null}`, `[]`, `null`, `{"release":{"tag_name":["x"]}}`, "\xff",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		p, err := webhook.Parse(body)
		if err != nil {
			if p != (webhook.Payload{}) {
				t.Fatalf("Parse failed with %v yet returned %+v", err, p)
			}
			return
		}
		if p.Repo == "" {
			t.Fatalf("Parse returned no repository for %q", body)
		}
		if h := p.Hint(); h != "" && (h != p.Tag || len(h) > 255 || p.Draft || p.Pre) {
			t.Fatalf("Hint %q of %+v", h, p)
		}
	})
}

// TestRefreshes: an app without the channel is refreshed by every release
// event as before; one with it refreshes its list alone, with the tag, on
// a new pre-release, and both, the list without a tag, on anything else.
func TestRefreshes(t *testing.T) {
	apps := []release.App{
		{Key: "photocraft", Name: "PhotoCraft", Repo: "storytold/photocraft", Prereleases: true},
		{Key: "photo-classic", Name: "Classic", Repo: "storytold/PhotoCraft"},
		{Key: "vectorcraft", Name: "VectorCraft", Repo: "storytold/vectorcraft", Prereleases: true},
	}
	at := time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)
	p := func(action, tag string, pre bool) webhook.Payload {
		return webhook.Payload{Action: action, Repo: "StoryTold/photocraft", Tag: tag, Pre: pre, Dated: true}
	}
	draft := p("prereleased", "v3-rc1", true)
	draft.Draft = true
	for _, tt := range []struct {
		name string
		p    webhook.Payload
		want map[string]string // entry key → the tag it waits for
	}{
		{"prereleased", p("prereleased", "v2-rc1", true), map[string]string{"photocraft:prerelease": "v2-rc1", "photo-classic": ""}},
		{"published prerelease", p("published", "v2-rc1", true), map[string]string{"photocraft:prerelease": "v2-rc1", "photo-classic": ""}},
		{"a draft prereleased", draft, map[string]string{"photocraft:prerelease": "", "photo-classic": ""}},
		{"released", p("released", "v2", false), map[string]string{"photocraft": "v2", "photocraft:prerelease": "", "photo-classic": "v2"}},
		{"published", p("published", "v2", false), map[string]string{"photocraft": "v2", "photocraft:prerelease": "", "photo-classic": "v2"}},
		{"edited prerelease", p("edited", "v2-rc1", true), map[string]string{"photocraft": "", "photocraft:prerelease": "", "photo-classic": ""}},
		{"deleted", p("deleted", "v2", false), map[string]string{"photocraft": "", "photocraft:prerelease": "", "photo-classic": ""}},
		{"another repository", webhook.Payload{Action: "published", Repo: "o/p", Tag: "v1", Dated: true}, map[string]string{}},
	} {
		got := map[string]string{}
		for k, r := range webhook.Refreshes(apps, tt.p, at) {
			if !r.At.Equal(at) {
				t.Errorf("%s: %s at %v, want the arrival %v", tt.name, k, r.At, at)
			}
			got[k] = r.Tag
		}
		if !reflect.DeepEqual(got, tt.want) {
			t.Errorf("%s: Refreshes = %v, want %v", tt.name, got, tt.want)
		}
	}
}
