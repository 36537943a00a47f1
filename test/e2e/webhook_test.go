package e2e

import (
	"bytes"
	"encoding/json"
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

// deliveryIDs makes each delivery's X-GitHub-Delivery distinct.
var deliveryIDs atomic.Int64

func newDeliveryID() string {
	return fmt.Sprintf("72d3162e-cc78-11e3-81ab-%012d", deliveryIDs.Add(1))
}

// releaseEvent is the body of a release event of action for repo's tag, as
// GitHub sends it: the release object as releases/latest has it.
func releaseEvent(action, repo, tag string) []byte {
	return fmt.Appendf(nil, `{"action":%q,"release":%s,"repository":{"full_name":%q,"private":false},"sender":{"login":"octocat"}}`,
		action, fakegithub.NewRelease(repo, tag).JSON(), repo)
}

// post sends a delivery to p, signed with secret unless it is "", and
// returns the answer.
func post(t testing.TB, p *proc, event, id string, body []byte, secret string) answer {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, p.base+webhookPath, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "GitHub-Hookshot/044aadd")
	req.Header.Set(webhook.EventHeader, event)
	req.Header.Set(webhook.DeliveryHeader, id)
	if secret != "" {
		req.Header.Set(webhook.SignatureHeader, webhook.Sign(secret, body))
	}
	res, err := testkit.Client.Do(req)
	if err != nil {
		t.Fatalf("post to %s: %v", p.name, err)
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	return answer{status: res.StatusCode, header: res.Header, body: b}
}

// deliver posts a signed delivery and fails the test unless p answers
// status with want in its body.
func deliver(t testing.TB, p *proc, event, id string, body []byte, status int, want string) {
	t.Helper()
	a := post(t, p, event, id, body, webhookSecret)
	if a.status != status || !strings.Contains(string(a.body), want) {
		t.Fatalf("%s answered %d %s, want %d with %s", p.name, a.status, a.body, status, want)
	}
}

// metricsBase returns "http://" and the address an API pod logged for its
// metrics port.
func metricsBase(t testing.TB, p *proc) string {
	t.Helper()
	for line := range strings.Lines(p.logs.String()) {
		var rec struct {
			Msg         string `json:"msg"`
			MetricsAddr string `json:"metrics_addr"`
		}
		if json.Unmarshal([]byte(line), &rec) == nil && rec.Msg == "listening" && rec.MetricsAddr != "" {
			return "http://" + rec.MetricsAddr
		}
	}
	t.Fatalf("%s logged no metrics address", p.name)
	return ""
}

// TestWebhookReachesEveryPod: with pollers that would not ask GitHub for
// ten minutes on their own, a signed delivery to one pod makes the fleet
// ask GitHub once and both pods serve the release; GitHub's redelivery of
// it, to either pod, is a duplicate.
func TestWebhookReachesEveryPod(t *testing.T) {
	t.Parallel()
	gh, rs := fakegithub.New(t), redistest.Start(t)
	want := publishFirst(gh)
	env := pollerEnv(gh, rs.URL(), testAppsEnv)
	env["CRAFT_APPS_RELEASE_POLL_INTERVAL_SECS"] = "600"
	startPollers(t, 2, env)
	env = podEnv(rs.URL(), testAppsEnv)
	env["CRAFT_APPS_RELEASE_WEBHOOK_SECRET"] = "an-old-secret," + webhookSecret
	pods := startPods(t, 2, env)
	waitTags(t, want, pods...)
	gh.Reset()

	gh.Publish(photocraft, fakegithub.NewRelease(photocraft, "v1.1.0"))
	id := newDeliveryID()
	// GitHub spells the repository as it likes; the match ignores case.
	body := releaseEvent("published", "StoryTold/PhotoCraft", "v1.1.0")
	deliver(t, pods[0], "release", id, body, http.StatusAccepted, `"accepted"`)
	want["photocraft"] = "v1.1.0"
	took := waitTags(t, want, pods...)
	t.Logf("delivery to %s → both pods serve v1.1.0 after %v", pods[0].name, took[len(took)-1])
	if n := gh.Count(fakegithub.AnyRepo); n != 1 {
		t.Errorf("GitHub requests for one delivery: %d, want 1", n)
	}

	deliver(t, pods[1], "release", id, body, http.StatusAccepted, `"duplicate"`)
	deliver(t, pods[0], "release", id, body, http.StatusAccepted, `"duplicate"`)
	testkit.WantSamples(t, testkit.Scrape(t, metricsBase(t, pods[0])+"/metrics"), map[string]float64{
		`craft_api_webhook_deliveries_total{event="release",outcome="accepted"}`:  1,
		`craft_api_webhook_deliveries_total{event="release",outcome="duplicate"}`: 1,
	})
}
