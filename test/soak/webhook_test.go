package soak

import (
	"bytes"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/storytold/craft-releases/pkg/redis/store"
	"github.com/storytold/craft-releases/pkg/webhook"
	"github.com/storytold/craft-releases/test/fakegithub"
	"github.com/storytold/craft-releases/test/redistest"
)

// The webhook the soak delivers: GitHub's, for every release it publishes.
const (
	webhookPath   = "/v1/craft_apps/github_webhook"
	webhookSecret = "the soak's webhook secret"
	// floodSenders hold unsigned bodies against one pod during an
	// unsigned-body flood; replayers send one signed body under new ids
	// during a replay storm.
	floodSenders = 100
	replayers    = 8
	// webhookLagGoal is what the webhook path must do outside fault
	// windows: half the releases on every pod within a second.
	webhookLagGoal = time.Second
	// faultShadow is how long after a fault a release still counts as
	// published under it: the webhook it sent may have been refused, and the
	// fleet may still be catching up.
	faultShadow = 2 * time.Second
)

var deliveryIDs atomic.Int64

// webhookClient delivers as GitHub does: one request at a time, short.
var webhookClient = &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{Proxy: nil}}

// releaseEvent is a release event's body for repo's tag, as GitHub sends it.
func releaseEvent(action, repo, tag string, n int) []byte {
	return fmt.Appendf(nil, `{"action":%q,"n":%d,"release":%s,"repository":{"full_name":%q},"sender":{"login":"release-bot"}}`,
		action, n, fakegithub.NewRelease(repo, tag).JSON(), repo)
}

