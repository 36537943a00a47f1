package soak

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/storytold/craft-releases/pkg/github"
	"github.com/storytold/craft-releases/pkg/redis/store"
	"github.com/storytold/craft-releases/pkg/release"
	"github.com/storytold/craft-releases/pkg/webhook"
	"github.com/storytold/craft-releases/test/fakegithub"
	"github.com/storytold/craft-releases/test/redistest"
	"github.com/storytold/craft-releases/test/testkit"
)

// The kinds of fault, in the order of the legend.
const (
	faultPollerKill  = "poller-kill"
	faultPrimaryKill = "primary-kill"
	faultFlush       = "flushall"
	faultSilent      = "redis-silent"
	faultGitHub500   = "github-500"
	faultSlow        = "github-slow"
	faultRateLimit   = "github-rate-limit"
	faultGarbage     = "github-garbage"
	faultNotFound    = "github-404"
	faultAhead       = "redis-clock-ahead"
	faultPoison      = "redis-poison"
	faultOversized   = "redis-oversized"
	faultFlood       = "webhook-unsigned-flood"
	faultReplay      = "webhook-replay-storm"
	faultClockStep   = "redis-clock-step"
	faultQuotaFar    = "github-quota-far"
	faultBigRefresh  = "redis-oversized-refresh"
)

var faultKinds = []string{faultPollerKill, faultPrimaryKill, faultFlush, faultSilent,
	faultGitHub500, faultSlow, faultRateLimit, faultGarbage, faultNotFound, faultAhead, faultPoison, faultOversized,
	faultFlood, faultReplay, faultClockStep, faultQuotaFar, faultBigRefresh}

// redisFault reports whether a kind of fault cuts pollers off from the
// fleet's state in Redis (so they may ask GitHub on their own).
func redisFault(kind string) bool {
	return kind == faultPrimaryKill || kind == faultFlush || kind == faultSilent
}

// fault is one fault injected, from its start until the system was put
// back (the poller restarted, the old primary synced as a replica, the
// GitHub fault lifted).
type fault struct {
	Kind   string        `json:"kind"`
	Start  time.Time     `json:"start"`
	End    time.Time     `json:"end"`
	Detail string        `json:"detail"`
	Slot   int           `json:"poller_slot,omitempty"` // the poller killed or cut off
	Step   time.Duration `json:"step_ns,omitempty"`     // how far faultClockStep set Redis's clock off, then back
}

// flushRepair is how long after a FLUSHALL every app's entry was back.
type flushRepair struct {
	At       time.Time     `json:"at"`
	Took     time.Duration `json:"took_ns"`
	Repaired bool          `json:"repaired"`
}

// intruder is the writer that a tampered hash names: hostile, so that the
// scan of the logs sees what the refusal's log line makes of it.
const intruder = "intruder\u202e\x1b]0;pwned\a\u0085"

// injectFaults runs faults one after another, with a short pause between
// them, until d has passed. The kinds come in a shuffled cycle, so that every
// kind comes once before any comes twice; each fault's details are drawn from
// the same seeded source, so a seed gives the same schedule.
func (s *soak) injectFaults(d time.Duration) {
	end := time.Now().Add(d)
	// A short soak holds each fault for less, so that it sees every kind.
	longest := 6 * time.Second
	if d < time.Minute {
		longest = 2500 * time.Millisecond
	}
	var cycle []string
	for {
		time.Sleep(time.Duration(250+s.faultRand.IntN(750)) * time.Millisecond)
		if time.Until(end) < 2*time.Second {
			time.Sleep(max(time.Until(end), 0))
			return
		}
		if len(cycle) == 0 {
			cycle = slices.Clone(faultKinds)
			s.faultRand.Shuffle(len(cycle), func(i, j int) { cycle[i], cycle[j] = cycle[j], cycle[i] })
		}
		if cycle[0] == faultPrimaryKill {
			s.waitHealthyReplica() // the last failover's replica, before a new one
		}
		f := fault{Kind: cycle[0], Start: time.Now()}
		cycle = cycle[1:]
		f.Detail, f.Slot = s.inject(&f, min(time.Until(end), longest))
		f.End = time.Now()
		s.locked(func() { s.faults = append(s.faults, f) })
		s.t.Logf("fault %-17s %5.1fs  %s", f.Kind, f.End.Sub(f.Start).Seconds(), f.Detail)
	}
}

