package release_test

import (
	"reflect"
	"testing"
	"time"

	"github.com/storytold/craft-releases/pkg/release"
)

func TestEntryMerge(t *testing.T) {
	type E = release.Entry
	t0 := time.Date(2026, 10, 10, 12, 0, 0, 0, time.UTC)
	at := func(d time.Duration) time.Time { return t0.Add(d) }
	old, fresh := &release.Release{Tag: "v1"}, &release.Release{Tag: "v2"}
	failed, claimed := at(time.Minute), at(2*time.Minute)
	ours := E{FetchedAt: t0, ETag: `"e1"`, Release: old, FailedAt: failed, Failures: 2, ClaimedAt: claimed}
	// honest is the reader's clock unless a case sets one: every time above
	// is believed. setBack is it after Redis's was set back an hour: ours is
	// dated from the future.
	honest, setBack := at(time.Hour), at(-time.Hour)
	tests := []struct {
		name string
		now  time.Time // zero: honest
		e, o E
		want E
	}{
		{"newer fetch replaces the fetch part", time.Time{}, ours, E{FetchedAt: at(time.Second), ETag: `"e2"`, Release: fresh}, E{FetchedAt: at(time.Second), ETag: `"e2"`, Release: fresh, FailedAt: failed, Failures: 2, ClaimedAt: claimed}},
		{"newer fetch of no release clears the release", time.Time{}, ours, E{FetchedAt: at(time.Second)}, E{FetchedAt: at(time.Second), FailedAt: failed, Failures: 2, ClaimedAt: claimed}},
		{"equal fetch time keeps ours", time.Time{}, ours, E{FetchedAt: t0, ETag: `"e2"`, Release: fresh}, ours},
		{"older fetch keeps ours", time.Time{}, ours, E{FetchedAt: at(-time.Hour), ETag: `"e0"`, Release: fresh}, ours},
		{"never fetched keeps ours", time.Time{}, ours, E{}, ours},
		{"fetch into an empty entry", time.Time{}, E{}, E{FetchedAt: t0, ETag: `"e1"`, Release: old}, E{FetchedAt: t0, ETag: `"e1"`, Release: old}},
		{"newer failure replaces the failure part only", time.Time{}, ours, E{FetchedAt: at(-time.Hour), ETag: `"e0"`, FailedAt: at(3 * time.Minute), Failures: 3}, E{FetchedAt: t0, ETag: `"e1"`, Release: old, FailedAt: at(3 * time.Minute), Failures: 3, ClaimedAt: claimed}},
		{"equal failure time keeps ours", time.Time{}, ours, E{FailedAt: failed, Failures: 9}, ours},
		{"older failure keeps ours", time.Time{}, ours, E{FailedAt: at(time.Second), Failures: 1}, ours},
		{"fetch and failure merge independently", time.Time{}, ours, E{FetchedAt: at(time.Hour), ETag: `"e3"`, Release: fresh, FailedAt: at(time.Second), Failures: 1}, E{FetchedAt: at(time.Hour), ETag: `"e3"`, Release: fresh, FailedAt: failed, Failures: 2, ClaimedAt: claimed}},
		{"newer claim", time.Time{}, ours, E{ClaimedAt: at(time.Hour)}, E{FetchedAt: t0, ETag: `"e1"`, Release: old, FailedAt: failed, Failures: 2, ClaimedAt: at(time.Hour)}},
		{"older claim keeps ours", time.Time{}, ours, E{ClaimedAt: t0}, ours},
		{"after a clock set back, an honest fetch replaces one from the future", setBack, ours, E{FetchedAt: setBack, ETag: `"e2"`, Release: fresh}, E{FetchedAt: setBack, ETag: `"e2"`, Release: fresh, FailedAt: failed, Failures: 2, ClaimedAt: claimed}},
		{"after a clock set back, honest failure and claim replace ones from the future", setBack, ours, E{FailedAt: setBack, Failures: 1, ClaimedAt: setBack}, E{FetchedAt: t0, ETag: `"e1"`, Release: old, FailedAt: setBack, Failures: 1, ClaimedAt: setBack}},
		{"a time within MaxSkew ahead is believed", at(-release.MaxSkew), ours, E{FetchedAt: at(-time.Hour), ETag: `"e2"`, Release: fresh}, ours},
		{"a part from the future stays while nothing replaces it", setBack, ours, E{}, ours},
		{"of two parts from the future the later one wins", setBack, ours, E{FetchedAt: at(-time.Second), ETag: `"e2"`, Release: fresh}, ours},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			now := tc.now
			if now.IsZero() {
				now = honest
			}
			if got := tc.e.Merge(tc.o, now); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("Merge:\n got %+v\nwant %+v", got, tc.want)
			}
		})
	}
}

// TestEntryMergeOrder checks that merging the same entries in either order
// gives the same result when their times differ: the fleet converges.
func TestEntryMergeOrder(t *testing.T) {
	t0 := time.Date(2026, 10, 10, 12, 0, 0, 0, time.UTC)
	a := release.Entry{FetchedAt: t0, ETag: "a", FailedAt: t0.Add(2 * time.Second), Failures: 1, ClaimedAt: t0}
	b := release.Entry{FetchedAt: t0.Add(time.Second), ETag: "b", FailedAt: t0.Add(time.Second), Failures: 4, ClaimedAt: t0.Add(time.Second)}
	if ab, ba := a.Merge(b, t0), b.Merge(a, t0); !reflect.DeepEqual(ab, ba) {
		t.Errorf("a.Merge(b) = %+v, b.Merge(a) = %+v, want equal", ab, ba)
	}
}

func TestEntryFailing(t *testing.T) {
	t0 := time.Date(2026, 10, 10, 12, 0, 0, 0, time.UTC)
	tests := []struct {
		name             string
		e                release.Entry
		failing, fetched bool
	}{
		{"never anything", release.Entry{}, false, false},
		{"fetched only", release.Entry{FetchedAt: t0}, false, true},
		{"failed, never fetched", release.Entry{FailedAt: t0, Failures: 1}, true, false},
		{"failure newer than fetch", release.Entry{FetchedAt: t0, FailedAt: t0.Add(time.Millisecond), Failures: 1}, true, true},
		{"failure older than fetch", release.Entry{FetchedAt: t0, FailedAt: t0.Add(-time.Millisecond), Failures: 3}, false, true},
		{"failure at the fetch time", release.Entry{FetchedAt: t0, FailedAt: t0, Failures: 1}, false, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.e.Failing(); got != tc.failing {
				t.Errorf("Failing() = %v, want %v", got, tc.failing)
			}
			if got := tc.e.Fetched(); got != tc.fetched {
				t.Errorf("Fetched() = %v, want %v", got, tc.fetched)
			}
		})
	}
}

func TestOutcomeString(t *testing.T) {
	for o, want := range map[release.Outcome]string{release.Failed: "failed", release.NotModified: "not_modified", release.Fetched: "fetched", release.RateLimited: "rate_limited"} {
		if got := o.String(); got != want {
			t.Errorf("Outcome(%d).String() = %q, want %q", int(o), got, want)
		}
	}
}
