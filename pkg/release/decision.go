package release

import (
	"crypto/sha256"
	"encoding/binary"
	"slices"
)

// Decisions are what operators decided about one app's releases: a staged
// rollout, withdrawn tags and a minimum version
// (docs/wire.md, "Release control"). The pollers read them from MySQL and
// share them through Redis with the renames and notices (Bulletin); the
// zero value decides nothing.
type Decisions struct {
	Rollout   *Rollout     `json:"rollout,omitempty"`
	Withdrawn []Withdrawal `json:"withdrawn,omitempty"`
	Minimum   *Minimum     `json:"minimum,omitempty"`
}

// Rollout stages the release Tag: Percent of installs (0 to 100; 0 halts
// it, 100 completes it) are offered it, the others the release before it.
type Rollout struct {
	Tag     string `json:"tag"`
	Percent int    `json:"percent"`
}

// Withdrawal takes the release Tag away from every client.
type Withdrawal struct {
	Tag    string `json:"tag"`
	Reason string `json:"reason"`
}

// Minimum is the lowest version a client may run: one below it is offered
// the update whatever a rollout says.
type Minimum struct {
	Version string `json:"version"`
	Reason  string `json:"reason"`
}

// Empty reports whether d decides nothing.
func (d Decisions) Empty() bool {
	return d.Rollout == nil && len(d.Withdrawn) == 0 && d.Minimum == nil
}

// Withdraws reports whether d withdraws tag.
func (d Decisions) Withdraws(tag string) bool {
	return slices.ContainsFunc(d.Withdrawn, func(w Withdrawal) bool { return w.Tag == tag })
}

// Bucket returns the install id's bucket, 0 to 99, in the rollout of app's
// release tag: the first eight bytes of SHA-256(app NUL tag NUL id) as a
// big-endian integer, modulo 100. An id is in a rollout at P % when its
// bucket is below P, so it stays in as P grows (docs/wire.md, "Staged
// rollouts").
func Bucket(app, tag, id string) int {
	// Room for the longest key, tag and install id the service takes, so
	// that bucketing a request allocates nothing.
	var buf [MaxKey + 1 + 255 + 1 + 128]byte
	b := append(append(append(append(append(buf[:0], app...), 0), tag...), 0), id...)
	sum := sha256.Sum256(b)
	return int(binary.BigEndian.Uint64(sum[:8]) % 100)
}

// Plan is what an app serves under its decisions
// (docs/wire.md, "Release control").
type Plan struct {
	// Latest is latest_release: the newest release that is not withdrawn,
	// or, while a rollout is under way, the newest one before the staged
	// release; nil when there is none, or when the release before a staged
	// or withdrawn latest release is not known yet.
	Latest *Release
	// Staged is the release a rollout under way offers to Percent of
	// installs (0 while it is halted); nil when there is no rollout under
	// way.
	Staged  *Release
	Percent int
	// Prerelease is the newest pre-release that is not withdrawn.
	Prerelease *Release
	// Unfound lists the tags decisions name that none of the releases
	// given holds: such a decision is not applied, and is flagged.
	Unfound []string
}

// Decide returns what an app serves given its latest release, its newest
// pre-release (nil for none), its history (its newest releases, in any
// order; nil when it was not read yet) and its decisions. The latest
// release and the pre-release stay what GitHub says unless withdrawn or
// staged; the release before one is the newest by published_at (a release
// without one is older than any with) that is not withdrawn.
func Decide(latest, pre *Release, history []*Release, d Decisions) Plan {
	if d.Empty() {
		return Plan{Latest: latest, Prerelease: pre}
	}
	var known []*Release
	for _, r := range append([]*Release{latest, pre}, history...) {
		if r != nil && !slices.ContainsFunc(known, func(k *Release) bool { return k.Tag == r.Tag }) {
			known = append(known, r)
		}
	}
	slices.SortStableFunc(known, func(a, b *Release) int { return -compareTime(a.PublishedAt, b.PublishedAt) })
	find := func(tag string) *Release {
		if i := slices.IndexFunc(known, func(r *Release) bool { return r.Tag == tag }); i >= 0 {
			return known[i]
		}
		return nil
	}
	// newest returns the newest release of the kind asked for that is not
	// withdrawn and is older than before (nil: any). Without a history, only
	// the releases at hand can be offered: none that might have an older,
	// better one in the history.
	newest := func(prerelease bool, before *Release) *Release {
		for _, r := range known {
			if r.Prerelease != prerelease || d.Withdraws(r.Tag) {
				continue
			}
			if before != nil && compareTime(r.PublishedAt, before.PublishedAt) >= 0 {
				continue
			}
			return r
		}
		return nil
	}
	var p Plan
	unread := history == nil
	// A withdrawn tag is flagged only where it could be seen: once the
	// history is read and not full, so that a withdrawal that aged out of
	// the newest releases stays quiet.
	if !unread && len(history) < MaxHistory {
		for _, w := range d.Withdrawn {
			if find(w.Tag) == nil {
				p.Unfound = append(p.Unfound, w.Tag)
			}
		}
	}
	// keep returns r, the release GitHub says is the latest of its kind,
	// unless it is withdrawn: then the newest older one that is not, or nil
	// while the history that holds it is not read.
	keep := func(r *Release) *Release {
		switch {
		case r == nil || !d.Withdraws(r.Tag):
			return r
		case unread:
			return nil
		}
		return newest(r.Prerelease, r)
	}
	p.Latest = keep(latest)
	if r := d.Rollout; r != nil {
		staged := find(r.Tag)
		switch {
		case staged == nil:
			p.Unfound = append(p.Unfound, r.Tag)
		case r.Percent >= 100 || staged.Prerelease || staged != p.Latest:
			// Complete, or superseded by a newer release, withdrawn, or no
			// stable release: nothing is staged.
		default:
			p.Staged, p.Percent = staged, max(r.Percent, 0)
			p.Latest = nil
			if !unread {
				p.Latest = newest(false, staged)
			}
		}
	}
	p.Prerelease = keep(pre)
	return p
}

// compareTime orders two published_at times, nil first.
func compareTime(a, b *Time) int {
	switch {
	case a == nil && b == nil:
		return 0
	case a == nil:
		return -1
	case b == nil:
		return 1
	}
	return a.Compare(b.Time)
}
