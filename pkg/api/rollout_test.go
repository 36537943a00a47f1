package api

import (
	"cmp"
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/storytold/craft-releases/pkg/daemon"
	"github.com/storytold/craft-releases/pkg/release"
	"github.com/storytold/craft-releases/pkg/snapshot"
	"github.com/storytold/craft-releases/pkg/updates/companion"
	"github.com/storytold/craft-releases/test/fakeclock"
	"github.com/storytold/craft-releases/test/openapitest"
	"github.com/storytold/craft-releases/test/testkit"
)

// photoRelease returns photocraft's release of version, published hours
// after t0, with a signed NSIS installer and openapitest's updater files,
// and the companions of both.
func photoRelease(version string, hours int) (*release.Release, *release.Companions) {
	const repo = "storytold/photocraft"
	r, sigs := signedRelease(repo, "v"+version, hours, "PhotoCraft_"+version+"_x64-setup.exe")
	r.HTMLURL = release.TagURL(repo, r.Tag)
	companions, files := sigs.Map(), map[string]string{}
	for name, body := range openapitest.UpdaterFiles {
		name, body = strings.ReplaceAll(name, "1.0.0", version), strings.ReplaceAll(body, "1.0.0", version)
		r.Assets = append(r.Assets, release.Asset{Name: name, SizeBytes: int64(len(body)), DownloadURL: release.DownloadURL(repo, r.Tag, name)})
		files[name] = body
	}
	for _, name := range companion.Files(r) {
		companions[name] = files[name]
	}
	return r, release.NewCompanions(companions)
}

// rolloutServer serves photocraft with a latest release 2.0.0 and, in its
// history, 1.0.0, each a photoRelease, under decisions d.
func rolloutServer(t *testing.T, d release.Decisions, obs FeedObserver) *Server {
	t.Helper()
	app := release.App{Key: "photocraft", Name: "PhotoCraft", Repo: "storytold/photocraft"}
	v1, c1 := photoRelease("1.0.0", 1)
	v2, c2 := photoRelease("2.0.0", 2)
	s := snapshot.New([]release.App{app}, fakeclock.New(t0.Add(24*time.Hour)))
	s.SetAll(map[string]release.Entry{
		app.Key: {FetchedAt: t0, Release: v2, Companions: c2},
		app.HistoryEntry().Key: {FetchedAt: t0, History: release.NewHistory([]*release.Release{v2, v1}).
			WithCompanions(map[string]*release.Companions{v1.Tag: c1})},
	}, t0)
	s.SetMeta(release.Bulletin{Decisions: map[string]release.Decisions{app.Key: d}})
	return New(s, new(daemon.Gate), zap.NewNop(), Options{Feeds: obs})
}

const rolloutNSIS = "/v1/craft_apps/updates/photocraft/tauri/windows/x86_64/nsis"

// installIDs returns an install id in photocraft's v2.0.0 rollout at
// percent and one outside it.
func installIDs(percent int) (in, out string) {
	for i := 0; in == "" || out == ""; i++ {
		switch id := fmt.Sprint("install-", i); {
		case release.Bucket("photocraft", "v2.0.0", id) < percent:
			in = cmp.Or(in, id)
		default:
			out = cmp.Or(out, id)
		}
	}
	return in, out
}

// offeredVersion returns the version a Tauri answer offers, "204" for none,
// or its status and body.
func offeredVersion(t *testing.T, srv *Server, target string, header http.Header) (string, *http.Response) {
	t.Helper()
	rec := serve(t, srv, http.MethodGet, target, header)
	switch rec.Code {
	case http.StatusNoContent:
		return "204", rec.Result()
	case http.StatusOK:
		var u struct {
			Version  string `json:"version"`
			Critical bool   `json:"critical"`
		}
		if err := json.Unmarshal(rec.Body.Bytes(), &u); err != nil {
			t.Fatalf("%s: %v", rec.Body, err)
		}
		if u.Critical {
			return u.Version + " critical", rec.Result()
		}
		return u.Version, rec.Result()
	}
	return fmt.Sprintf("%d %s", rec.Code, strings.TrimSpace(rec.Body.String())), rec.Result()
}