// inject runs the fault f, lasting up to about upTo, and returns what it did
// and the poller slot it hit (0: none in particular).
func (s *soak) inject(f *fault, upTo time.Duration) (string, int) {
	hold := func() time.Duration { // 1.5 s … upTo
		return 1500*time.Millisecond + time.Duration(s.faultRand.Int64N(int64(max(upTo-1500*time.Millisecond, time.Millisecond))))
	}
	held := func(d time.Duration) string { return d.Round(time.Millisecond).String() }
	switch f.Kind {
	case faultPollerKill:
		slot, pause := 1+s.faultRand.IntN(3), time.Duration(300+s.faultRand.IntN(1700))*time.Millisecond
		var p *proc
		s.locked(func() { p = s.pollers[slot-1] })
		p.kill()
		time.Sleep(pause)
		if err := s.startProc("poller", slot); err != nil {
			s.problem("restart poller %d: %v", slot, err)
		}
		return fmt.Sprintf("SIGKILL %s, started again after %v", p.name, pause), slot

	case faultPrimaryKill:
		return s.killPrimary(), 0

	case faultFlush:
		return s.flush(), 0

	case faultSilent:
		slot, d := 1+s.faultRand.IntN(3), hold()
		s.redisGates[slot-1].Stall()
		time.Sleep(d)
		s.redisGates[slot-1].Resume()
		return fmt.Sprintf("redis silent for poller-%d for %s", slot, held(d)), slot

	case faultGitHub500, faultSlow, faultGarbage, faultNotFound:
		delay := time.Duration(1000+s.faultRand.IntN(6000)) * time.Millisecond
		type answer struct {
			what  string
			fault fakegithub.Fault
		}
		answers := map[string][]answer{
			faultGitHub500: {{"500", fakegithub.ServerError()}},
			faultSlow:      {{"held back " + delay.String(), fakegithub.Slow(delay)}},
			faultGarbage: {
				{"200 with JSON cut off", fakegithub.Malformed()},
				{"200 with an HTML page", fakegithub.Raw("<html><body>Unicorn!</body></html>")},
				{"200 with wrong types", fakegithub.Raw(`{"tag_name":5,"assets":"none","draft":"no"}`)},
				{"200 with a release one byte over the size limit", fakegithub.Oversized(github.MaxBody + 1)},
			},
			// Shorter than an interval: a blip, which must cost no release.
			faultNotFound: {{"404", fakegithub.Status(http.StatusNotFound)}},
		}[f.Kind]
		a, d := answers[s.faultRand.IntN(len(answers))], hold()
		s.githubFault(f.Kind, a.fault, d)
		return fmt.Sprintf("every answer %s, for %s", a.what, held(d)), 0

	case faultRateLimit:
		// The reset is announced in whole seconds; the window ends there.
		reset := time.Now().Add(hold()).Truncate(time.Second).Add(time.Second)
		s.githubFault(f.Kind, fakegithub.RateLimit(reset), time.Until(reset))
		return "rate limited, reset at " + reset.Format("15:04:05"), 0

	case faultAhead, faultPoison, faultOversized:
		return s.tamper(f.Kind), 0

	case faultFlood:
		return s.floodUnsigned(hold()), 0

	case faultReplay:
		return s.replayStorm(hold()), 0

	case faultClockStep:
		// Both ways: ahead, then back to the true time; or back, then ahead to it.
		d := hold()
		f.Step = time.Hour * time.Duration(1-2*s.faultRand.IntN(2))
		s.redisClock.Set(f.Step)
		time.Sleep(d)
		s.redisClock.Set(0)
		return fmt.Sprintf("redis's clock %v off for %s, then put right", f.Step, held(d)), 0

	case faultQuotaFar:
		// A quota nearly spent with a reset ten years away: believed, it
		// would pace the fleet to an interval of decades.
		d := hold()
		s.gh.SetQuota(fakegithub.Quota{Limit: 5000, Remaining: 1, Reset: time.Now().AddDate(10, 0, 0)})
		time.Sleep(d)
		s.gh.SetQuota(fakegithub.Quota{Limit: 5000, Remaining: 4999, Reset: time.Now().Add(time.Hour)})
		return "1 request left, reset in ten years, for " + held(d), 0

	case faultBigRefresh:
		return s.bigRefresh(hold()), 0
	}
	panic("unknown fault " + f.Kind)
}

// githubFault makes every GitHub answer f for d.
func (s *soak) githubFault(kind string, f fakegithub.Fault, d time.Duration) {
	s.locked(func() { s.githubNow = kind })
	s.gh.Stick(fakegithub.AnyRepo, f)
	time.Sleep(d)
	s.gh.Unstick(fakegithub.AnyRepo)
	s.locked(func() { s.githubNow = "" })
}

