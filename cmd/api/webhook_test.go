package main

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/storytold/craft-releases/pkg/routes"
	"github.com/storytold/craft-releases/pkg/webhook"
	"github.com/storytold/craft-releases/test/fakegithub"
	"github.com/storytold/craft-releases/test/testkit"
)

// TestStandaloneWebhook: a standalone pod whose own rounds would not ask
// GitHub for ten minutes fetches the release a delivery announces, once, and
// a redelivery of it is a duplicate that asks nothing. Without a secret
// there is no route: pkg/api's TestRoutes.
func TestStandaloneWebhook(t *testing.T) {
	t.Parallel()
	const repo, secret = "storytold/photocraft", "It's a Secret to Everybody"
	post := func(t *testing.T, p *process, id string, body []byte, wantStatus int, want string) {
		t.Helper()
		req, err := http.NewRequest(http.MethodPost, p.base+routes.WebhookPath, bytes.NewReader(body))
		must(t, err)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set(webhook.EventHeader, "release")
		req.Header.Set(webhook.DeliveryHeader, id)
		req.Header.Set(webhook.SignatureHeader, webhook.Sign(secret, body))
		res, err := http.DefaultClient.Do(req)
		must(t, err)
		defer res.Body.Close()
		b, err := io.ReadAll(res.Body)
		must(t, err)
		if res.StatusCode != wantStatus || !strings.Contains(string(b), want) {
			t.Fatalf("delivery %s answered %d %s, want %d with %s", id, res.StatusCode, b, wantStatus, want)
		}
	}
	body := fmt.Appendf(nil, `{"action":"released","release":%s,"repository":{"full_name":%q}}`,
		fakegithub.NewRelease(repo, "v1.1.0").JSON(), repo)

	gh := fakegithub.New(t)
	gh.Publish(repo, fakegithub.NewRelease(repo, "v1.0.0"))
	env := standaloneEnv(gh)
	env["CRAFT_APPS_RELEASE_POLL_INTERVAL_SECS"] = "600"
	env["CRAFT_APPS_RELEASE_WEBHOOK_SECRET"] = secret
	p := start(t, env)
	testkit.Eventually(t, "every app was fetched", allFetched(t, p))
	gh.Reset()
	gh.Publish(repo, fakegithub.NewRelease(repo, "v1.1.0"))
	post(t, p, "d1", body, http.StatusAccepted, `"accepted"`)
	testkit.Eventually(t, "v1.1.0 is served", func() bool {
		_, b := testkit.Get(t, p.base+infoPath)
		rel := testkit.Decode(t, b).ReleaseInfo.Apps["photocraft"].LatestRelease
		return rel != nil && rel.Tag == "v1.1.0"
	})
	post(t, p, "d1", body, http.StatusAccepted, `"duplicate"`)
	if n := gh.Count(fakegithub.AnyRepo); n != 1 {
		t.Errorf("GitHub requests: %d, want 1", n)
	}
}
