package release_test

import (
	"reflect"
	"testing"
	"time"

	"github.com/storytold/craft-releases/pkg/release"
)

// TestMergeSignatures checks that signatures go with the fetch they belong
// to, and that two copies of one fetch keep the signatures of both, in any
// order.
func TestMergeSignatures(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	now := t0.Add(time.Hour)
	v1, v2 := &release.Release{Tag: "v1"}, &release.Release{Tag: "v2"}
	sigs := func(names ...string) *release.Companions {
		m := map[string]string{}
		for _, n := range names {
			m[n] = "text of " + n
		}
		return release.NewCompanions(m)
	}
	fetch := func(at time.Time, etag string, rel *release.Release, s *release.Companions) release.Entry {
		return release.Entry{FetchedAt: at, ETag: etag, Release: rel, Companions: s}
	}
	for _, tc := range []struct {
		name string
		e, o release.Entry
		want []string // the names of the merged signatures
		same bool     // the same fetch: merged in either order alike
	}{
		{"newer fetch of another release replaces them", fetch(t0, `"a"`, v1, sigs("a.sig", "b.sig")), fetch(t0.Add(time.Minute), `"b"`, v2, nil), nil, false},
		{"newer fetch brings its own", fetch(t0, `"a"`, v1, sigs("a.sig")), fetch(t0.Add(time.Minute), `"b"`, v2, sigs("c.sig")), []string{"c.sig"}, false},
		{"older fetch changes nothing", fetch(t0, `"b"`, v2, sigs("c.sig")), fetch(t0.Add(-time.Minute), `"a"`, v1, sigs("a.sig")), []string{"c.sig"}, false},
		{"same fetch: union", fetch(t0, `"a"`, v1, sigs("a.sig")), fetch(t0, `"a"`, v1, sigs("b.sig")), []string{"a.sig", "b.sig"}, true},
		{"same fetch read back from redis, in milliseconds: union", fetch(t0.Add(123456), `"a"`, v1, sigs("a.sig")), fetch(t0, `"a"`, v1, sigs("b.sig")), []string{"a.sig", "b.sig"}, true},
		{"same time, another etag: no union", fetch(t0, `"a"`, v1, sigs("a.sig")), fetch(t0, `"x"`, v1, sigs("b.sig")), []string{"a.sig"}, false},
		{"same time, another tag: no union", fetch(t0, `"a"`, v1, sigs("a.sig")), fetch(t0, `"a"`, v2, sigs("b.sig")), []string{"a.sig"}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := tc.e.Merge(tc.o, now)
			if names := got.Companions.Names(); !reflect.DeepEqual(names, tc.want) {
				t.Errorf("signatures: got %q, want %q", names, tc.want)
			}
			if rev := tc.o.Merge(tc.e, now); tc.same && !reflect.DeepEqual(rev.Companions.Map(), got.Companions.Map()) {
				t.Errorf("in the other order: got %v, want %v", rev.Companions.Map(), got.Companions.Map())
			}
			if again := got.Merge(tc.o, now); again != got {
				t.Errorf("merged again: got %+v, want %+v (the same pointer: nothing changed)", again, got)
			}
		})
	}
}

// TestCompanionsUnionEqual: in a union, a name both hold with different
// texts keeps the smaller one, whichever side holds it; Equal wants the
// same names with the same texts.
func TestCompanionsUnionEqual(t *testing.T) {
	x := release.NewCompanions(map[string]string{"x.sig": "AAA"})
	y := release.NewCompanions(map[string]string{"x.sig": "BBB", "y.sig": "C"})
	for _, got := range []*release.Companions{x.Union(y), y.Union(x)} {
		if want := map[string]string{"x.sig": "AAA", "y.sig": "C"}; !reflect.DeepEqual(got.Map(), want) {
			t.Errorf("union: got %v, want %v", got.Map(), want)
		}
	}
	if got := x.Union(nil); got != x {
		t.Errorf("x.Union(nil) = %p, want x itself (%p)", got, x)
	}
	a := release.NewCompanions(map[string]string{"x.sig": "1", "y.sig": "2"})
	for _, tc := range []struct {
		name string
		o    *release.Companions
		want bool
	}{
		{"the same texts", release.NewCompanions(map[string]string{"y.sig": "2", "x.sig": "1"}), true},
		{"one fewer", release.NewCompanions(map[string]string{"x.sig": "1"}), false},
		{"one more", release.NewCompanions(map[string]string{"x.sig": "1", "y.sig": "2", "z.sig": "3"}), false},
		{"another text", release.NewCompanions(map[string]string{"x.sig": "1", "y.sig": "3"}), false},
		{"none", nil, false},
	} {
		if got := a.Equal(tc.o); got != tc.want {
			t.Errorf("%s: Equal = %v, want %v", tc.name, got, tc.want)
		}
	}
	var none *release.Companions
	if !none.Equal(nil) || !none.Equal(release.NewCompanions(nil)) {
		t.Error("nil companions are not equal to none")
	}
}
