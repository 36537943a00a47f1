package release

import (
	"maps"
	"slices"
)

// Bounds of a History.
const (
	// MaxHistory bounds the releases a History holds: the newest of the
	// first page of an app's release list.
	MaxHistory = 10
	// HistoryCompanions is how many releases of each kind, stable and
	// pre-release, newest first, a History keeps the companions of
	// (Companioned): the few a decision may serve instead of the latest.
	HistoryCompanions = 3
)

// History is an app's newest releases, as the first page of its release
// list showed them, held by an app's HistoryEntry so that what an app
// serves under its operators' decisions (Decide) can fall back on the
// release before a withdrawn or staged one (docs/redis.md, "Release
// history"). It never changes once made, so an Entry holds it by pointer
// and stays comparable; a fetched history entry always holds one, with no
// releases when the list had none. It is safe for concurrent use.
type History struct {
	// Releases are the list's releases that are no drafts and have a
	// published_at, newest first (the list's order among equal times), of
	// distinct tags, at most MaxHistory, each one that Verify accepts for
	// the app. Never nil in a History.
	Releases []*Release
	// Companions are the companion assets fetched so far for the releases
	// Companioned returns, by tag; a tag without any is absent. Nil for
	// none.
	Companions map[string]*Companions
}

// NewHistory returns the History of rels: those with a published_at,
// sorted newest first (stably), the first of each tag, at most MaxHistory,
// without companions. It does not check the releases (Verify).
func NewHistory(rels []*Release) *History {
	out := make([]*Release, 0, min(len(rels), MaxHistory))
	for _, r := range rels {
		if r != nil && r.PublishedAt != nil && !slices.ContainsFunc(out, func(o *Release) bool { return o.Tag == r.Tag }) {
			out = append(out, r)
		}
	}
	slices.SortStableFunc(out, func(a, b *Release) int { return b.PublishedAt.Compare(a.PublishedAt.Time) })
	return &History{Releases: out[:min(len(out), MaxHistory)]}
}

// List returns h's releases, newest first; nil for a nil History (none
// read yet), which Decide tells from an empty one.
func (h *History) List() []*Release {
	if h == nil {
		return nil
	}
	return h.Releases
}

// Tags returns the tags of h's releases, in order.
func (h *History) Tags() []string {
	tags := make([]string, len(h.List()))
	for i, r := range h.List() {
		tags[i] = r.Tag
	}
	return tags
}

// Companioned returns the releases of h whose companions it keeps: the
// newest HistoryCompanions stable releases and the newest HistoryCompanions
// pre-releases, newest first.
func (h *History) Companioned() []*Release {
	var out []*Release
	stable, pre := 0, 0
	for _, r := range h.List() {
		n := &stable
		if r.Prerelease {
			n = &pre
		}
		if *n < HistoryCompanions {
			*n++
			out = append(out, r)
		}
	}
	return out
}

// Keeps reports whether h keeps the companions of the release tag
// (Companioned).
func (h *History) Keeps(tag string) bool {
	return slices.ContainsFunc(h.Companioned(), func(r *Release) bool { return r.Tag == tag })
}

// CompanionsOf returns the companions h holds for the release tag (nil for
// none).
func (h *History) CompanionsOf(tag string) *Companions {
	if h == nil {
		return nil
	}
	return h.Companions[tag]
}

// WithCompanions returns h with add's companions too, by tag, for the
// releases it keeps companions of (others are left out), as Companions.Union
// joins them; h itself when that adds nothing.
func (h *History) WithCompanions(add map[string]*Companions) *History {
	if h == nil {
		return nil
	}
	var out map[string]*Companions
	for _, tag := range slices.Sorted(maps.Keys(add)) {
		have := h.Companions[tag]
		u := have.Union(add[tag])
		if u == have || !h.Keeps(tag) {
			continue
		}
		if out == nil {
			out = maps.Clone(h.Companions)
			if out == nil {
				out = make(map[string]*Companions, 1)
			}
		}
		out[tag] = u
	}
	if out == nil {
		return h
	}
	return &History{Releases: h.Releases, Companions: out}
}

// Union returns h with o's companions too (WithCompanions), for two
// histories of the same fetch (SameFetch): commutative, associative and
// idempotent like the rest of the merge law. It returns h when o adds
// nothing, and o when h is nil.
func (h *History) Union(o *History) *History {
	if h == nil {
		return o
	}
	if o == nil {
		return h
	}
	u := h.WithCompanions(o.Companions)
	if u != h && o.WithCompanions(h.Companions) == o {
		return o
	}
	return u
}

// sameHistory reports whether h and o hold releases of the same tags, in
// the same order (both nil, or both none, included).
func sameHistory(h, o *History) bool {
	return (h == nil) == (o == nil) && slices.Equal(h.Tags(), o.Tags())
}
