package release_test

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/storytold/craft-releases/pkg/release"
)

// bucketVectors are docs/wire.md's table ("Staged rollouts"), computed
// apart from Bucket: the first eight bytes of SHA-256 of the three values
// joined by NUL, in hex, and their bucket.
var bucketVectors = []struct {
	app, tag, id string
	prefix       string
	bucket       int
}{
	{"photocraft", "v1.3.0", "install-1", "8539a0a218773fda", 6},
	{"photocraft", "v1.3.0", "install-2", "0d9b26cb083069fc", 12},
	{"photocraft", "v1.3.0", "0f8fad5b-d9cb-469f-a165-70867728950e", "beafdab485383e4c", 80},
	{"photocraft", "v1.3.1", "0f8fad5b-d9cb-469f-a165-70867728950e", "145901b921b8c0b1", 21},
	{"artcraft", "artcraft-v0.42.0", "install-1", "cb0301c5e030ac75", 25},
	{"vectorcraft", "v2.0.0", "a", "89faf0b7181ebec2", 38},
}

func TestBucket(t *testing.T) {
	for _, v := range bucketVectors {
		if got := release.Bucket(v.app, v.tag, v.id); got != v.bucket {
			t.Errorf("Bucket(%q, %q, %q) = %d, want %d (hash prefix %s)", v.app, v.tag, v.id, got, v.bucket, v.prefix)
		}
	}
}

func TestDecide(t *testing.T) {
	day := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	rel := func(tag string, days int, pre bool) *release.Release {
		return &release.Release{Tag: tag, PublishedAt: release.NewTime(day.AddDate(0, 0, days)), Prerelease: pre}
	}
	v1, v2, v3 := rel("v1", 1, false), rel("v2", 2, false), rel("v3", 3, false)
	rc, rcOld := rel("v4-rc.2", 4, true), rel("v4-rc.1", 3, true)
	history := []*release.Release{rc, v3, rcOld, v2, v1}
	backport := rel("v2.9", 5, false)
	full := slices.Clone(history)
	for i := len(full); i < release.MaxHistory; i++ {
		full = append(full, rel(fmt.Sprintf("v0.%d", i+2), -i, false))
	}
	withdraw := func(tags ...string) []release.Withdrawal {
		var ws []release.Withdrawal
		for _, tag := range tags {
			ws = append(ws, release.Withdrawal{Tag: tag, Reason: "bad"})
		}
		return ws
	}
	rollout := func(tag string, percent int) *release.Rollout { return &release.Rollout{Tag: tag, Percent: percent} }
	type D = release.Decisions
	type P = release.Plan
	ported := append([]*release.Release{backport}, history...)
	tests := []struct {
		name    string
		history []*release.Release // nil: not read yet
		d       D
		want    P
	}{
		{"no decision", nil, D{}, P{Latest: v3, Prerelease: rc}},
		{"the latest withdrawn", history, D{Withdrawn: withdraw("v3")}, P{Latest: v2, Prerelease: rc}},
		{"the latest withdrawn before the history is read", nil, D{Withdrawn: withdraw("v3")}, P{Prerelease: rc}},
		{"two withdrawn", history, D{Withdrawn: withdraw("v3", "v2")}, P{Latest: v1, Prerelease: rc}},
		{"an older one withdrawn", history, D{Withdrawn: withdraw("v1")}, P{Latest: v3, Prerelease: rc}},
		{"the pre-release withdrawn", history, D{Withdrawn: withdraw("v4-rc.2")}, P{Latest: v3, Prerelease: rcOld}},
		{"a tag nobody has", history, D{Withdrawn: withdraw("v9")}, P{Latest: v3, Prerelease: rc, Unfound: []string{"v9"}}},
		{"a rollout at 10 %", history, D{Rollout: rollout("v3", 10)}, P{Latest: v2, Staged: v3, Percent: 10, Prerelease: rc}},
		{"a rollout halted", history, D{Rollout: rollout("v3", 0)}, P{Latest: v2, Staged: v3, Percent: 0, Prerelease: rc}},
		{"a rollout before the history is read", nil, D{Rollout: rollout("v3", 10)}, P{Staged: v3, Percent: 10, Prerelease: rc}},
		{"a rollout complete", history, D{Rollout: rollout("v3", 100)}, P{Latest: v3, Prerelease: rc}},
		{"a rollout superseded by a newer release", history, D{Rollout: rollout("v2", 10)}, P{Latest: v3, Prerelease: rc}},
		{"a rollout of a withdrawn release", history, D{Rollout: rollout("v3", 10), Withdrawn: withdraw("v3")}, P{Latest: v2, Prerelease: rc}},
		{"a rollout with the release before it withdrawn", history, D{Rollout: rollout("v3", 50), Withdrawn: withdraw("v2")}, P{Latest: v1, Staged: v3, Percent: 50, Prerelease: rc}},
		{"a rollout of a tag GitHub dropped", history, D{Rollout: rollout("v5", 10)}, P{Latest: v3, Prerelease: rc, Unfound: []string{"v5"}}},
		{"a rollout of the first release", []*release.Release{v1}, D{Rollout: rollout("v1", 10)}, P{Staged: v1, Percent: 10}},
		{"a minimum alone", history, D{Minimum: &release.Minimum{Version: "9.0.0"}}, P{Latest: v3, Prerelease: rc}},
		// GitHub's latest is v3 though a back-port, v2.9, was published
		// after it: a decision keeps GitHub's latest and stages it.
		{"a back-port published after the latest", ported, D{Rollout: rollout("v3", 10)}, P{Latest: v2, Staged: v3, Percent: 10, Prerelease: rc}},
		{"a back-port and a minimum", ported, D{Minimum: &release.Minimum{Version: "1.0.0"}}, P{Latest: v3, Prerelease: rc}},
		{"a withdrawal aged out of a full history", full, D{Withdrawn: withdraw("v0.1")}, P{Latest: v3, Prerelease: rc}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			latest, pre := v3, rc
			if tt.history != nil && !slices.Contains(tt.history, v3) && !slices.Contains(tt.history, backport) {
				latest, pre = v1, nil
			}
			got := release.Decide(latest, pre, tt.history, tt.d)
			if got.Latest != tt.want.Latest || got.Staged != tt.want.Staged || got.Percent != tt.want.Percent ||
				got.Prerelease != tt.want.Prerelease || !slices.Equal(got.Unfound, tt.want.Unfound) {
				t.Errorf("got %s, want %s", show(got), show(tt.want))
			}
		})
	}
}

func show(p release.Plan) string {
	tag := func(r *release.Release) string {
		if r == nil {
			return "-"
		}
		return r.Tag
	}
	return fmt.Sprintf("{latest %s, staged %s at %d %%, pre-release %s, unfound %v}", tag(p.Latest), tag(p.Staged), p.Percent, tag(p.Prerelease), p.Unfound)
}
