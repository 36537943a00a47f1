package electron_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/storytold/craft-releases/pkg/updates/electron"
	"github.com/storytold/craft-releases/test/testkit"
)

// feed is the base URL an app's electron-updater is configured with.
const feed = "https://updates.test/v1/craft_apps/updates/craft/electron"

// TestClient runs what the feed serves through electron-updater's own
// code: every download resolves to its asset's GitHub download URL with
// the publisher's sha512, wherever the feed is; and the real client
// refuses exactly the refused files that the table says it refuses.
func TestClient(t *testing.T) {
	testkit.Integration(t)

	var served []string
	for _, tc := range valid {
		body, err := electron.Absolute([]byte(fill(tc.body)), craft())
		must(t, err)
		served = append(served, string(body))
	}
	// A query on the feed URL is copied onto every download (newUrlFromBase).
	for _, base := range []string{feed, feed + "/?channel=prerelease"} {
		query := ""
		if _, q, ok := strings.Cut(base, "?"); ok {
			query = "?" + q
		}
		for i, got := range testkit.ElectronResolve(t, base, served) {
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
	if got := testkit.ElectronResolve(t, feed, []string{fill(valid[0].body)})[0]; !got.OK || got.Files[0].URL != feed+"/Craft-Setup-1.4.0.exe" {
		t.Errorf("the file as published: got %+v, want its download at the feed", got)
	}

	var bodies []string
	for _, tc := range refused {
		bodies = append(bodies, fill(tc.body))
	}
	for i, got := range testkit.ElectronResolve(t, feed, bodies) {
		if tc := refused[i]; got.OK != tc.client {
			t.Errorf("refused %q: the updater accepts it: %v (%s), want %v", tc.name, got.OK, got.Error, tc.client)
		}
	}
}
