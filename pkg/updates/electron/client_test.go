package electron_test

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/storytold/craft-releases/pkg/updates/electron"
	"github.com/storytold/craft-releases/test/testkit"
)

// harnessDir holds the pinned electron-updater and resolve.js, which reads
// channel files with its code.
var harnessDir = filepath.Join("..", "..", "..", "tools", "electron-updater")

// feed is the base URL an app's electron-updater is configured with.
const feed = "https://updates.test/v1/craft_apps/updates/craft/electron"

// answer is what resolve.js says of one channel file.
type answer struct {
	OK      bool
	Error   string
	Version string
	Files   []struct{ URL, SHA512 string }
	Package *struct{ Path, SHA512 string }
}

// harness installs the pinned electron-updater where it is missing or
// another version (npm ci, as task lint-openapi installs Redocly). Without
// Node.js and npm the test fails rather than skips, so that CI always runs
// it.
func harness(t *testing.T) {
	t.Helper()
	for _, tool := range []string{"node", "npm"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Fatalf("%s is not installed (Node.js 20 or later with npm): %v", tool, err)
		}
	}
	var lock struct {
		Packages map[string]struct{ Version string }
	}
	readJSON(t, filepath.Join(harnessDir, "package-lock.json"), &lock)
	pinned := lock.Packages["node_modules/electron-updater"].Version
	var installed struct{ Version string }
	if b, err := os.ReadFile(filepath.Join(harnessDir, "node_modules", "electron-updater", "package.json")); err == nil {
		_ = json.Unmarshal(b, &installed)
	}
	if pinned == "" || installed.Version == pinned {
		return
	}
	cmd := exec.Command("npm", "ci", "--no-audit", "--no-fund", "--loglevel=error")
	cmd.Dir = harnessDir
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("npm ci in %s: %v\n%s", harnessDir, err, out)
	}
}

func readJSON(t *testing.T, path string, v any) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
}

// resolve reads files as electron-updater configured with base reads them.
func resolve(t *testing.T, base string, files []string) []answer {
	t.Helper()
	encoded := make([][]byte, len(files)) // as base64: a JSON string holds only UTF-8
	for i, f := range files {
		encoded[i] = []byte(f)
	}
	in, err := json.Marshal(map[string]any{"base": base, "files": encoded})
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("node", "resolve.js")
	cmd.Dir = harnessDir
	cmd.Stdin = bytes.NewReader(in)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("node resolve.js: %v\n%s", err, stderr.Bytes())
	}
	var answers []answer
	if err := json.Unmarshal(out, &answers); err != nil || len(answers) != len(files) {
		t.Fatalf("node resolve.js: %d answers for %d files, %v\n%s", len(answers), len(files), err, out)
	}
	return answers
}

// TestClient runs what the feed serves through electron-updater's own
// code: every download resolves to its asset's GitHub download URL with
// the publisher's sha512, wherever the feed is; and the real client
// refuses exactly the refused files that the table says it refuses.
func TestClient(t *testing.T) {
	testkit.Integration(t)
	harness(t)

	var served []string
	for _, tc := range valid {
		body, err := electron.Absolute([]byte(fill(tc.body)), craft())
		if err != nil {
			t.Fatalf("%s: Absolute: %v", tc.name, err)
		}
		served = append(served, string(body))
	}
	// A query on the feed URL is copied onto every download (newUrlFromBase).
	for _, base := range []string{feed, feed + "/?channel=prerelease"} {
		query := ""
		if _, q, ok := strings.Cut(base, "?"); ok {
			query = "?" + q
		}
		for i, got := range resolve(t, base, served) {
			tc := valid[i]
			if !got.OK {
				t.Errorf("%s from %s: the updater refused it: %s", tc.name, base, got.Error)
				continue
			}
			want := absolute(tc.want)
			if got.Version != want.Version {
				t.Errorf("%s: version %q, want %q", tc.name, got.Version, want.Version)
			}
			downloads := want.Files
			if len(downloads) == 0 {
				downloads = []electron.Download{{URL: want.Path, SHA512: want.SHA512}}
			}
			if !slices.EqualFunc(got.Files, downloads, func(g struct{ URL, SHA512 string }, d electron.Download) bool {
				return g.URL == d.URL+query && g.SHA512 == d.SHA512
			}) {
				t.Errorf("%s from %s: files %+v, want %+v with %q", tc.name, base, got.Files, downloads, query)
			}
			if i := slices.IndexFunc(want.Packages, func(p electron.Package) bool { return p.Arch == "x64" }); i >= 0 {
				if p := want.Packages[i]; got.Package == nil || got.Package.Path != p.Path+query || got.Package.SHA512 != p.SHA512 {
					t.Errorf("%s from %s: package %+v, want %+v", tc.name, base, got.Package, p)
				}
			}
		}
	}

	// Served as published, the relative names would resolve against the
	// feed: the updater would download the installer from the service.
	if got := resolve(t, feed, []string{fill(valid[0].body)})[0]; !got.OK || got.Files[0].URL != feed+"/Craft-Setup-1.4.0.exe" {
		t.Errorf("the file as published: got %+v, want its download at the feed", got)
	}

	var bodies []string
	for _, tc := range refused {
		bodies = append(bodies, fill(tc.body))
	}
	for i, got := range resolve(t, feed, bodies) {
		if tc := refused[i]; got.OK != tc.client {
			t.Errorf("refused %q: the updater accepts it: %v (%s), want %v", tc.name, got.OK, got.Error, tc.client)
		}
	}
}
