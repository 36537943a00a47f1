package release

import (
	"maps"
	"slices"
)

// MaxCompanions bounds how many companions an Entry keeps for a release:
// a poller fetches no more, and a stored set with more is refused.
const MaxCompanions = 32

// AssetRef is what fetching one asset's bytes through GitHub's API needs:
// its id and what GitHub said of it. It is not on the wire.
type AssetRef struct {
	ID     int64  // GitHub's asset id, > 0
	Size   int64  // bytes, as GitHub announced them
	SHA256 string // lowercase hex of GitHub's digest; "" when GitHub gave none
}

// Companions is the text of the companion assets fetched for a release, by
// asset name ("ArtCraft_0.41.0_x64-setup.exe.sig"): the small files the
// updater feeds serve, each one checked before it was kept
// (pkg/updates/companion; docs/redis.md, "Keys"). It never changes once made, so an
// Entry holds it by pointer and stays comparable; a nil *Companions has
// none. It is safe for concurrent use.
type Companions struct{ byName map[string]string }

// NewCompanions returns the companions of m (copied), or nil when m is empty.
func NewCompanions(m map[string]string) *Companions {
	if len(m) == 0 {
		return nil
	}
	return &Companions{byName: maps.Clone(m)}
}

// Len returns how many companions s holds.
func (s *Companions) Len() int {
	if s == nil {
		return 0
	}
	return len(s.byName)
}

// Get returns the text of the companion asset name.
func (s *Companions) Get(name string) (string, bool) {
	if s == nil {
		return "", false
	}
	text, ok := s.byName[name]
	return text, ok
}

// Names returns the names s holds, sorted.
func (s *Companions) Names() []string {
	if s == nil {
		return nil
	}
	return slices.Sorted(maps.Keys(s.byName))
}

// Map returns a copy of s as a map from asset name to text (nil for none).
func (s *Companions) Map() map[string]string {
	if s == nil {
		return nil
	}
	return maps.Clone(s.byName)
}

// Union returns the companions of s and o together; for a name both hold
// with different texts, the smaller text, so that Union is commutative,
// associative and idempotent like the rest of the merge law. It returns s
// itself when o adds or changes nothing, and o when s does not.
func (s *Companions) Union(o *Companions) *Companions {
	if covers(s, o) {
		return s
	}
	if covers(o, s) {
		return o
	}
	out := s.Map()
	for name, text := range o.byName {
		if mine, ok := out[name]; !ok || text < mine {
			out[name] = text
		}
	}
	return &Companions{byName: out}
}

// Equal reports whether s and o hold the same companions with the same
// texts (nil holds none).
func (s *Companions) Equal(o *Companions) bool {
	return s.Len() == o.Len() && covers(s, o) && covers(o, s)
}

// covers reports whether s holds every name of o, each with a text not
// greater than o's.
func covers(s, o *Companions) bool {
	for name, text := range o.mapOrNil() {
		if mine, ok := s.Get(name); !ok || mine > text {
			return false
		}
	}
	return true
}

func (s *Companions) mapOrNil() map[string]string {
	if s == nil {
		return nil
	}
	return s.byName
}

// Keep returns the companions of s whose names keep says to keep; s itself
// when it keeps them all.
func (s *Companions) Keep(keep func(name string) bool) *Companions {
	out := make(map[string]string, s.Len())
	for _, name := range s.Names() {
		if keep(name) {
			out[name] = s.byName[name]
		}
	}
	if len(out) == s.Len() {
		return s
	}
	return NewCompanions(out)
}
