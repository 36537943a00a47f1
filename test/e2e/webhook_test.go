package e2e

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/storytold/craft-releases/pkg/webhook"
	"github.com/storytold/craft-releases/test/fakegithub"
	"github.com/storytold/craft-releases/test/redistest"
	"github.com/storytold/craft-releases/test/testkit"
)

const (
	webhookPath   = "/v1/craft_apps/github_webhook"
	webhookSecret = "It's a Secret to Everybody"
)

var deliveryIDs atomic.Int64

// newDeliveryID returns a new X-GitHub-Delivery.
func newDeliveryID() string { return fmt.Sprintf("72d3162e-cc78-11e3-81ab-%012d", deliveryIDs.Add(1)) }

// releaseEvent is the body of a release event of action for repo's tag, as
// GitHub sends it: the release object as releases/latest has it.
func releaseEvent(action, repo, tag string) []byte {
	return fmt.Appendf(nil, `{"action":%q,"release":%s,"repository":{"full_name":%q,"private":false},"sender":{"login":"octocat"}}`,
		action, fakegithub.NewRelease(repo, tag).JSON(), repo)
}

// deliver posts a release event signed with webhookSecret, as GitHub does,
// and fails the test unless p answers 202 with want in its body.
func deliver(t testing.TB, p *proc, id string, body []byte, want string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, p.base+webhookPath, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range map[string]string{"Content-Type": "application/json", "User-Agent": "GitHub-Hookshot/044aadd",
		webhook.EventHeader: "release", webhook.DeliveryHeader: id, webhook.SignatureHeader: webhook.Sign(webhookSecret, body)} {
		req.Header.Set(k, v)
	}
	res, err := testkit.Client.Do(req)
	if err != nil {
		t.Fatalf("post to %s: %v", p.name, err)
	}
	defer res.Body.Close()
	got, _ := io.ReadAll(res.Body) // a short body fails the check below
	if res.StatusCode != http.StatusAccepted || !strings.Contains(string(got), want) {
		t.Fatalf("%s answered %d %s, want 202 with %s", p.name, res.StatusCode, got, want)
	}
}

// TestWebhookReachesEveryPod: with pollers that would not ask GitHub for
// ten minutes on their own, a signed delivery to one pod makes the fleet
// ask GitHub once and both pods serve the release; GitHub's redelivery of
// it, to either pod, is a duplicate.
func TestWebhookReachesEveryPod(t *testing.T) {
	t.Parallel()
	gh, rs := fakegithub.New(t), redistest.Start(t)
	want := publishFirst(gh)
	d := deployment{gh: gh, url: rs.URL(), apps: testAppsEnv,
		pollerEnv: map[string]string{"CRAFT_APPS_RELEASE_POLL_INTERVAL_SECS": "600"},
		podEnv:    map[string]string{"CRAFT_APPS_RELEASE_WEBHOOK_SECRET": "an-old-secret," + webhookSecret}}
	d.pollers(t, 2)
	pods := d.pods(t, 2)
	waitTags(t, want, pods...)
	gh.Reset()

	gh.Publish(photocraft, fakegithub.NewRelease(photocraft, "v1.1.0"))
	id := newDeliveryID()
	// GitHub spells the repository as it likes; the match ignores case.
	body := releaseEvent("published", "StoryTold/PhotoCraft", "v1.1.0")
	deliver(t, pods[0], id, body, `"accepted"`)
	want["photocraft"] = "v1.1.0"
	took := waitTags(t, want, pods...)
	t.Logf("delivery to %s → both pods serve v1.1.0 after %v", pods[0].name, took[len(took)-1])
	if n := gh.Count(fakegithub.AnyRepo); n != 1 {
		t.Errorf("GitHub requests for one delivery: %d, want 1", n)
	}

	deliver(t, pods[1], id, body, `"duplicate"`)
	deliver(t, pods[0], id, body, `"duplicate"`)
	testkit.WantSamples(t, testkit.Scrape(t, pods[0].metrics+"/metrics"), map[string]float64{
		`craft_api_webhook_deliveries_total{event="release",outcome="accepted"}`:  1,
		`craft_api_webhook_deliveries_total{event="release",outcome="duplicate"}`: 1,
	})
}