// TestRolloutFeed: with a rollout under way, an install id in the bucket
// gets the staged release, any other id and a request without one the
// release before it; the id comes from the header, install_id or stagingId;
// an answer that depended on an id is private; a bad id is a 400; a
// version below the minimum gets the newest release, critical.
func TestRolloutFeed(t *testing.T) {
	t.Parallel()
	in, out := installIDs(30)
	obs := &feedCounts{}
	srv := rolloutServer(t, release.Decisions{Rollout: &release.Rollout{Tag: "v2.0.0", Percent: 30},
		Minimum: &release.Minimum{Version: "1.0.0", Reason: "a data loss bug"}}, obs)
	header := func(id string) http.Header { return http.Header{"X-Install-Id": {id}} }
	const private, badID = "private, max-age=60", `400 {"success":false,"error":"bad install id: want 1 to 128 visible ASCII characters"}`
	doc := openapitest.Load(t, openAPIDoc)
	for _, tt := range []struct {
		name, target string
		header       http.Header
		want, cache  string
	}{
		{"no id", rolloutNSIS, nil, "1.0.0", snapshot.CacheControlFetched},
		{"an id in the rollout, by header", rolloutNSIS, header(in), "2.0.0", private},
		{"an id outside it, by header", rolloutNSIS, header(out), "1.0.0", private},
		{"install_id", rolloutNSIS + "?install_id=" + in, nil, "2.0.0", private},
		{"stagingId", rolloutNSIS + "?stagingId=" + in, nil, "2.0.0", private},
		{"the header wins", rolloutNSIS + "?install_id=" + in, header(out), "1.0.0", private},
		{"an empty header does not", rolloutNSIS + "?install_id=" + in, header(""), "2.0.0", private},
		{"up to date outside", rolloutNSIS + "?current_version=1.0.0&install_id=" + out, nil, "204", private},
		{"below the minimum outside", rolloutNSIS + "?current_version=0.9.0&install_id=" + out, nil, "2.0.0 critical", private},
		{"below the minimum without an id", rolloutNSIS + "?current_version=0.9.0", nil, "2.0.0 critical", snapshot.CacheControlFetched},
		{"a bad id", rolloutNSIS, header("a b"), badID, "no-store"},
		{"a long id", rolloutNSIS + "?install_id=" + strings.Repeat("a", 129), nil, badID, "no-store"},
		{"the longest id", rolloutNSIS + "?install_id=" + strings.Repeat("a", 128), nil, "", private},
	} {
		got, resp := offeredVersion(t, srv, tt.target, tt.header)
		if !strings.Contains(tt.target, strings.Repeat("a", 129)) { // a request the document's schema refuses
			req := httptest.NewRequest(http.MethodGet, tt.target, nil)
			maps.Copy(req.Header, tt.header)
			doc.Check(t, req, resp)
		}
		if tt.want != "" && got != tt.want {
			t.Errorf("%s: got %s, want %s", tt.name, got, tt.want)
		}
		if cc := resp.Header.Get("Cache-Control"); cc != tt.cache {
			t.Errorf("%s: Cache-Control %q, want %q", tt.name, cc, tt.cache)
		}
		if v := resp.Header.Get("Vary"); !strings.Contains(v, "X-Install-Id") {
			t.Errorf("%s: Vary %q does not name X-Install-Id", tt.name, v)
		}
	}
	obs.want(t, "photocraft tauri staged OK", "photocraft tauri previous OK", "photocraft tauri below_minimum OK", "photocraft tauri none Bad Request")
}

// TestRolloutShares: over 10,000 installs, the share that the Tauri feed
// offers the staged release is the rollout's within one point at 0, 10,
// 50 and 100 %, and no install that got it loses it as the share grows.
func TestRolloutShares(t *testing.T) {
	t.Parallel()
	const installs = 10_000
	staged := make([]bool, installs)
	for _, percent := range []int{0, 10, 50, 100} {
		srv := rolloutServer(t, release.Decisions{Rollout: &release.Rollout{Tag: "v2.0.0", Percent: percent}}, nil)
		n := 0
		for i := range installs {
			got, _ := offeredVersion(t, srv, rolloutNSIS+"?install_id="+fmt.Sprint("install-", i), nil)
			now := got == "2.0.0"
			if staged[i] && !now {
				t.Fatalf("install-%d lost the staged release at %d %%", i, percent)
			}
			if staged[i] = now; now {
				n++
			}
		}
		if share := 100 * float64(n) / installs; math.Abs(share-float64(percent)) > 1 {
			t.Errorf("at %d %%: %.1f %% of installs were offered the staged release", percent, share)
		}
	}
}

// TestWithdrawnEverywhere: a withdrawn latest release is in no answer:
// release_info, the download links and the feed offer the release before;
// a bad install id is refused without a rollout too.
func TestWithdrawnEverywhere(t *testing.T) {
	t.Parallel()
	obs := &feedCounts{}
	srv := rolloutServer(t, release.Decisions{Withdrawn: []release.Withdrawal{{Tag: "v2.0.0", Reason: "crashes"}}}, obs)
	if got, _ := offeredVersion(t, srv, rolloutNSIS, nil); got != "1.0.0" {
		t.Errorf("feed: %s, want 1.0.0", got)
	}
	if got, _ := offeredVersion(t, srv, rolloutNSIS+"?install_id=a%20b", nil); !strings.HasPrefix(got, "400 ") {
		t.Errorf("a bad id without a rollout: %s, want a 400", got)
	}
	if body := serve(t, srv, http.MethodGet, "/v1/craft_apps/release_info", nil).Body.String(); strings.Contains(body, "2.0.0") ||
		!strings.Contains(body, `"latest_release":{"tag":"v1.0.0"`) {
		t.Errorf("release_info: %s", body)
	}
	rec := serve(t, srv, http.MethodGet, "/v1/craft_apps/download/photocraft?os=windows&arch=x64&package=msi", nil)
	if loc := rec.Header().Get("Location"); strings.Contains(loc, "2.0.0") {
		t.Errorf("download link to %s", loc)
	}
	obs.want(t, "photocraft tauri withdrawn_skipped OK")
}