// primaryAddr is the primary the sentinels name, "" (a problem of the
// harness) when they do not answer.
func (s *soak) primaryAddr() string {
	addr, err := s.sentinels[0].MasterAddr()
	if err != nil {
		s.problem("ask a sentinel for the primary: %v", err)
	}
	return addr
}

// query sends a command to the Redis at addr; an error is a problem of the
// harness.
func (s *soak) query(addr string, args ...string) (any, bool) {
	v, err := redistest.Query(addr, args...)
	if err != nil {
		s.problem("%s on %s: %v", strings.Join(args[:min(2, len(args))], " "), addr, err)
	}
	return v, err == nil
}

// tamper writes to one app's hash what no honest poller writes, with a tag
// that was never published, so that an answer serving it is a bad one:
// faultAhead, a fetch and a claim from a clock an hour ahead; faultPoison, a
// release whose download URL is in another repository; faultOversized, a
// 16 MiB release. It measures how long until a poller's write replaced it,
// which the rules bound by the next tick of any poller (repairBound).
func (s *soak) tamper(kind string) string {
	addr := s.primaryAddr()
	if addr == "" {
		return "no primary known"
	}
	a := apps[s.faultRand.IntN(len(apps))]
	tag := tagOf(1000 + s.faultRand.IntN(1000))
	rel, err := github.ParseRelease(a, fakegithub.NewRelease(a.Repo, tag).JSON())
	b, err2 := release.Marshal(rel)
	if err = errors.Join(err, err2); err != nil {
		s.problem("the fake's %s %s as stored: %v", a.Repo, tag, err)
		return "no release"
	}
	value, at, what := string(b), time.Now(), ""
	switch kind {
	case faultAhead:
		at, what = at.Add(time.Hour), "a fetch and a claim an hour ahead"
	case faultPoison:
		value = strings.ReplaceAll(value, "/"+a.Repo+"/releases/download/", "/attacker/evil/releases/download/")
		what = "a release whose downloads are in another repository"
	case faultOversized:
		value, what = `{"tag":"`+tag+`","name":"`+strings.Repeat("x", 16<<20)+`"}`, "a 16 MiB release"
	}
	ms, key := strconv.FormatInt(at.UnixMilli(), 10), store.AppKey(a.Key)
	if _, ok := s.query(addr, "HSET", key, "v", "1", "fetched_ms", ms, "etag", `"tampered"`,
		"release", value, "claimed_ms", ms, "by", intruder); !ok {
		return "HSET failed"
	}
	began := time.Now()
	if !testkit.Within(interval+repairBound, func() bool {
		by, err := redistest.Query(addr, "HGET", key, "by")
		return err == nil && by != intruder
	}) {
		s.problem("%s of %s: no poller replaced it within %v", what, a.Key, interval+repairBound)
		return fmt.Sprintf("%s for %s %s: not replaced", what, a.Key, tag)
	}
	took := time.Since(began).Round(time.Millisecond)
	if took > repairBound {
		s.problem("%s of %s replaced after %v, want within the next tick (%v)", what, a.Key, took, repairBound)
	}
	return fmt.Sprintf("%s for %s %s, replaced by a poller after %v", what, a.Key, tag, took)
}

// bigRefresh writes a refresh request with a 16 MiB tag, as an API pod's
// Redis user may, and announces it, for d; then deletes it. Every poller
// reads refresh requests bounded (docs/redis.md, "What a reader refuses"), so
// what the primary sends its clients meanwhile stays far below one copy of
// the field (its replica gets one, by replication, which is not counted).
func (s *soak) bigRefresh(d time.Duration) string {
	addr := s.primaryAddr()
	if addr == "" {
		return "no primary known"
	}
	a := apps[s.faultRand.IntN(len(apps))]
	key := store.RefreshKey(a.Key)
	sent := func() int64 {
		info, err := redistest.Info(addr, "stats")
		if err != nil {
			s.problem("INFO stats on %s: %v", addr, err)
		}
		all, _ := strconv.ParseInt(info["total_net_output_bytes"], 10, 64)
		repl, _ := strconv.ParseInt(info["total_net_repl_output_bytes"], 10, 64)
		return all - repl
	}
	before := sent()
	if _, ok := s.query(addr, "HSET", key, "v", "1", "at_ms", strconv.FormatInt(time.Now().UnixMilli(), 10),
		"tag", strings.Repeat("x", 16<<20), "by", "intruder"); !ok {
		return "HSET failed"
	}
	s.query(addr, "PUBLISH", store.RefreshChannel, a.Key)
	time.Sleep(d)
	out := sent() - before
	s.query(addr, "DEL", key)
	if out > 4<<20 {
		s.problem("a 16 MiB refresh request of %s: the primary sent its clients %d bytes meanwhile, want far less than the field", a.Key, out)
	}
	return fmt.Sprintf("a 16 MiB refresh request of %s for %v: the primary sent its clients %d bytes meanwhile", a.Key, d.Round(time.Millisecond), out)
}

