package main

import (
	"bytes"
	"net/http"
	"strings"
	"testing"

	"github.com/storytold/craft-releases/test/fakegithub"
	"github.com/storytold/craft-releases/test/testkit"
)

// TestStandaloneServesAppsDownloadsAndPage checks the binary's per-app
// answers, a download redirect and the release page, from what it fetched.
func TestStandaloneServesAppsDownloadsAndPage(t *testing.T) {
	t.Parallel()
	gh := fakegithub.New(t)
	gh.Publish("storytold/photocraft", fakegithub.NewRelease("storytold/photocraft", "v0.5.0"))
	env := standaloneEnv(gh)
	// One round in the test's lifetime, so that the answers hold still.
	env["CRAFT_APPS_RELEASE_POLL_INTERVAL_SECS"] = "60"
	p := start(t, env)
	testkit.Eventually(t, "every app was fetched", allFetched(t, p))

	_, full := testkit.Get(t, p.base+infoPath)
	answers := testkit.AppAnswers(t, full)
	if len(answers) != 2 {
		t.Fatalf("full answer has %d apps, want 2", len(answers))
	}
	for key, want := range answers {
		res, body := testkit.Get(t, p.base+infoPath+"/"+key)
		if res.StatusCode != http.StatusOK || !bytes.Equal(body, want) {
			t.Errorf("GET %s/%s: %d\n got %s\nwant %s", infoPath, key, res.StatusCode, body, want)
		}
	}

	res, _ := testkit.Get(t, p.base+"/v1/craft_apps/download/photocraft?os=windows&arch=x64&package=msi")
	if want := "https://github.com/storytold/photocraft/releases/download/v0.5.0/photocraft-0.5.0-windows-x64.msi"; res.StatusCode != http.StatusFound || res.Header.Get("Location") != want {
		t.Errorf("download: %d to %q, want 302 to %s", res.StatusCode, res.Header.Get("Location"), want)
	}
	res, _ = testkit.Get(t, p.base+"/v1/craft_apps/download/photocraft", "User-Agent", "Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/18.1 Safari/605.1.15")
	if want := "https://github.com/storytold/photocraft/releases/download/v0.5.0/photocraft-0.5.0-macos-universal.dmg"; res.StatusCode != http.StatusFound || res.Header.Get("Location") != want || res.Header.Get("Vary") != "User-Agent" {
		t.Errorf("inferred download: %d to %q (Vary %q), want 302 to %s", res.StatusCode, res.Header.Get("Location"), res.Header.Get("Vary"), want)
	}

	res, page := testkit.Get(t, p.base+"/")
	if res.StatusCode != http.StatusOK || !strings.HasPrefix(res.Header.Get("Content-Security-Policy"), "default-src 'none'") ||
		!bytes.Contains(page, []byte("PhotoCraft")) || !bytes.Contains(page, []byte("0.5.0")) || !bytes.Contains(page, []byte("VectorCraft")) {
		t.Errorf("page: %d, CSP %q, want 200, a strict CSP and both apps", res.StatusCode, res.Header.Get("Content-Security-Policy"))
	}
}
