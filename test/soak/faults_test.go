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

// The kinds of fault the checks tell apart.
const (
	faultPollerKill  = "poller-kill"
	faultPrimaryKill = "primary-kill"
	faultFlush       = "flushall"
	faultSilent      = "redis-silent"
	faultGitHub500   = "github-500"
	faultRateLimit   = "github-rate-limit"
	faultGarbage     = "github-garbage"
	faultClockStep   = "redis-clock-step"
)

// faultRun injects a fault, holds it for hold() if it lasts, puts the system
// back and says what it did; it records in f the poller slot it hit and a step.
type faultRun func(s *soak, f *fault, hold func() time.Duration) string

// faultTable holds every kind of fault, in the order of the legend.
var faultTable = []struct {
	kind string
	run  faultRun
}{
	{faultPollerKill, func(s *soak, f *fault, _ func() time.Duration) string {
		slot, pause := 1+s.faultRand.IntN(3), time.Duration(300+s.faultRand.IntN(1700))*time.Millisecond
		var p *proc
		s.locked(func() { p = s.pollers[slot-1] })
		p.kill()
		time.Sleep(pause)
		if err := s.startProc("poller", slot); err != nil {
			s.problem("restart poller %d: %v", slot, err)
		}
		f.Slot = slot
		return fmt.Sprintf("SIGKILL %s, started again after %v", p.name, pause)
	}},
	{faultPrimaryKill, onPrimary((*soak).killPrimary)},
	{faultFlush, onPrimary((*soak).flush)},
	{faultSilent, func(s *soak, f *fault, hold func() time.Duration) string {
		f.Slot = 1 + s.faultRand.IntN(3)
		g := s.redisGates[f.Slot-1]
		return fmt.Sprintf("redis silent for poller-%d for %s", f.Slot, held(holding(hold(), g.Stall, g.Resume)))
	}},
	{faultGitHub500, githubAnswers(func(time.Duration) []ghAnswer { return []ghAnswer{{"500", fakegithub.ServerError()}} })},
	{"github-slow", githubAnswers(func(delay time.Duration) []ghAnswer {
		return []ghAnswer{{"held back " + delay.String(), fakegithub.Slow(delay)}}
	})},
	{faultRateLimit, func(s *soak, f *fault, hold func() time.Duration) string {
		// The reset is announced in whole seconds; the window ends there.
		reset := time.Now().Add(hold()).Truncate(time.Second).Add(time.Second)
		s.githubFault(f.Kind, fakegithub.RateLimit(reset), time.Until(reset))
		return "rate limited, reset at " + reset.Format("15:04:05")
	}},
	{faultGarbage, githubAnswers(func(time.Duration) []ghAnswer {
		return []ghAnswer{
			{"200 with JSON cut off", fakegithub.Malformed()},
			{"200 with an HTML page", fakegithub.Raw("<html><body>Unicorn!</body></html>")},
			{"200 with wrong types", fakegithub.Raw(`{"tag_name":5,"assets":"none","draft":"no"}`)},
			{"200 with a release one byte over the size limit", fakegithub.Oversized(github.MaxBody + 1)},
		}
	})},
	// Shorter than an interval: a blip, which must cost no release.
	{"github-404", githubAnswers(func(time.Duration) []ghAnswer { return []ghAnswer{{"404", fakegithub.Status(http.StatusNotFound)}} })},
	{"redis-clock-ahead", onPrimary((*soak).tamper)},
	{"redis-poison", onPrimary((*soak).tamper)},
	{"redis-oversized", onPrimary((*soak).tamper)},
	{"webhook-unsigned-flood", func(s *soak, _ *fault, hold func() time.Duration) string { return s.floodUnsigned(hold()) }},
	{"webhook-replay-storm", onPrimary((*soak).replayStorm)},
	{faultClockStep, func(s *soak, f *fault, hold func() time.Duration) string {
		// Both ways: ahead, then back to the true time; or back, then ahead to it.
		d := hold()
		f.Step = time.Hour * time.Duration(1-2*s.faultRand.IntN(2))
		holding(d, func() { s.redisClock.Set(f.Step) }, func() { s.redisClock.Set(0) })
		return fmt.Sprintf("redis's clock %v off for %s, then put right", f.Step, held(d))
	}},
	{"github-quota-far", func(s *soak, _ *fault, hold func() time.Duration) string {
		// Believed, a quota nearly spent with a reset ten years away would
		// pace the fleet to an interval of decades.
		d := holding(hold(), func() {
			s.gh.SetQuota(fakegithub.Quota{Limit: 5000, Remaining: 1, Reset: time.Now().AddDate(10, 0, 0)})
		},
			func() {
				s.gh.SetQuota(fakegithub.Quota{Limit: 5000, Remaining: 4999, Reset: time.Now().Add(time.Hour)})
			})
		return "1 request left, reset in ten years, for " + held(d)
	}},
	{"redis-oversized-refresh", onPrimary((*soak).bigRefresh)},
}