// killPrimary kills the primary with SIGKILL, waits until every sentinel
// names the replica, and starts the old primary again, empty, as a replica of
// the new one, waiting until it is in sync.
func (s *soak) killPrimary() string {
	old := s.primaryAddr()
	victim, promoted := s.primary, s.replica
	switch old {
	case "":
		return "no primary known"
	case s.replica.Addr:
		victim, promoted = s.replica, s.primary
	case s.primary.Addr:
	default:
		s.problem("the sentinels name %s, which the soak did not start", old)
		return "unknown primary"
	}
	began := time.Now()
	victim.Kill()
	if !s.sentinelsAgree(func(st *redistest.Sentinel) bool { a, err := st.MasterAddr(); return err == nil && a == promoted.Addr }) {
		s.problem("no failover to %s within %v of killing %s", promoted.Addr, waitFor, old)
		return "SIGKILL the primary " + old + ": no failover"
	}
	failover := time.Since(began)
	victim.RestartAsReplicaOf(promoted.Addr)
	if !testkit.Within(waitFor, victim.Synced) {
		s.problem("%s did not come back as a replica of %s within %v", old, promoted.Addr, waitFor)
	}
	return fmt.Sprintf("SIGKILL the primary %s; sentinels promoted %s after %v; old primary back as a replica after %v",
		old, promoted.Addr, failover.Round(time.Millisecond), time.Since(began).Round(time.Millisecond))
}

// sentinelsAgree waits, at most waitFor, until ok holds for every sentinel.
func (s *soak) sentinelsAgree(ok func(*redistest.Sentinel) bool) bool {
	return testkit.Within(waitFor, func() bool {
		return !slices.ContainsFunc(s.sentinels, func(st *redistest.Sentinel) bool { return !ok(st) })
	})
}

// waitHealthyReplica waits until every sentinel sees one healthy replica, so
// that a failover has one to promote.
func (s *soak) waitHealthyReplica() {
	if !s.sentinelsAgree(func(st *redistest.Sentinel) bool { rs, err := st.Replicas(); return err == nil && len(rs) == 1 }) {
		states := make([]string, len(s.sentinels))
		for i, st := range s.sentinels {
			states[i] = st.State()
		}
		s.problem("the sentinels did not all see a healthy replica within %v:\n%s", waitFor, strings.Join(states, "\n"))
	}
}

// flush sends FLUSHALL to the primary and measures how long until every
// app's entry is back (the backoff hash is deleted on a good round anyway).
func (s *soak) flush() string {
	addr := s.primaryAddr()
	if addr == "" {
		return "no primary known"
	}
	exists := []string{"EXISTS"}
	for _, a := range apps {
		exists = append(exists, store.AppKey(a.Key))
	}
	at := time.Now()
	if _, ok := s.query(addr, "FLUSHALL"); !ok {
		return "FLUSHALL failed"
	}
	// Wait well past the bound, so that the figure says how long it took.
	rep := flushRepair{At: at, Repaired: testkit.Within(interval+repairBound, func() bool {
		n, err := redistest.Query(addr, exists...)
		return err == nil && n == int64(len(apps))
	})}
	rep.Took = time.Since(at)
	s.locked(func() { s.flushes = append(s.flushes, rep) })
	if !rep.Repaired {
		return fmt.Sprintf("FLUSHALL on %s: entries not all back after %v", addr, rep.Took.Round(time.Millisecond))
	}
	return fmt.Sprintf("FLUSHALL on %s: every entry back after %v", addr, rep.Took.Round(time.Millisecond))
}

// The webhook the soak delivers: GitHub's, for every release it publishes.
const (
	webhookPath   = "/v1/craft_apps/github_webhook"
	webhookSecret = "the soak's webhook secret"
	// floodSenders hold unsigned bodies against one pod during an
	// unsigned-body flood; replayers send one signed body under new ids
	// during a replay storm.
	floodSenders = 100
	replayers    = 8
)

