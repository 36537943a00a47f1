package velopack_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/storytold/craft-releases/pkg/updates/velopack"
	"github.com/storytold/craft-releases/test/testkit"
)

// clientDir is where the Velopack library the tests run is pinned.
const clientDir = "../../../tools/velopack"

// nodeModules returns the node_modules directory of clientDir, installing
// the pinned library first where it is missing or another version, as
// task lint-openapi installs Redocly. It needs Node.js and npm.
func nodeModules(t testing.TB) string {
	t.Helper()
	if _, err := exec.LookPath("npm"); err != nil {
		t.Fatal("the Velopack client tests need Node.js and npm")
	}
	var lock struct {
		Packages map[string]struct{ Version string } `json:"packages"`
	}
	if err := json.Unmarshal(readFile(t, filepath.Join(clientDir, "package-lock.json")), &lock); err != nil {
		t.Fatal(err)
	}
	var installed struct{ Version string }
	if b, err := os.ReadFile(filepath.Join(clientDir, "node_modules", "velopack", "package.json")); err == nil {
		_ = json.Unmarshal(b, &installed) // a broken install reads as none
	}
	if pinned := lock.Packages["node_modules/velopack"].Version; installed.Version != pinned {
		cmd := exec.CommandContext(t.Context(), "npm", "ci", "--no-audit", "--no-fund", "--loglevel=error")
		cmd.Dir = clientDir
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("npm ci in %s: %v\n%s", clientDir, err, out)
		}
	}
	dir, err := filepath.Abs(filepath.Join(clientDir, "node_modules"))
	if err != nil {
		t.Fatal(err)
	}
	return dir
}

// result is what the client's update check gave for one feed.
type result struct {
	Target *struct{ Version, Type, FileName string } `json:"target"`
	Error  string                                    `json:"error"`
}

// check runs Velopack's update check, for ArtCraft 0.41.0 installed on
// the channel "linux", against each base URL, in one Node.js process.
func check(t testing.TB, urls ...string) []result {
	t.Helper()
	modules := nodeModules(t)
	dir := t.TempDir()
	for _, d := range []string{"current", "packages"} {
		if err := os.Mkdir(filepath.Join(dir, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	manifest := `<?xml version="1.0" encoding="utf-8"?>
<package xmlns="http://schemas.microsoft.com/packaging/2010/07/nuspec.xsd">
  <metadata><id>ArtCraft</id><title>ArtCraft</title><description>ArtCraft</description><authors>Storytold</authors>
    <version>0.41.0</version><channel>linux</channel><mainExe>ArtCraft</mainExe></metadata>
</package>
`
	for name, text := range map[string]string{"current/sq.version": manifest, "Update": ""} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	cmd := exec.CommandContext(t.Context(), "node", append([]string{"testdata/client.js", dir}, urls...)...)
	cmd.Env = append(os.Environ(), "NODE_PATH="+modules)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("node testdata/client.js: %v\n%s", err, out)
	}
	for line := range strings.Lines(string(out)) {
		if text, ok := strings.CutPrefix(line, "RESULTS "); ok {
			var results []result
			if err := json.Unmarshal([]byte(text), &results); err != nil || len(results) != len(urls) {
				t.Fatalf("client's results %s: %v, want %d", text, err, len(urls))
			}
			return results
		}
	}
	t.Fatalf("node testdata/client.js printed no results:\n%s", out)
	return nil
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
	var packages []asset
	for _, name := range []string{"ArtCraft-0.42.0-delta.nupkg", "ArtCraft-0.41.5-full.nupkg", "ArtCraft-0.42.0-full.nupkg", "ArtCraft-0.41.9-delta.nupkg"} {
		packages = append(packages, asset{name, 1000, ""})
	}
	var entries []string
	for _, p := range packages {
		version, kind, _ := strings.Cut(strings.TrimSuffix(strings.TrimPrefix(p.name, "ArtCraft-"), ".nupkg"), "-")
		entries = append(entries, fmt.Sprintf(`{"PackageId":"ArtCraft","Version":%q,"Type":%q,"FileName":%q,"SHA1":%q,"Size":1000}`,
			version, map[string]string{"full": "Full", "delta": "Delta"}[kind], p.name, fullSHA1))
	}
	body := []byte(`{"Assets":[` + strings.Join(entries, ",") + `]}`)
	f, err := velopack.Parse(body)
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	served, err := velopack.Absolute(body, f, newRelease(packages))
	if err != nil {
		t.Fatalf("Absolute: %v", err)
	}

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