// TestRolloutUpdaters: the updaters that stage themselves get the staged
// release's RELEASES and channel file with the share written in them, one
// cacheable answer for every install; Squirrel.Mac and Velopack are staged
// by the install id (Velopack's stagingId) as Tauri is, and an app below
// the minimum version gets the staged release whatever its bucket.
func TestRolloutUpdaters(t *testing.T) {
	t.Parallel()
	srv := rolloutServer(t, release.Decisions{Rollout: &release.Rollout{Tag: "v2.0.0", Percent: 25},
		Minimum: &release.Minimum{Version: "0.9.0", Reason: "r"}}, nil)
	in, out := installIDs(25)
	const (
		updates, private = "/v1/craft_apps/updates/photocraft/", "private, max-age=60"
		mac, velopack    = updates + "squirrel-mac/x64/", updates + "velopack/releases.linux.json"
	)
	nupkg := release.DownloadURL("storytold/photocraft", "v2.0.0", "photocraft-2.0.0-full.nupkg")
	for _, tt := range []struct{ name, target, want, cache string }{
		{"RELEASES, no id", updates + "squirrel-win/RELEASES", nupkg + " 5 # 25%", snapshot.CacheControlFetched},
		{"RELEASES below the minimum", updates + "squirrel-win/RELEASES?id=photocraft&localVersion=0.8.0", nupkg + " 5\n", snapshot.CacheControlFetched},
		{"latest.yml, no id", updates + "electron/latest.yml", "stagingPercentage: 25\nversion: 2.0.0", snapshot.CacheControlFetched},
		{"latest.yml, any id", updates + "electron/latest.yml?install_id=a%20b", "stagingPercentage: 25\nversion: 2.0.0", snapshot.CacheControlFetched},
		{"Squirrel.Mac in the rollout", mac + "1.0.0?install_id=" + in, "photocraft-2.0.0-mac.zip", private},
		{"Squirrel.Mac outside it", mac + "0.9.5?install_id=" + out, "photocraft-1.0.0-mac.zip", private},
		{"Squirrel.Mac below the minimum", mac + "0.8.0?install_id=" + out, "photocraft-2.0.0-mac.zip", private},
		{"Velopack without an id", velopack, "PhotoCraft-1.0.0-linux-full.nupkg", snapshot.CacheControlFetched},
		{"Velopack's stagingId in the rollout", velopack + "?stagingId=" + in, "PhotoCraft-2.0.0-linux-full.nupkg", private},
		{"Velopack's stagingId outside it", velopack + "?localVersion=0.9.5&stagingId=" + out, "PhotoCraft-1.0.0-linux-full.nupkg", private},
		{"Velopack below the minimum", velopack + "?localVersion=0.8.0&stagingId=" + out, "PhotoCraft-2.0.0-linux-full.nupkg", private},
	} {
		rec := serve(t, srv, http.MethodGet, tt.target, nil)
		if rec.Code != http.StatusOK || !strings.Contains(rec.Body.String(), tt.want) {
			t.Errorf("%s: %d %s, want 200 with %s", tt.name, rec.Code, rec.Body, tt.want)
		}
		if cc := rec.Header().Get("Cache-Control"); cc != tt.cache {
			t.Errorf("%s: Cache-Control %q, want %q", tt.name, cc, tt.cache)
		}
	}
}

// TestRolloutAllocs: a feed request bucketed by its install id, by header
// or query, allocates no more than one without an id.
func TestRolloutAllocs(t *testing.T) {
	if testkit.RaceEnabled {
		t.Skip("the race detector changes allocation counts: task test-allocs runs this without it")
	}
	srv := rolloutServer(t, release.Decisions{Rollout: &release.Rollout{Tag: "v2.0.0", Percent: 30}}, nil)
	const id = "0f8fad5b-d9cb-469f-a165-70867728950e"
	without := testing.AllocsPerRun(100, serving(srv, http.MethodGet, rolloutNSIS, http.Header{}))
	for name, got := range map[string]float64{
		"header": testing.AllocsPerRun(100, serving(srv, http.MethodGet, rolloutNSIS, http.Header{"X-Install-Id": {id}})),
		"query":  testing.AllocsPerRun(100, serving(srv, http.MethodGet, rolloutNSIS+"?install_id="+id, http.Header{})),
	} {
		if got > without {
			t.Errorf("%s: %v allocations per request, want at most %v, as without an id", name, got, without)
		}
	}
}