// faultKinds are the kinds of faultTable, in its order.
var faultKinds = func() (kinds []string) {
	for _, k := range faultTable {
		kinds = append(kinds, k.kind)
	}
	return kinds
}()

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

func (f fault) window() window { return window{f.Start, f.End} }

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
	longest := 6 * time.Second
	if d < time.Minute { // a short soak holds each fault for less, so that it sees every kind
		longest = 2500 * time.Millisecond
	}
	var cycle []int
	for {
		time.Sleep(time.Duration(250+s.faultRand.IntN(750)) * time.Millisecond)
		if time.Until(end) < 2*time.Second {
			time.Sleep(max(time.Until(end), 0))
			return
		}
		if len(cycle) == 0 {
			cycle = make([]int, len(faultTable))
			for i := range cycle {
				cycle[i] = i
			}
			s.faultRand.Shuffle(len(cycle), func(i, j int) { cycle[i], cycle[j] = cycle[j], cycle[i] })
		}
		k := faultTable[cycle[0]]
		if cycle = cycle[1:]; k.kind == faultPrimaryKill {
			s.waitHealthyReplica() // the last failover's replica, before a new one
		}
		f, upTo := fault{Kind: k.kind, Start: time.Now()}, min(time.Until(end), longest)
		f.Detail = k.run(s, &f, func() time.Duration { // 1.5 s … upTo
			return 1500*time.Millisecond + time.Duration(s.faultRand.Int64N(int64(max(upTo-1500*time.Millisecond, time.Millisecond))))
		})
		f.End = time.Now()
		s.locked(func() { s.faults = append(s.faults, f) })
		s.t.Logf("fault %-17s %5.1fs  %s", f.Kind, f.End.Sub(f.Start).Seconds(), f.Detail)
	}
}

func held(d time.Duration) string { return d.Round(time.Millisecond).String() }

// holding runs start, waits d, runs stop and returns d.
func holding(d time.Duration, start, stop func()) time.Duration {
	start()
	time.Sleep(d)
	stop()
	return d
}

// onPrimary runs fn on the primary the sentinels name, if they name one.
func onPrimary(fn func(s *soak, f *fault, addr string, hold func() time.Duration) string) faultRun {
	return func(s *soak, f *fault, hold func() time.Duration) string {
		addr, err := s.sentinels[0].MasterAddr()
		if err != nil {
			s.problem("ask a sentinel for the primary: %v", err)
		}
		if addr == "" {
			return "no primary known"
		}
		return fn(s, f, addr, hold)
	}
}

type ghAnswer struct {
	what  string
	fault fakegithub.Fault
}

// githubAnswers makes every GitHub answer one of answers(delay), drawn, for a
// drawn hold.
func githubAnswers(answers func(delay time.Duration) []ghAnswer) faultRun {
	return func(s *soak, f *fault, hold func() time.Duration) string {
		as := answers(time.Duration(1000+s.faultRand.IntN(6000)) * time.Millisecond)
		a, d := as[s.faultRand.IntN(len(as))], hold()
		s.githubFault(f.Kind, a.fault, d)
		return fmt.Sprintf("every answer %s, for %s", a.what, held(d))
	}
}

// githubFault makes every GitHub answer f for d.
func (s *soak) githubFault(kind string, f fakegithub.Fault, d time.Duration) {
	holding(d, func() { s.locked(func() { s.githubNow = kind }); s.gh.Stick(fakegithub.AnyRepo, f) },
		func() { s.gh.Unstick(fakegithub.AnyRepo); s.locked(func() { s.githubNow = "" }) })
}

// redisDo sends a command to the Redis at addr; an error is a problem of the
// harness.
func (s *soak) redisDo(addr string, args ...string) (any, bool) {
	v, err := redistest.Query(addr, args...)
	if err != nil {
		s.problem("%s on %s: %v", strings.Join(args[:min(2, len(args))], " "), addr, err)
	}
	return v, err == nil
}

// repaired waits, well past repairBound so that the figure says how long it
// took, until the reply to args on addr satisfies ok; it returns the time
// since from.
func repaired(from time.Time, addr string, ok func(any) bool, args ...string) (time.Duration, bool) {
	done := testkit.Within(interval+repairBound, func() bool { v, err := redistest.Query(addr, args...); return err == nil && ok(v) })
	return time.Since(from), done
}