var deliveryIDs atomic.Int64

// webhookClient delivers as GitHub does: one request at a time, short.
var webhookClient = &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{Proxy: nil}}

// webhookDelivery is one delivery the soak made for a release it published.
type webhookDelivery struct {
	App    string    `json:"app"`
	Repo   string    `json:"repo"`
	Tag    string    `json:"tag"`
	At     time.Time `json:"at"`
	Status int       `json:"status"`
}

// releaseEvent is a release event's body for repo's tag, as GitHub sends it.
func releaseEvent(action, repo, tag string, n int) []byte {
	return fmt.Appendf(nil, `{"action":%q,"n":%d,"release":%s,"repository":{"full_name":%q},"sender":{"login":"release-bot"}}`,
		action, n, fakegithub.NewRelease(repo, tag).JSON(), repo)
}

// post sends body to pod as a signed delivery of a release event under id,
// and returns the status (0: no answer).
func post(pod *proc, id string, body []byte) int {
	req, err := http.NewRequest(http.MethodPost, pod.base+webhookPath, bytes.NewReader(body))
	if err != nil {
		return 0
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set(webhook.EventHeader, webhook.EventRelease)
	req.Header.Set(webhook.DeliveryHeader, id)
	req.Header.Set(webhook.SignatureHeader, webhook.Sign(webhookSecret, body))
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
	id := fmt.Sprintf("soak-%d", deliveryIDs.Add(1))
	status := post(s.pods[p.N%len(s.pods)], id, releaseEvent("published", repo, p.Tag, p.N))
	s.locked(func() {
		s.deliveries = append(s.deliveries, webhookDelivery{App: p.App, Repo: repo, Tag: p.Tag, At: p.At, Status: status})
	})
}

// floodUnsigned holds floodSenders connections against a pod for d, each
// announcing a body of webhook.MaxBody with a junk signature and sending its
// start, renewed as the pod answers or closes them.
func (s *soak) floodUnsigned(d time.Duration) string {
	pod := s.pods[s.faultRand.IntN(len(s.pods))]
	head := fmt.Sprintf("POST %s HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: %d\r\n%s: release\r\n%s: sha256=%s\r\n\r\n",
		webhookPath, webhook.MaxBody, webhook.EventHeader, webhook.SignatureHeader, strings.Repeat("0", 64))
	chunk := bytes.Repeat([]byte("a"), 64<<10)
	end := time.Now().Add(d)
	var sent atomic.Int64
	var wg sync.WaitGroup
	for range floodSenders {
		wg.Go(func() {
			for time.Now().Before(end) {
				c, err := net.DialTimeout("tcp", strings.TrimPrefix(pod.base, "http://"), time.Second)
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
	addr := s.primaryAddr()
	if addr == "" {
		return "no primary known"
	}
	a := apps[s.faultRand.IntN(len(apps))]
	var n int
	s.locked(func() { n = s.latest[a.Key] })
	storm := fmt.Sprintf("replay-%d-", deliveryIDs.Add(1))
	body := releaseEvent("edited", a.Repo, tagOf(n), -int(deliveryIDs.Add(1))) // a body no other delivery sends
	start := time.Now()
	var sent, accepted atomic.Int64
	var wg sync.WaitGroup
	for i := range replayers {
		wg.Go(func() {
			for j := 0; time.Since(start) < d; j++ {
				if post(s.pods[(i+j)%len(s.pods)], fmt.Sprintf("%s%d-%d", storm, i, j), body) == http.StatusAccepted {
					accepted.Add(1)
				}
				sent.Add(1)
			}
		})
	}
	wg.Wait()
	s.locked(func() {
		s.replayed = append(s.replayed, webhookDelivery{App: a.Key, Repo: a.Repo, Tag: tagOf(n), At: start, Status: http.StatusAccepted})
	})
	keys, ok := s.query(addr, "KEYS", store.DeliveryKey(storm+"*"))
	kept, _ := keys.([]any)
	if !ok {
		return "KEYS failed"
	}
	// A failover or a flush meanwhile can only remove keys.
	if len(kept) > 1 {
		s.problem("a replay storm of %d deliveries of one body under new ids kept %d of the ids, want at most the first", sent.Load(), len(kept))
	}
	return fmt.Sprintf("one signed body of %s replayed %d times under new ids (%d answered 202), %d of the ids kept in Redis",
		a.Key, sent.Load(), accepted.Load(), len(kept))
}
