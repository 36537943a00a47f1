package main

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/storytold/craft-releases/test/fakecloudflare"
	"github.com/storytold/craft-releases/test/fakegithub"
	"github.com/storytold/craft-releases/test/testkit"
)

// TestStandalonePurges: the one process purges each change of a release it
// serves, once, naming the public URLs of what changed, and nothing for the
// polls (every second here) that change only app_last_fetched.
func TestStandalonePurges(t *testing.T) {
	t.Parallel()
	const (
		repo  = "storytold/photocraft"
		token = "cf-standalone-token"
		zone  = "023e105f4ecef8ad9ca31a8372d0c353"
	)
	gh, cf := fakegithub.New(t), fakecloudflare.Start(t)
	gh.Publish(repo, fakegithub.NewRelease(repo, "v0.5.0"))
	env := standaloneEnv(gh)
	env["CLOUDFLARE_API_TOKEN"], env["CLOUDFLARE_ZONE_ID"] = token, zone
	env["CLOUDFLARE_API_URL"], env["CRAFT_APPS_PUBLIC_URL"] = cf.URL(), "https://api.example.com"
	p := start(t, env)
	testkit.Eventually(t, "every app was fetched", allFetched(t, p))
	// The first fetch of each app changed what is served.
	testkit.Eventually(t, "the first purges", func() bool { return len(cf.Calls()) > 0 })
	time.Sleep(3 * time.Second) // polls every second: none of them purges
	first := len(cf.Calls())
	time.Sleep(3 * time.Second)
	if n := len(cf.Calls()); n != first {
		t.Fatalf("%d purge calls for polls that changed nothing but app_last_fetched, want none", n-first)
	}

	gh.Publish(repo, fakegithub.NewRelease(repo, "v0.6.0"))
	testkit.Eventually(t, "the release's purge", func() bool { return len(cf.Calls()) > first })
	time.Sleep(2 * time.Second)
	calls := cf.Calls()[first:]
	if len(calls) != 1 {
		t.Fatalf("%d purge calls for one release, want 1", len(calls))
	}
	c := calls[0]
	if c.Path != "/client/v4/zones/"+zone+"/purge_cache" || c.Token != token {
		t.Errorf("purge: path %s, token %q", c.Path, c.Token)
	}
	for _, want := range []string{
		"https://api.example.com/v1/craft_apps/release_info",
		"https://api.example.com/v1/craft_apps/release_info/photocraft",
		"https://api.example.com/",
		"https://api.example.com/v1/craft_apps/download/photocraft?os=windows&arch=x64&package=msi",
	} {
		if !slices.Contains(c.Files, want) {
			t.Errorf("purged %q, want %s among them", c.Files, want)
		}
	}
	if strings.Contains(p.logs.String(), token) {
		t.Errorf("the logs show the token")
	}
}