// tamper writes to one app's hash what no honest poller writes, with a tag
// that was never published, so that an answer serving it is a bad one:
// redis-clock-ahead, a fetch and a claim from a clock an hour ahead;
// redis-poison, a release whose download URL is in another repository;
// redis-oversized, a 16 MiB release. A poller's write must replace it by the
// next tick of any poller (repairBound).
func (s *soak) tamper(f *fault, addr string, _ func() time.Duration) string {
	a := apps[s.faultRand.IntN(len(apps))]
	tag := tagOf(1000 + s.faultRand.IntN(1000))
	rel, err := github.ParseRelease(a, fakegithub.NewRelease(a.Repo, tag).JSON())
	b, err2 := release.Marshal(rel)
	if err = errors.Join(err, err2); err != nil {
		s.problem("the fake's %s %s as stored: %v", a.Repo, tag, err)
		return "no release"
	}
	value, at, what := string(b), time.Now(), "a fetch and a claim an hour ahead"
	switch f.Kind {
	case "redis-clock-ahead":
		at = at.Add(time.Hour)
	case "redis-poison":
		value = strings.ReplaceAll(value, "/"+a.Repo+"/releases/download/", "/attacker/evil/releases/download/")
		what = "a release whose downloads are in another repository"
	case "redis-oversized":
		value, what = `{"tag":"`+tag+`","name":"`+strings.Repeat("x", 16<<20)+`"}`, "a 16 MiB release"
	}
	ms, key := strconv.FormatInt(at.UnixMilli(), 10), store.AppKey(a.Key)
	if _, ok := s.redisDo(addr, "HSET", key, "v", "1", "fetched_ms", ms, "etag", `"tampered"`,
		"release", value, "claimed_ms", ms, "by", intruder); !ok {
		return "HSET failed"
	}
	took, ok := repaired(time.Now(), addr, func(by any) bool { return by != intruder }, "HGET", key, "by")
	if took = took.Round(time.Millisecond); !ok {
		s.problem("%s of %s: no poller replaced it within %v", what, a.Key, interval+repairBound)
		return fmt.Sprintf("%s for %s %s: not replaced", what, a.Key, tag)
	} else if took > repairBound {
		s.problem("%s of %s replaced after %v, want within the next tick (%v)", what, a.Key, took, repairBound)
	}
	return fmt.Sprintf("%s for %s %s, replaced by a poller after %v", what, a.Key, tag, took)
}

// bigRefresh writes a refresh request with a 16 MiB tag, as an API pod's
// Redis user may, and announces it, for hold(); then deletes it. Every poller
// reads refresh requests bounded (docs/redis.md, "What a reader refuses"), so
// what the primary sends its clients meanwhile stays far below one copy of
// the field (its replica gets one, by replication, which is not counted).
func (s *soak) bigRefresh(_ *fault, addr string, hold func() time.Duration) string {
	d, a := hold(), apps[s.faultRand.IntN(len(apps))]
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
	if _, ok := s.redisDo(addr, "HSET", key, "v", "1", "at_ms", strconv.FormatInt(time.Now().UnixMilli(), 10),
		"tag", strings.Repeat("x", 16<<20), "by", "intruder"); !ok {
		return "HSET failed"
	}
	s.redisDo(addr, "PUBLISH", store.RefreshChannel, a.Key)
	time.Sleep(d)
	out := sent() - before
	s.redisDo(addr, "DEL", key)
	if out > 4<<20 {
		s.problem("a 16 MiB refresh request of %s: the primary sent its clients %d bytes meanwhile, want far less than the field", a.Key, out)
	}
	return fmt.Sprintf("a 16 MiB refresh request of %s for %v: the primary sent its clients %d bytes meanwhile", a.Key, held(d), out)
}

// killPrimary kills the primary old with SIGKILL, waits until every sentinel
// names the replica, and starts the old primary again, empty, as a replica of
// the new one, waiting until it is in sync.
func (s *soak) killPrimary(_ *fault, old string, _ func() time.Duration) string {
	victim, promoted := s.primary, s.replica
	switch old {
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
		old, promoted.Addr, held(failover), held(time.Since(began)))
}

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
func (s *soak) flush(_ *fault, addr string, _ func() time.Duration) string {
	exists := []string{"EXISTS"}
	for _, a := range apps {
		exists = append(exists, store.AppKey(a.Key))
	}
	rep := flushRepair{At: time.Now()}
	if _, ok := s.redisDo(addr, "FLUSHALL"); !ok {
		return "FLUSHALL failed"
	}
	rep.Took, rep.Repaired = repaired(rep.At, addr, func(n any) bool { return n == int64(len(apps)) }, exists...)
	s.locked(func() { s.flushes = append(s.flushes, rep) })
	if !rep.Repaired {
		return fmt.Sprintf("FLUSHALL on %s: entries not all back after %v", addr, held(rep.Took))
	}
	return fmt.Sprintf("FLUSHALL on %s: every entry back after %v", addr, held(rep.Took))
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
// a new delivery id each time, from replayers senders to every pod, for
// hold(), and checks that the storm recorded one delivery id, its first: a
// replay adds no key to Redis.
func (s *soak) replayStorm(_ *fault, addr string, hold func() time.Duration) string {
	d, a := hold(), apps[s.faultRand.IntN(len(apps))]
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
	keys, ok := s.redisDo(addr, "KEYS", store.DeliveryKey(storm+"*"))
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
