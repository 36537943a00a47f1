package release_test

import (
	"reflect"
	"testing"
	"time"

	"github.com/storytold/craft-releases/pkg/release"
)

func TestEntryMerge(t *testing.T) {
	t0 := time.Date(2026, 10, 10, 12, 0, 0, 0, time.UTC)
	at := func(d time.Duration) time.Time { return t0.Add(d) }
	old := &release.Release{Tag: "v1"}
	fresh := &release.Release{Tag: "v2"}
	ours := release.Entry{
		FetchedAt: at(0), ETag: `"e1"`, Release: old,
		FailedAt: at(time.Minute), Failures: 2,
		ClaimedAt: at(2 * time.Minute),
	}
	// The reader's clock, unless a case sets one: every time above is
	// believed.
	honest := at(time.Hour)
	// The reader's clock after Redis's was set back an hour: ours is dated
	// from the future.
	setBack := at(-time.Hour)
	tests := []struct {
		name string
		now  time.Time // zero: honest
		e, o release.Entry
		want release.Entry
	}{
		{
			name: "newer fetch replaces the fetch part",
			e:    ours,
			o:    release.Entry{FetchedAt: at(time.Second), ETag: `"e2"`, Release: fresh},
			want: release.Entry{
				FetchedAt: at(time.Second), ETag: `"e2"`, Release: fresh,
				FailedAt: at(time.Minute), Failures: 2, ClaimedAt: at(2 * time.Minute),
			},
		},
		{
			name: "newer fetch of no release clears the release",
			e:    ours,
			o:    release.Entry{FetchedAt: at(time.Second)},
			want: release.Entry{
				FetchedAt: at(time.Second),
				FailedAt:  at(time.Minute), Failures: 2, ClaimedAt: at(2 * time.Minute),
			},
		},
		{
			name: "equal fetch time keeps ours",
			e:    ours,
			o:    release.Entry{FetchedAt: at(0), ETag: `"e2"`, Release: fresh},
			want: ours,
		},
		{
			name: "older fetch keeps ours",
			e:    ours,
			o:    release.Entry{FetchedAt: at(-time.Hour), ETag: `"e0"`, Release: fresh},
			want: ours,
		},
		{
			name: "never fetched keeps ours",
			e:    ours,
			o:    release.Entry{},
			want: ours,
		},
		{
			name: "fetch into an empty entry",
			e:    release.Entry{},
			o:    release.Entry{FetchedAt: at(0), ETag: `"e1"`, Release: old},
			want: release.Entry{FetchedAt: at(0), ETag: `"e1"`, Release: old},
		},
		{
			name: "newer failure replaces the failure part only",
			e:    ours,
			o:    release.Entry{FetchedAt: at(-time.Hour), ETag: `"e0"`, FailedAt: at(3 * time.Minute), Failures: 3},
			want: release.Entry{
				FetchedAt: at(0), ETag: `"e1"`, Release: old,
				FailedAt: at(3 * time.Minute), Failures: 3, ClaimedAt: at(2 * time.Minute),
			},
		},
		{
			name: "equal failure time keeps ours",
			e:    ours,
			o:    release.Entry{FailedAt: at(time.Minute), Failures: 9},
			want: ours,
		},
		{
			name: "older failure keeps ours",
			e:    ours,
			o:    release.Entry{FailedAt: at(time.Second), Failures: 1},
			want: ours,
		},
		{
			name: "fetch and failure merge independently",
			e:    ours,
			o:    release.Entry{FetchedAt: at(time.Hour), ETag: `"e3"`, Release: fresh, FailedAt: at(time.Second), Failures: 1},
			want: release.Entry{
				FetchedAt: at(time.Hour), ETag: `"e3"`, Release: fresh,
				FailedAt: at(time.Minute), Failures: 2, ClaimedAt: at(2 * time.Minute),
			},
		},
		{
			name: "newer claim",
			e:    ours,
			o:    release.Entry{ClaimedAt: at(time.Hour)},
			want: release.Entry{
				FetchedAt: at(0), ETag: `"e1"`, Release: old,
				FailedAt: at(time.Minute), Failures: 2, ClaimedAt: at(time.Hour),
			},
		},
		{
			name: "older claim keeps ours",
			e:    ours,
			o:    release.Entry{ClaimedAt: at(0)},
			want: ours,
		},
		{
			name: "after a clock set back, an honest fetch replaces one from the future",
			now:  setBack,
			e:    ours,
			o:    release.Entry{FetchedAt: setBack, ETag: `"e2"`, Release: fresh},
			want: release.Entry{
				FetchedAt: setBack, ETag: `"e2"`, Release: fresh,
				FailedAt: at(time.Minute), Failures: 2, ClaimedAt: at(2 * time.Minute),
			},
		},
		{
			name: "after a clock set back, honest failure and claim replace ones from the future",
			now:  setBack,
			e:    ours,
			o:    release.Entry{FailedAt: setBack, Failures: 1, ClaimedAt: setBack},
			want: release.Entry{
				FetchedAt: at(0), ETag: `"e1"`, Release: old,
				FailedAt: setBack, Failures: 1, ClaimedAt: setBack,
			},
		},
		{
			name: "a time within MaxSkew ahead is believed",
			now:  at(-release.MaxSkew),
			e:    ours,
			o:    release.Entry{FetchedAt: at(-time.Hour), ETag: `"e2"`, Release: fresh},
			want: ours,
		},
		{
			name: "a part from the future stays while nothing replaces it",
			now:  setBack,
			e:    ours,
			o:    release.Entry{},
			want: ours,
		},
		{
			name: "of two parts from the future the later one wins",
			now:  setBack,
			e:    ours,
			o:    release.Entry{FetchedAt: at(-time.Second), ETag: `"e2"`, Release: fresh},
			want: ours,
		},
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
		name    string
		e       release.Entry
		failing bool
		fetched bool
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
	tests := []struct {
		o    release.Outcome
		want string
	}{
		{release.Failed, "failed"},
		{release.NotModified, "not_modified"},
		{release.Fetched, "fetched"},
		{release.RateLimited, "rate_limited"},
	}
	for _, tc := range tests {
		t.Run(tc.want, func(t *testing.T) {
			if got := tc.o.String(); got != tc.want {
				t.Errorf("Outcome(%d).String() = %q, want %q", int(tc.o), got, tc.want)
			}
		})
	}
}
