package velopack_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/storytold/craft-releases/pkg/updates/velopack"
	"github.com/storytold/craft-releases/test/testkit"
)

// check runs Velopack's update check, for ArtCraft 0.41.0 installed on
// the channel "linux", against each base URL.
func check(t testing.TB, urls ...string) []testkit.VelopackUpdate {
	t.Helper()
	return testkit.VelopackCheck(t, testkit.VelopackApp{ID: "ArtCraft", Version: "0.41.0", Channel: "linux"}, urls...)
}

// serve serves each body as releases.linux.json under /{i}/, and returns
// the base URLs and the requests it got.
func serve(t testing.TB, bodies ...[]byte) (urls []string, requests func() []string) {
	t.Helper()
	var (
		mu  sync.Mutex
		got []string
	)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		got = append(got, r.URL.String())
		mu.Unlock()
		var i int
		if _, err := fmt.Sscanf(r.URL.Path, "/%d/releases.linux.json", &i); err != nil || i < 0 || i >= len(bodies) {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(bodies[i])
	}))
	t.Cleanup(srv.Close)
	for i := range bodies {
		urls = append(urls, fmt.Sprintf("%s/%d/", srv.URL, i))
	}
	return urls, func() []string { mu.Lock(); defer mu.Unlock(); return got }
}

// TestClient: Velopack's own update check, pointed at the feed Absolute
// serves, offers the newest full package, at its GitHub download URL.
func TestClient(t *testing.T) {
	testkit.Integration(t)
	packages := []asset{{"ArtCraft-0.42.0-delta.nupkg", 1000, ""}, {"ArtCraft-0.41.5-full.nupkg", 1000, ""},
		{"ArtCraft-0.42.0-full.nupkg", 1000, ""}, {"ArtCraft-0.41.9-delta.nupkg", 1000, ""}}
	var entries []string
	for _, p := range packages {
		version, kind, _ := strings.Cut(strings.TrimSuffix(strings.TrimPrefix(p.name, "ArtCraft-"), ".nupkg"), "-")
		entries = append(entries, fmt.Sprintf(`{"PackageId":"ArtCraft","Version":%q,"Type":%q,"FileName":%q,"SHA1":%q,"Size":1000}`,
			version, map[string]string{"full": "Full", "delta": "Delta"}[kind], p.name, fullSHA1))
	}
	body := []byte(`{"Assets":[` + strings.Join(entries, ",") + `]}`)
	f, err := velopack.Parse(body)
	must(t, err)
	served, err := velopack.Absolute(body, f, newRelease(packages))
	must(t, err)

	urls, requests := serve(t, served)
	got := check(t, urls...)[0]
	if got.Error != "" || got.Target == nil {
		t.Fatalf("update check = %+v, want an update", got)
	}
	want := url("ArtCraft-0.42.0-full.nupkg")
	if got.Target.Version != "0.42.0" || got.Target.Type != "Full" || got.Target.FileName != want {
		t.Errorf("update check offers %+v, want 0.42.0 Full at %s", *got.Target, want)
	}
	if r := requests(); len(r) != 1 || !strings.HasPrefix(r[0], "/0/releases.linux.json?") {
		t.Errorf("requests = %q, want one of /0/releases.linux.json", r)
	}
}

// TestClientReads: the Rust client reads every feed Parse reads, the
// fixtures and kept; of those Parse refuses, it errs on exactly those that
// refused says it refuses.
func TestClientReads(t *testing.T) {
	testkit.Integration(t)
	var (
		names  []string
		bodies [][]byte
		errs   []bool
	)
	for _, fx := range fixtures {
		names, bodies, errs = append(names, fx.file), append(bodies, readFile(t, fx.file)), append(errs, false)
	}
	for _, tc := range kept {
		names, bodies, errs = append(names, tc.name), append(bodies, []byte(tc.body)), append(errs, false)
	}
	for _, tc := range refused {
		names, bodies, errs = append(names, tc.name), append(bodies, []byte(tc.body)), append(errs, tc.rust)
	}
	urls, _ := serve(t, bodies...)
	for i, got := range check(t, urls...) {
		if (got.Error != "") != errs[i] {
			t.Errorf("%s: the client's check = %+v; want an error: %v", names[i], got, errs[i])
		}
	}
}
