package release_test

import (
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/storytold/craft-releases/pkg/release"
)

var epoch = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// dated returns a release tag published h hours after epoch (nil published_at
// for h < 0).
func dated(tag string, h int, pre bool) *release.Release {
	r := &release.Release{Tag: tag, Prerelease: pre}
	if h >= 0 {
		r.PublishedAt = release.NewTime(epoch.Add(time.Duration(h) * time.Hour))
	}
	return r
}

// TestNewHistory: dated releases only, newest first (the given order among
// equals), the first of a tag, at most MaxHistory.
func TestNewHistory(t *testing.T) {
	many := make([]*release.Release, 0, 15)
	for i := range 15 {
		many = append(many, dated(fmt.Sprintf("v%d", i), i, false))
	}
	for _, tc := range []struct {
		name string
		in   []*release.Release
		want []string
	}{
		{"none", nil, []string{}},
		{"sorted newest first", []*release.Release{dated("v1", 1, false), dated("v3", 3, true), dated("v2", 2, false)}, []string{"v3", "v2", "v1"}},
		{"equal times keep the list's order", []*release.Release{dated("a", 1, false), dated("b", 1, false)}, []string{"a", "b"}},
		{"undated left out", []*release.Release{dated("v1", 1, false), dated("v0", -1, false), nil}, []string{"v1"}},
		{"first of a tag", []*release.Release{dated("v1", 1, false), dated("v1", 5, false)}, []string{"v1"}},
		{"at most MaxHistory, the newest", many, []string{"v14", "v13", "v12", "v11", "v10", "v9", "v8", "v7", "v6", "v5"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := release.NewHistory(tc.in)
			if got := h.Tags(); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("tags: got %q, want %q", got, tc.want)
			}
			if h.Releases == nil {
				t.Error("Releases is nil, want a slice")
			}
		})
	}
	var none *release.History
	if none.List() != nil || len(none.Tags()) != 0 || none.Companioned() != nil {
		t.Error("a nil History holds releases")
	}
}

// TestHistoryCompanioned: the newest HistoryCompanions of each kind.
func TestHistoryCompanioned(t *testing.T) {
	h := release.NewHistory([]*release.Release{
		dated("v9-rc", 9, true), dated("v8", 8, false), dated("v7-rc", 7, true), dated("v6-rc", 6, true),
		dated("v5-rc", 5, true), dated("v4", 4, false), dated("v3", 3, false), dated("v2", 2, false),
	})
	var got []string
	for _, r := range h.Companioned() {
		got = append(got, r.Tag)
	}
	if want := []string{"v9-rc", "v8", "v7-rc", "v6-rc", "v4", "v3"}; !reflect.DeepEqual(got, want) {
		t.Errorf("Companioned: got %q, want %q", got, want)
	}
	if h.Keeps("v2") || h.Keeps("v5-rc") || !h.Keeps("v3") {
		t.Error("Keeps disagrees with Companioned")
	}
}

// TestHistoryCompanions: companions are kept only for the releases
// Companioned returns; histories of one fetch merge into the union of
// their companions in any order, and a fetch of another list replaces them.
func TestHistoryCompanions(t *testing.T) {
	now := epoch.Add(24 * time.Hour)
	sig := func(name string) *release.Companions {
		return release.NewCompanions(map[string]string{name: "text of " + name})
	}
	list := []*release.Release{dated("v4", 4, false), dated("v3", 3, false), dated("v2", 2, false), dated("v1", 1, false)}
	h := release.NewHistory(list)
	if got := h.WithCompanions(map[string]*release.Companions{"v1": sig("a.sig")}); got != h {
		t.Errorf("companions of v1, not kept: got %+v, want h itself", got)
	}
	a := h.WithCompanions(map[string]*release.Companions{"v4": sig("a.sig")})
	b := h.WithCompanions(map[string]*release.Companions{"v4": sig("b.sig"), "v3": sig("c.sig")})
	if h.CompanionsOf("v4") != nil {
		t.Fatal("WithCompanions changed h")
	}
	fetch := func(h *release.History, etag string) release.Entry {
		return release.Entry{FetchedAt: epoch, ETag: etag, History: h}
	}
	ab, ba := fetch(a, `"e"`).Merge(fetch(b, `"e"`), now), fetch(b, `"e"`).Merge(fetch(a, `"e"`), now)
	for _, got := range []release.Entry{ab, ba} {
		if names := got.History.CompanionsOf("v4").Names(); !reflect.DeepEqual(names, []string{"a.sig", "b.sig"}) {
			t.Errorf("v4's companions: got %q, want both", names)
		}
		if names := got.History.CompanionsOf("v3").Names(); !reflect.DeepEqual(names, []string{"c.sig"}) {
			t.Errorf("v3's companions: got %q, want c.sig", names)
		}
	}
	if again := ab.Merge(fetch(b, `"e"`), now); again != ab {
		t.Errorf("merged again: got %+v, want the same entry", again)
	}
	other := release.NewHistory(list[1:])
	if got := fetch(a, `"e"`).Merge(release.Entry{FetchedAt: epoch, ETag: `"e"`, History: other}, now); got.History != a {
		t.Errorf("a list of other tags at the same time: got %v, want the first kept", got.History.Tags())
	}
	newer := release.Entry{FetchedAt: epoch.Add(time.Minute), ETag: `"f"`, History: other}
	if got := fetch(a, `"e"`).Merge(newer, now); got.History != other {
		t.Errorf("a newer fetch: got %v, want it", got.History.Tags())
	}
}
