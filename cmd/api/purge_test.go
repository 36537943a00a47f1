package main

import (
	"slices"
	"strings"
	"testing"

	"github.com/storytold/craft-releases/test/fakecloudflare"
	"github.com/storytold/craft-releases/test/fakegithub"
	"github.com/storytold/craft-releases/test/testkit"
)

// TestStandalonePurges: the one process purges a change of a release it
// serves, naming the public URLs of what changed. Which polls make a change
// is pkg/poller's TestChanges; the URLs of a change, pkg/routes's.
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
	const photoURL = "https://api.example.com/v1/craft_apps/release_info/photocraft"
	testkit.Eventually(t, "photocraft's first release purged", func() bool {
		return slices.ContainsFunc(cf.Calls(), func(c fakecloudflare.Call) bool { return slices.Contains(c.Files, photoURL) })
	})
	for _, c := range cf.Calls() {
		if c.Path != "/client/v4/zones/"+zone+"/purge_cache" || c.Token != token {
			t.Errorf("purge: path %s, token %q", c.Path, c.Token)
		}
		if !slices.Contains(c.Files, photoURL) {
			continue
		}
		for _, want := range []string{
			"https://api.example.com/v1/craft_apps/release_info",
			"https://api.example.com/",
			"https://api.example.com/v1/craft_apps/download/photocraft?os=windows&arch=x64&package=msi",
		} {
			if !slices.Contains(c.Files, want) {
				t.Errorf("purged %q, want %s among them", c.Files, want)
			}
		}
	}
	if strings.Contains(p.Logs.String(), token) {
		t.Errorf("the logs show the token")
	}
}
