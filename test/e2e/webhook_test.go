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
	res, err := httpClient.Do(req)
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
	scrape, err := ask(metricsBase(t, f.pods[0]) + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	for _, series := range []string{
		`craft_api_webhook_deliveries_total{event="release",outcome="accepted"} 1`,
		`craft_api_webhook_deliveries_total{event="release",outcome="duplicate"} 1`, // the other two went to api-2
		`craft_api_webhook_deliveries_total{event="ping",outcome="accepted"} 1`,
	} {
		if !strings.Contains(string(scrape.body), series) {
			t.Errorf("%s's /metrics lacks %s", f.pods[0].name, series)
		}
	}
}

func TestWebhookRefusalsAskNothing(t *testing.T) {
	t.Parallel()
	f := startWebhookFleet(t, 2)
	f.gh.Publish(photocraft, fakegithub.NewRelease(photocraft, "v1.1.0"))
	body := releaseEvent("published", photocraft, "v1.1.0")
	big := append(releaseEvent("published", photocraft, "v1.1.0"), bytes.Repeat([]byte(" "), webhook.MaxBody)...)
	tests := []struct {
		name   string
		event  string
		body   []byte
		secret string
		status int
		want   string
	}{
		{"unsigned", "release", body, "", http.StatusUnauthorized, `"bad signature"`},
		{"signed with another secret", "release", body, "not-the-secret", http.StatusUnauthorized, `"bad signature"`},
		{"a repository not served", "release", releaseEvent("published", "storytold/filmcraft-legacy", "v9"), webhookSecret, http.StatusAccepted, `"ignored"`},
		{"another event", "push", body, webhookSecret, http.StatusAccepted, `"ignored"`},
		{"over MaxBody", "release", big, webhookSecret, http.StatusRequestEntityTooLarge, `"body too large"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := post(t, f.pods[0], tt.event, newDeliveryID(), tt.body, tt.secret)
			if a.status != tt.status || !strings.Contains(string(a.body), tt.want) {
				t.Errorf("answered %d %s, want %d with %s", a.status, a.body, tt.status, tt.want)
			}
			if strings.Contains(string(a.body), webhookSecret) {
				t.Errorf("the answer quotes the secret: %s", a.body)
			}
		})
	}
	f.marker(t, "v2.1.0")
	if n, m := f.gh.Count(fakegithub.AnyRepo), f.gh.Count(vectorcraft); n != m {
		t.Errorf("GitHub requests other than the marker's: %d, want 0", n-m)
	}
	if got := tags(f.pods[0].served(t))["photocraft"]; got != "v1.0.0" {
		t.Errorf("photocraft serves %s, want v1.0.0 still", got)
	}
}

// TestWebhookStreamCostsTheBudget: 300 distinct signed deliveries of one app
// in 30 s, to both pods, each a release edited again and naming a tag GitHub
// never serves (so that each asks for the 2/5/15 s retries), cost at most 12
// GitHub requests over the stream and the retries after it, across two
// pollers; the release the first of them announced is served by both pods
// as before (issue 21, item 3; 35 requests before the budget).
func TestWebhookStreamCostsTheBudget(t *testing.T) {
	t.Parallel()
	f := startWebhookFleet(t, 2)
	time.Sleep(schedule.RefreshGap) // past the gap after the start-up fetches
	f.gh.Publish(photocraft, fakegithub.NewRelease(photocraft, "v1.1.0"))
	start := time.Now()
	deliver(t, f.pods[0], "release", newDeliveryID(), releaseEvent("published", photocraft, "v1.1.0"), http.StatusAccepted, `"accepted"`)
	f.want["photocraft"] = "v1.1.0"
	const deliveries, over = 300, 30 * time.Second
	for i := 1; i < deliveries; i++ {
		time.Sleep(time.Until(start.Add(time.Duration(i) * over / deliveries)))
		body := fmt.Appendf(nil, `{"action":"edited","changes":{"body":{"from":"draft %d"}},"release":%s,"repository":{"full_name":%q}}`,
			i, fakegithub.NewRelease(photocraft, "v9.9.9").JSON(), photocraft)
		// "edited" names no tag to wait for; every tenth says "published".
		if i%10 == 0 {
			body = fmt.Appendf(nil, `{"action":"published","n":%d,"release":%s,"repository":{"full_name":%q}}`,
				i, fakegithub.NewRelease(photocraft, "v9.9.9").JSON(), photocraft)
		}
		deliver(t, f.pods[i%2], "release", newDeliveryID(), body, http.StatusAccepted, `"accepted"`)
		if i == 1 {
			waitTags(t, f.want, f.pods...)
			t.Logf("the first delivery's release served by both pods %v after it", time.Since(start).Round(10*time.Millisecond))
		}
	}
	time.Sleep(20 * time.Second) // the retries of the last request, 15 s after it
	n := f.gh.Count(photocraft)
	var at []string
	for _, r := range f.gh.Requests() {
		if r.Repo == photocraft {
			at = append(at, r.At.Sub(start).Round(100*time.Millisecond).String())
		}
	}
	t.Logf("%d distinct signed deliveries in %v cost %d GitHub requests, at %s", deliveries, over, n, strings.Join(at, " "))
	if n > 12 {
		t.Errorf("GitHub requests for %d deliveries of one app in %v: %d, want at most 12", deliveries, over, n)
	}
	f.marker(t, "v2.1.0")
}

func TestWebhookWaitsOutGitHubsLag(t *testing.T) {
	t.Parallel()
	f := startWebhookFleet(t, 2)
	// GitHub sends the event, but releases/latest answers the previous
	// release for 3 s more.
	deliver(t, f.pods[0], "release", newDeliveryID(), releaseEvent("published", photocraft, "v1.1.0"), http.StatusAccepted, `"accepted"`)
	lag := time.AfterFunc(3*time.Second, func() { f.gh.Publish(photocraft, fakegithub.NewRelease(photocraft, "v1.1.0")) })
	t.Cleanup(func() { lag.Stop() })
	f.want["photocraft"] = "v1.1.0"
	took := waitTags(t, f.want, f.pods...)
	t.Logf("served after %v, with %d GitHub requests", took[len(took)-1], f.gh.Count(photocraft))
	// At once, 2 s and 5 s after the delivery: the last sees the release.
	if n := f.gh.Count(photocraft); n != 3 {
		t.Errorf("GitHub requests for photocraft: %d, want 3 (at once, 2 s, 5 s)", n)
	}
}

func TestWebhookRequestOutlivesThePollers(t *testing.T) {
	t.Parallel()
	f := startWebhookFleet(t, 1)
	f.pollers[0].stop(t)
	f.gh.Publish(photocraft, fakegithub.NewRelease(photocraft, "v1.1.0"))
	deliver(t, f.pods[0], "release", newDeliveryID(), releaseEvent("published", photocraft, "v1.1.0"), http.StatusAccepted, `"accepted"`)
	if n := f.gh.Count(fakegithub.AnyRepo); n != 0 {
		t.Fatalf("GitHub asked %d times with no poller running", n)
	}
	// A poller starts (a deploy, a restart): it finds the request.
	start(t, "poller-2", binary(t, "poller"), f.pollerEnv())
	f.want["photocraft"] = "v1.1.0"
	waitTags(t, f.want, f.pods...)
	if n := f.gh.Count(photocraft); n != 1 {
		t.Errorf("GitHub requests for photocraft: %d, want 1", n)
	}
}

func TestWebhookRedisDown(t *testing.T) {
	t.Parallel()
	f := startWebhookFleet(t, 1)
	f.rs.Stop()
	id := newDeliveryID()
	body := releaseEvent("published", photocraft, "v1.1.0")
	deliver(t, f.pods[0], "release", id, body, http.StatusServiceUnavailable, `"unavailable, redeliver later"`)
	// A ping needs no Redis.
	deliver(t, f.pods[0], "ping", newDeliveryID(), []byte(`{}`), http.StatusOK, `"pong"`)
	// Redis back (empty): GitHub's redelivery of the failed one goes through.
	f.rs.Restart()
	f.gh.Publish(photocraft, fakegithub.NewRelease(photocraft, "v1.1.0"))
	redeliverUntilAccepted(t, f.pods[0], id, body)
	f.want["photocraft"] = "v1.1.0"
	waitTags(t, f.want, f.pods...)
}

// redeliverUntilAccepted redelivers until p accepts: its Redis client
// reconnects on its own schedule.
func redeliverUntilAccepted(t testing.TB, p *proc, id string, body []byte) {
	t.Helper()
	testkit.Eventually(t, p.name+" accepts the redelivery", func() bool {
		a := post(t, p, "release", id, body, webhookSecret)
		if a.status == http.StatusAccepted && strings.Contains(string(a.body), `"duplicate"`) {
			t.Fatalf("the delivery that failed with Redis down counts as a duplicate")
		}
		return a.status == http.StatusAccepted
	})
}

func TestWebhookStandalone(t *testing.T) {
	t.Parallel()
	gh := fakegithub.New(t)
	want := publishFirst(gh)
	pod := start(t, "api", binary(t, "api"), map[string]string{
		"CRAFT_APPS_RELEASE_APPS":                testAppsEnv,
		"CRAFT_APPS_RELEASE_GITHUB_API_URL":      gh.URL(),
		"CRAFT_APPS_RELEASE_POLL_INTERVAL_SECS":  "600",
		"CRAFT_APPS_RELEASE_STARTUP_JITTER_SECS": "0",
		"CRAFT_APPS_RELEASE_REQUEST_SPACING_MS":  "0",
		"CRAFT_APPS_RELEASE_WEBHOOK_SECRET":      webhookSecret,
		"SHUTDOWN_TIMEOUT_SECS":                  "5",
	})
	waitTags(t, want, pod)
	gh.Reset()
	gh.Publish(photocraft, fakegithub.NewRelease(photocraft, "v1.1.0"))
	id := newDeliveryID()
	body := releaseEvent("released", photocraft, "v1.1.0")
	deliver(t, pod, "release", id, body, http.StatusAccepted, `"accepted"`)
	want["photocraft"] = "v1.1.0"
	waitTags(t, want, pod)
	deliver(t, pod, "release", id, body, http.StatusAccepted, `"duplicate"`)
	if n := gh.Count(fakegithub.AnyRepo); n != 1 {
		t.Errorf("GitHub requests: %d, want 1", n)
	}
}

func TestNoWebhookWithoutASecret(t *testing.T) {
	t.Parallel()
	rs := redistest.Start(t)
	pod := startPods(t, 1, podEnv(rs.URL(), testAppsEnv))[0]
	if a := post(t, pod, "ping", newDeliveryID(), []byte(`{}`), webhookSecret); a.status != http.StatusNotFound {
		t.Errorf("without a secret the webhook answered %d, want 404", a.status)
	}
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
//	go test -run '^$' -bench Webhook ./test/e2e
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