// post sends body to pod as a delivery of event under id, signed with
// secret ("" for none), and returns the status (0: no answer).
func post(pod *proc, id string, body []byte, secret string) int {
	req, err := http.NewRequest(http.MethodPost, pod.base+webhookPath, bytes.NewReader(body))
	if err != nil {
		return 0
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set(webhook.EventHeader, webhook.EventRelease)
	req.Header.Set(webhook.DeliveryHeader, id)
	if secret != "" {
		req.Header.Set(webhook.SignatureHeader, webhook.Sign(secret, body))
	}
	res, err := webhookClient.Do(req)
	if err != nil {
		return 0
	}
	_, _ = io.Copy(io.Discard, res.Body)
	res.Body.Close()
	return res.StatusCode
}

// deliverRelease delivers the release event of p to one of the pods, as
// GitHub does once the release is published.
func (s *soak) deliverRelease(p publication, repo string) {
	s.mu.Lock()
	pod := s.pods[p.N%len(s.pods)]
	s.mu.Unlock()
	id := fmt.Sprintf("soak-%d", deliveryIDs.Add(1))
	status := post(pod, id, releaseEvent("published", repo, p.Tag, p.N), webhookSecret)
	s.mu.Lock()
	s.deliveries = append(s.deliveries, webhookDelivery{App: p.App, Repo: repo, Tag: p.Tag, At: p.At, Status: status})
	s.mu.Unlock()
}

// webhookDelivery is one delivery the soak made for a release it published.
type webhookDelivery struct {
	App    string    `json:"app"`
	Repo   string    `json:"repo"`
	Tag    string    `json:"tag"`
	At     time.Time `json:"at"`
	Status int       `json:"status"`
}

// deliveredBefore reports whether a delivery for repo was made in the 20 s
// before at, a replay storm's included (its first is new): a refresh and its
// retries (2, 5, 15 s) ask GitHub that early.
func (s *soak) deliveredBefore(repo string, at time.Time) (webhookDelivery, bool) {
	for _, d := range append(slices.Clone(s.deliveries), s.replayed...) {
		if strings.EqualFold(d.Repo, repo) && !d.At.After(at) && at.Sub(d.At) <= 15*time.Second+slack {
			return d, true
		}
	}
	return webhookDelivery{}, false
}

// floodUnsigned holds floodSenders connections against a pod for d, each
// announcing a body of webhook.MaxBody with a junk signature and sending its
// start, renewed as the pod answers or closes them.
func (s *soak) floodUnsigned(d time.Duration) string {
	s.mu.Lock()
	pod := s.pods[s.faultRand.IntN(len(s.pods))]
	s.mu.Unlock()
	u, err := url.Parse(pod.base)
	if err != nil {
		s.problem("parse %s: %v", pod.base, err)
		return "no address"
	}
	head := fmt.Sprintf("POST %s HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: %d\r\n%s: release\r\n%s: sha256=%s\r\n\r\n",
		webhookPath, webhook.MaxBody, webhook.EventHeader, webhook.SignatureHeader, strings.Repeat("0", 64))
	chunk := bytes.Repeat([]byte("a"), 64<<10)
	end := time.Now().Add(d)
	var sent atomic.Int64
	var wg sync.WaitGroup
	for range floodSenders {
		wg.Go(func() {
			for time.Now().Before(end) {
				c, err := net.DialTimeout("tcp", u.Host, time.Second)
				if err != nil {
					time.Sleep(50 * time.Millisecond)
					continue
				}
				_ = c.SetDeadline(end)
				// The headers and the start of the body, then a wait for the
				// answer: a 503 for all but the pod's few readers, which
				// read on until their own deadline.
				if _, err := io.WriteString(c, head); err == nil {
					sent.Add(1)
					_, _ = c.Write(chunk)
					_, _ = c.Read(make([]byte, 1))
				}
				c.Close()
			}
		})
	}
	wg.Wait()
	return fmt.Sprintf("%d unsigned bodies of %d KiB held against %s by %d senders for %v",
		sent.Load(), webhook.MaxBody>>10, pod.name, floodSenders, d.Round(time.Millisecond))
}

// replayStorm replays one signed delivery of an app's current release under
// a new delivery id each time, from replayers senders to every pod, for d,
// and checks that the storm recorded one delivery id, its first: a replay
// adds no key to Redis.
func (s *soak) replayStorm(d time.Duration) string {
	addr, err := s.sentinels[0].MasterAddr()
	if err != nil {
		s.problem("ask a sentinel for the primary: %v", err)
		return "no primary known"
	}
	a := apps[s.faultRand.IntN(len(apps))]
	s.mu.Lock()
	n := s.latest[a.Key]
	pods := append([]*proc(nil), s.pods...)
	s.mu.Unlock()
	storm := fmt.Sprintf("replay-%d-", deliveryIDs.Add(1))
	body := releaseEvent("edited", a.Repo, tagOf(n), -int(deliveryIDs.Add(1))) // a body no other delivery sends
	start := time.Now()
	end := start.Add(d)
	var sent, duplicates atomic.Int64
	var wg sync.WaitGroup
	for i := range replayers {
		wg.Go(func() {
			for j := 0; time.Now().Before(end); j++ {
				id := fmt.Sprintf("%s%d-%d", storm, i, j)
				if post(pods[(i+j)%len(pods)], id, body, webhookSecret) == http.StatusAccepted {
					duplicates.Add(1)
				}
				sent.Add(1)
			}
		})
	}
	wg.Wait()
	s.mu.Lock()
	s.replayed = append(s.replayed, webhookDelivery{App: a.Key, Repo: a.Repo, Tag: tagOf(n), At: start, Status: http.StatusAccepted})
	s.mu.Unlock()
	kept, err := deliveryKeys(addr, storm+"*")
	if err != nil {
		s.problem("count the delivery keys on %s: %v", addr, err)
		return "SCAN failed"
	}
	// A failover or a flush meanwhile can only remove keys.
	if kept > 1 {
		s.problem("a replay storm of %d deliveries of one body under new ids kept %d of the ids, want at most the first", sent.Load(), kept)
	}
	return fmt.Sprintf("one signed body of %s replayed %d times under new ids (%d answered 202), %d of the ids kept in Redis",
		a.Key, sent.Load(), duplicates.Load(), kept)
}

// deliveryKeys counts the webhook's delivery keys of ids matching pattern
// on the Redis at addr.
func deliveryKeys(addr, pattern string) (int64, error) {
	var n int64
	cursor := "0"
	for {
		reply, err := redistest.Query(addr, "SCAN", cursor, "MATCH", store.DeliveryKey(pattern), "COUNT", "1000")
		if err != nil {
			return 0, err
		}
		v, ok := reply.([]any)
		if !ok || len(v) != 2 {
			return 0, fmt.Errorf("SCAN answered %v", v)
		}
		cursor = fmt.Sprint(v[0])
		keys, _ := v[1].([]any)
		n += int64(len(keys))
		if cursor == "0" {
			return n, nil
		}
	}
}

// checkWebhookLag holds the webhook path to its goal: of the releases whose
// delivery was accepted, outside fault windows (and faultShadow after each),
// half the (release, pod) lags are under webhookLagGoal. It reports the p50
// and p99 of those lags.
func (s *soak) checkWebhookLag(r *report) {
	accepted := map[string]bool{}
	for _, d := range s.deliveries {
		if d.Status == http.StatusAccepted {
			accepted[d.App+" "+d.Tag] = true
		}
	}
	var lags []float64
	for _, rl := range r.Releases {
		if !accepted[rl.App+" "+rl.Tag] || s.underFault(rl.At) {
			continue
		}
		for _, lag := range rl.LagS {
			lags = append(lags, lag)
		}
	}
	for _, d := range s.deliveries {
		r.DeliveriesByStatus[fmt.Sprint(d.Status)]++
	}
	r.WebhookLag = map[string]float64{}
	sort.Float64s(lags)
	if len(s.deliveries) > 0 && len(accepted) == 0 {
		r.fail("none of the %d webhook deliveries was accepted", len(s.deliveries))
	}
	if len(lags) == 0 {
		return
	}
	for _, q := range []float64{0.5, 0.99} {
		r.WebhookLag[fmt.Sprintf("p%g", q*100)] = lags[min(len(lags)-1, int(q*float64(len(lags))))]
	}
	if p50 := r.WebhookLag["p50"]; p50 >= webhookLagGoal.Seconds() {
		r.fail("releases published outside fault windows reached the pods in %.2fs (p50 of %d), want under %v with the webhook",
			p50, len(lags), webhookLagGoal)
	}
}

// underFault reports whether at falls in a fault's window or in a fleet
// backoff that a poller logged, or in the shadow of either: a backoff holds
// webhook refreshes too (docs/operations.md, "GitHub webhook"), and a fault's may
// outlast it.
func (s *soak) underFault(at time.Time) bool {
	for _, f := range s.faults {
		if !at.Before(f.Start.Add(-time.Second)) && at.Before(f.End.Add(faultShadow)) {
			return true
		}
	}
	for _, p := range s.procs {
		p.mu.Lock()
		backoffs := p.backoffs
		p.mu.Unlock()
		for _, b := range backoffs {
			if !at.Before(b.From.Add(-time.Second)) && at.Before(b.Until.Add(faultShadow)) {
				return true
			}
		}
	}
	return false
}
