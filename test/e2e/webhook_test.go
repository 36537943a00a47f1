package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/storytold/craft-releases/pkg/redis/store"
	"github.com/storytold/craft-releases/pkg/schedule"
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

// webhookFleet is a split deployment whose pollers would not ask GitHub for
// ten minutes on their own, so that only the webhook explains a request.
type webhookFleet struct {
	gh      *fakegithub.Server
	rs      *redistest.Server
	pollers []*proc
	pods    []*proc
	want    map[string]string
}

func startWebhookFleet(t testing.TB, pollers int) *webhookFleet {
	t.Helper()
	f := &webhookFleet{gh: fakegithub.New(t), rs: redistest.Start(t)}
	f.want = publishFirst(f.gh)
	f.pollers = startPollers(t, pollers, f.pollerEnv())
	env := podEnv(f.rs.URL(), testAppsEnv)
	env["CRAFT_APPS_RELEASE_WEBHOOK_SECRET"] = "an-old-secret," + webhookSecret
	f.pods = startPods(t, 2, env)
	waitTags(t, f.want, f.pods...)
	f.gh.Reset()
	return f
}

func (f *webhookFleet) pollerEnv() map[string]string {
	env := pollerEnv(f.gh, f.rs.URL(), testAppsEnv)
	env["CRAFT_APPS_RELEASE_POLL_INTERVAL_SECS"] = "600"
	return env
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

// marker proves the fleet handled everything delivered before it: a
// delivery for vectorcraft with a new tag, served by both pods.
func (f *webhookFleet) marker(t testing.TB, tag string) {
	t.Helper()
	f.gh.Publish(vectorcraft, fakegithub.NewRelease(vectorcraft, tag))
	deliver(t, f.pods[1], "release", newDeliveryID(), releaseEvent("published", vectorcraft, tag), http.StatusAccepted, `"accepted"`)
	f.want["vectorcraft"] = tag
	waitTags(t, f.want, f.pods...)
}

func TestWebhookReachesEveryPod(t *testing.T) {
	t.Parallel()
	f := startWebhookFleet(t, 2)

	f.gh.Publish(photocraft, fakegithub.NewRelease(photocraft, "v1.1.0"))
	id := newDeliveryID()
	// GitHub spells the repository as it likes; the match ignores case.
	body := releaseEvent("published", "StoryTold/PhotoCraft", "v1.1.0")
	deliver(t, f.pods[0], "release", id, body, http.StatusAccepted, `"accepted"`)
	f.want["photocraft"] = "v1.1.0"
	took := waitTags(t, f.want, f.pods...)
	t.Logf("delivery to %s → both pods serve v1.1.0 after %v", f.pods[0].name, took[len(took)-1])
	if n := f.gh.Count(fakegithub.AnyRepo); n != 1 {
		t.Errorf("GitHub requests for one delivery: %d, want 1", n)
	}

	// The same delivery again, to either pod (GitHub's Redeliver button):
	// answered, and nothing recorded.
	before := redisDo(t, f.rs, "HGET", store.RefreshKey("photocraft"), "at_ms")
	deliver(t, f.pods[1], "release", id, body, http.StatusAccepted, `"duplicate"`)
	deliver(t, f.pods[0], "release", id, body, http.StatusAccepted, `"duplicate"`)
	// The signed body replayed under another id is one too.
	deliver(t, f.pods[1], "release", newDeliveryID(), body, http.StatusAccepted, `"duplicate"`)
	if after := redisDo(t, f.rs, "HGET", store.RefreshKey("photocraft"), "at_ms"); after != before {
		t.Errorf("a redelivery moved the request from %s to %s", before, after)
	}
	f.marker(t, "v2.1.0")
	if n := f.gh.Count(photocraft); n != 1 {
		t.Errorf("GitHub requests for photocraft after two redeliveries: %d, want 1", n)
	}

	// A ping answers 200 and asks nothing.
	deliver(t, f.pods[0], "ping", newDeliveryID(), []byte(`{"zen":"Practicality beats purity.","hook_id":1}`), http.StatusOK, `"pong"`)
	// Of the three release deliveries, api-2 answered the other two.
	testkit.WantSamples(t, testkit.Scrape(t, metricsBase(t, f.pods[0])+"/metrics"), map[string]float64{
		`craft_api_webhook_deliveries_total{event="release",outcome="accepted"}`:  1,
		`craft_api_webhook_deliveries_total{event="release",outcome="duplicate"}`: 1,
		`craft_api_webhook_deliveries_total{event="ping",outcome="accepted"}`:     1,
	})
}

// BenchmarkWebhook times, for each signed release delivery to one API pod,
// from sending it to both pods serving the new tag (each pod asked in a
// tight loop with If-None-Match of the ETag it served), over a split
// deployment of two pollers and two pods whose pollers would not ask GitHub
// on their own for ten minutes, the fake GitHub answering at once. It
// reports p50, p99 and max over at least 20 deliveries, and the GitHub
// requests spent per delivery. Deliveries rotate over three apps 400 ms
// apart, so that none waits out the 1 s coalescing gap of its app.
//
//	CRAFT_TEST_INTEGRATION=1 go test -run '^$' -bench Webhook ./test/e2e
func BenchmarkWebhook(b *testing.B) {
	const perLoop = 21
	f := startWebhookFleet(b, 2)
	repos := []struct{ key, repo string }{{"photocraft", photocraft}, {"vectorcraft", vectorcraft}, {"filmcraft", "storytold/filmcraft"}}
	old := etags(b, f.pods)
	// The pollers fetched every app at start-up: let the coalescing gap
	// after those fetches pass, as it has for any app in production.
	time.Sleep(schedule.RefreshGap)
	var samples []time.Duration
	n := 0
	for b.Loop() {
		for range perLoop {
			n++
			app := repos[n%len(repos)]
			tag := fmt.Sprintf("v3.0.%d", n)
			f.gh.Publish(app.repo, fakegithub.NewRelease(app.repo, tag))
			time.Sleep(400 * time.Millisecond)
			began := time.Now()
			deliver(b, f.pods[n%2], "release", newDeliveryID(), releaseEvent("published", app.repo, tag), http.StatusAccepted, `"accepted"`)
			var took []time.Duration
			took, old = changedETags(b, began, old, f.pods...)
			for _, p := range f.pods {
				if got := tags(p.served(b))[app.key]; got != tag {
					b.Fatalf("%s serves %s %s, want %s", p.name, app.key, got, tag)
				}
			}
			samples = append(samples, slices.Max(took))
		}
	}
	slices.Sort(samples)
	perDelivery := float64(f.gh.Count(fakegithub.AnyRepo)) / float64(len(samples))
	ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
	b.ReportMetric(ms(percentile(samples, 50)), "p50-ms")
	b.ReportMetric(ms(percentile(samples, 99)), "p99-ms")
	b.ReportMetric(ms(samples[len(samples)-1]), "max-ms")
	b.ReportMetric(perDelivery, "github-requests/delivery")
	b.ReportMetric(0, "ns/op")
	b.Logf("%d deliveries: from sending to both pods serving the tag, p50 %v, p99 %v, max %v; %.2f GitHub requests per delivery",
		len(samples), percentile(samples, 50), percentile(samples, 99), samples[len(samples)-1], perDelivery)
}
