package e2e

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/storytold/craft-releases/pkg/routes"
	"github.com/storytold/craft-releases/test/fakecloudflare"
	"github.com/storytold/craft-releases/test/fakegithub"
	"github.com/storytold/craft-releases/test/redistest"
	"github.com/storytold/craft-releases/test/testkit"
)

const (
	cfZone  = "023e105f4ecef8ad9ca31a8372d0c353"
	cfToken = "cf-purge-token-e2e"

	uaWindows = "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36"
	uaMac     = "Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/18.1 Safari/605.1.15"
)

// headers is the part of an answer's header the cache tests log.
func headers(a answer) string {
	var b strings.Builder
	b.WriteString(http.StatusText(a.status))
	for _, h := range []string{"Cache-Control", "Etag", "Vary", "Content-Encoding", "Location", "X-Cache-Status"} {
		if v := a.header.Get(h); v != "" {
			b.WriteString("; " + h + ": " + v)
		}
	}
	return b.String()
}

// TestBehindACache puts nginx proxy_cache, following only the origin's
// headers, in front of two pods fed by two pollers that purge through a
// fake Cloudflare whose purge refreshes the cache. It
// checks that a cold no-store answer is never stored; that an inferred
// download redirect never reaches another platform while an explicit one is
// cached; that gzip and identity clients never get each other's bytes;
// that polls that move only app_last_fetched purge nothing; that a release
// is purged once for the whole fleet, naming the URLs of what changed, and
// that the cache then serves it; and that with every pod down the cache
// keeps answering 200 past max-age and past stale-while-revalidate.
func TestBehindACache(t *testing.T) {
	t.Parallel()
	gh, rs, cf := fakegithub.New(t), redistest.Start(t), fakecloudflare.Start(t)
	want := publishFirst(gh)
	d := deployment{gh: gh, url: rs.URL(), apps: testAppsEnv, podEnv: map[string]string{"CRAFT_APPS_RELEASE_WEBHOOK_SECRET": webhookSecret}}
	pods := d.pods(t, 2)
	c := startNginx(t, pods)
	cf.OnPurge(func(files []string) { c.purge(t, files) })

	// A cold pod's answers are no-store: the cache never keeps them.
	for i := range 3 {
		a := c.get(t, infoPath)
		if a.status != http.StatusOK || a.header.Get("Cache-Control") != "no-store" || a.header.Get("X-Cache-Status") == "HIT" {
			t.Fatalf("cold answer %d through the cache: %s; want 200, no-store, never a HIT", i, headers(a))
		}
		if i == 0 {
			t.Logf("cold %s: %s", infoPath, headers(a))
		}
	}

	// Each app polled every 6 s (I − M), so that polls show, and the
	// release comes by its webhook, as in production.
	d.pollerEnv = map[string]string{"CRAFT_APPS_RELEASE_POLL_INTERVAL_SECS": "8", "CLOUDFLARE_API_TOKEN": cfToken,
		"CLOUDFLARE_ZONE_ID": cfZone, "CLOUDFLARE_API_URL": cf.URL(), "CRAFT_APPS_PUBLIC_URL": c.base}
	d.pollers(t, 2)
	waitTags(t, want, pods...)
	// The first fetch of each app changed what is served (from nothing):
	// purged once each app. Then nothing until a release.
	first := len(cf.Calls())
	testkit.Eventually(t, "the first purges end", func() bool {
		time.Sleep(2500 * time.Millisecond)
		n := len(cf.Calls())
		defer func() { first = n }()
		return n == first
	})
	t.Logf("purge calls for the first fetches of 3 apps by 2 pollers: %d", first)

	// Warm answers are cached, per representation; the bytes a client gets
	// are those its Accept-Encoding asked for, under their own ETag.
	explicit := "/v1/craft_apps/download/photocraft?os=windows&arch=x64&package=msi"
	for _, path := range []string{infoPath, infoPath + "/photocraft", "/", "/openapi.json", explicit} {
		for _, enc := range []string{"", "gzip", "", "gzip"} {
			a := c.get(t, path, "Accept-Encoding", enc)
			if path == explicit {
				if a.status != http.StatusFound {
					t.Fatalf("%s: %s, want 302", path, headers(a))
				}
			} else {
				body := a.body
				if got := a.header.Get("Content-Encoding"); (got == "gzip") != (enc == "gzip") {
					t.Fatalf("%s with Accept-Encoding %q: Content-Encoding %q", path, enc, got)
				}
				if sum := sha256.Sum256(body); a.header.Get("Etag") != `"`+hex.EncodeToString(sum[:16])+`"` { // snapshot's strong ETag
					t.Errorf("%s with Accept-Encoding %q: ETag %s is not that of the bytes served", path, enc, a.header.Get("Etag"))
				}
				if enc == "gzip" {
					body = gunzip(t, body)
				} else if bytes.HasPrefix(body, []byte{0x1f, 0x8b}) {
					t.Fatalf("%s without gzip got gzip bytes", path)
				}
				if path != "/" && !json.Valid(body) {
					t.Errorf("%s with Accept-Encoding %q: not JSON: %.80q", path, enc, body)
				}
			}
			if !strings.HasPrefix(a.header.Get("Cache-Control"), "public, max-age=") || !strings.Contains(a.header.Get("Cache-Control"), "stale-if-error=86400") {
				t.Errorf("%s: Cache-Control %q, want public with stale-if-error", path, a.header.Get("Cache-Control"))
			}
			t.Logf("warm %s (Accept-Encoding %q): %s", path, enc, headers(a))
		}
		if a := c.get(t, path); a.header.Get("X-Cache-Status") != "HIT" {
			t.Errorf("%s asked again: %s, want a HIT", path, headers(a))
		}
	}

	// An inferred redirect is private: each platform gets its own, however
	// often the other asked.
	for range 2 {
		for ua, asset := range map[string]string{uaWindows: "-windows-x64.msi", uaMac: "-macos-universal.dmg"} {
			a := c.get(t, "/v1/craft_apps/download/photocraft", "User-Agent", ua)
			if a.status != http.StatusFound || !strings.HasSuffix(a.header.Get("Location"), asset) || a.header.Get("X-Cache-Status") == "HIT" {
				t.Fatalf("inferred download for %.40s…: %s; want 302 to …%s, never a HIT", ua, headers(a), asset)
			}
		}
	}
	t.Logf("inferred download: %s", headers(c.get(t, "/v1/craft_apps/download/photocraft", "User-Agent", uaMac)))
	for range 2 {
		if a := c.get(t, "/v1/craft_apps/release_infos"); a.status != http.StatusNotFound ||
			a.header.Get("Cache-Control") != "no-store" || a.header.Get("X-Cache-Status") == "HIT" {
			t.Fatalf("unknown path: %s; want 404, no-store, never a HIT", headers(a))
		}
	}
	t.Logf("unknown path: %s", headers(c.get(t, "/v1/craft_apps/release_infos")))

	// Polls that only move app_last_fetched (GitHub's 304s) purge nothing.
	before := fetched(pods[0].served(t))
	testkit.Eventually(t, "every app polled again", func() bool {
		after := fetched(pods[0].served(t))
		for app, at := range before {
			if !after[app].After(at) {
				return false
			}
		}
		return true
	})
	time.Sleep(1500 * time.Millisecond) // a purge would have come by now
	if n := len(cf.Calls()); n != first {
		t.Fatalf("%d purge calls during polls that changed nothing but app_last_fetched, want none", n-first)
	}

	// A release: one purge for the whole fleet, naming what changed, after
	// the pods serve it; then the cache serves it.
	old := fakeRelease(t, photocraft, "v1.0.0")
	published := time.Now()
	gh.Publish(photocraft, fakegithub.NewRelease(photocraft, "v1.1.0"))
	deliver(t, pods[0], newDeliveryID(), releaseEvent("published", photocraft, "v1.1.0"), `"accepted"`)
	want["photocraft"] = "v1.1.0"
	served := waitTags(t, want, pods...)
	// Until the purge the cache keeps its copy, fresh for a minute: the
	// purge is what brings the release to the edge.
	if n := len(cf.Calls()); n == first {
		a := c.get(t, infoPath+"/photocraft")
		if len(cf.Calls()) == first && !strings.Contains(string(a.body), `"tag":"v1.0.0"`) {
			t.Errorf("before the purge the cache served %s: %.120s, want its copy of v1.0.0", headers(a), a.body)
		}
		t.Logf("pods serve the release, not purged yet: the cache answers %s", headers(a))
	}
	testkit.Eventually(t, "the release's purge", func() bool { return len(cf.Calls()) > first })
	time.Sleep(3 * time.Second) // another purge would have come by now
	calls := cf.Calls()[first:]
	if len(calls) != 1 {
		t.Fatalf("%d purge calls for one release, want 1: %+v", len(calls), calls)
	}
	purge := calls[0]
	var wantFiles []string
	for _, p := range routes.PurgePaths("photocraft", old, fakeRelease(t, photocraft, "v1.1.0")) {
		wantFiles = append(wantFiles, c.base+p)
	}
	if purge.Path != "/client/v4/zones/"+cfZone+"/purge_cache" || purge.Token != cfToken || !slices.Equal(purge.Files, wantFiles) {
		t.Errorf("purge: path %s, token %q, files %q; want /client/v4/zones/%s/purge_cache, the token, %q",
			purge.Path, purge.Token, purge.Files, cfZone, wantFiles)
	}
	t.Logf("release published and its webhook delivered → served by both pods: %v, %v; → purge call: %v (%d URLs); purge calls for the change with 2 pollers and 2 pods: %d",
		served[0].Round(time.Millisecond), served[1].Round(time.Millisecond), purge.At.Sub(published).Round(time.Millisecond), len(purge.Files), len(calls))
	if d := purge.At.Sub(published); d > 3*time.Second {
		t.Errorf("purge %v after the release, want under 3 s (the issue's goal, with the webhook)", d)
	}
	if d := purge.At.Sub(published.Add(served[1])); d < 500*time.Millisecond {
		t.Errorf("purge %v after both pods served the release, want the grace (about 1 s) for the pods first", d)
	}
	for _, enc := range []string{"", "gzip"} {
		a := c.get(t, infoPath, "Accept-Encoding", enc)
		body := a.body
		if enc == "gzip" {
			body = gunzip(t, body)
		}
		if got := tags(testkit.Decode(t, body))["photocraft"]; got != "v1.1.0" {
			t.Errorf("after the purge the cache serves photocraft %s (Accept-Encoding %q), want v1.1.0", got, enc)
		}
	}
	if a := c.get(t, infoPath+"/photocraft"); !strings.Contains(string(a.body), `"tag":"v1.1.0"`) {
		t.Errorf("after the purge the app's answer is %.120s, want v1.1.0", a.body)
	}
	if a := c.get(t, "/"); !strings.Contains(string(a.body), "1.1.0") {
		t.Errorf("after the purge the page does not show 1.1.0")
	}
	if a := c.get(t, explicit); !strings.Contains(a.header.Get("Location"), "/v1.1.0/") {
		t.Errorf("after the purge the explicit link redirects to %s, want v1.1.0's asset", a.header.Get("Location"))
	}

	// Every pod down: the cache keeps answering from its copies, past
	// max-age, as stale-if-error allows. The copies are expired in nginx's
	// own cache files rather than waited on: first into
	// stale-while-revalidate (15 s past max-age), then beyond it (two hours).
	kept := []string{infoPath, infoPath + "/photocraft", "/", explicit}
	for _, path := range kept {
		for _, enc := range []string{"", "gzip"} {
			c.get(t, path, "Accept-Encoding", enc) // every copy the loop asks for is there
		}
	}
	for _, p := range pods {
		p.stop(t)
	}
	for _, past := range []time.Duration{0, 15 * time.Second, 2 * time.Hour} {
		want := "HIT"
		if past > 0 {
			want = "STALE"
			t.Logf("copies expired %v ago; their max-ages (s): %v", past, c.expire(t, past))
		}
		for _, path := range kept {
			for _, enc := range []string{"", "gzip"} {
				a := c.get(t, path, "Accept-Encoding", enc)
				if a.status != http.StatusOK && (path != explicit || a.status != http.StatusFound) {
					t.Fatalf("pods down, copies expired %v ago, %s (Accept-Encoding %q): %s; want 200", past, path, enc, headers(a))
				}
				if got := a.header.Get("X-Cache-Status"); got != want {
					t.Errorf("pods down, copies expired %v ago, %s (Accept-Encoding %q): %s; want %s", past, path, enc, headers(a), want)
				}
			}
		}
	}
	t.Logf("pods down: the cache answered every kept path from its copies, fresh and then expired")
}
