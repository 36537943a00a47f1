package soak

import (
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/storytold/craft-releases/pkg/github"
	"github.com/storytold/craft-releases/pkg/redis/store"
	"github.com/storytold/craft-releases/pkg/release"
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
	Kind   string    `json:"kind"`
	Start  time.Time `json:"start"`
	End    time.Time `json:"end"`
	Detail string    `json:"detail"`
	Slot   int       `json:"poller_slot,omitempty"` // the poller killed or cut off
	// Step is how far faultClockStep set Redis's clock off, then back.
	Step time.Duration `json:"step_ns,omitempty"`
}

// flushRepair is how long after a FLUSHALL every app's entry was back.
type flushRepair struct {
	At       time.Time     `json:"at"`
	Took     time.Duration `json:"took_ns"`
	Repaired bool          `json:"repaired"`
}

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
		pause := time.Duration(250+s.faultRand.IntN(750)) * time.Millisecond
		time.Sleep(pause)
		if time.Until(end) < 2*time.Second {
			time.Sleep(max(time.Until(end), 0))
			return
		}
		if len(cycle) == 0 {
			cycle = append([]string(nil), faultKinds...)
			s.faultRand.Shuffle(len(cycle), func(i, j int) { cycle[i], cycle[j] = cycle[j], cycle[i] })
		}
		kind := cycle[0]
		cycle = cycle[1:]
		if kind == faultPrimaryKill {
			s.waitHealthyReplica() // the last failover's replica, before a new one
		}
		f := fault{Kind: kind, Start: time.Now()}
		if kind == faultClockStep {
			// Both ways: ahead, then back to the true time; or back, then
			// ahead to it.
			f.Step = time.Hour
			if s.faultRand.IntN(2) == 0 {
				f.Step = -f.Step
			}
		}
		f.Detail, f.Slot = s.inject(kind, f.Step, min(time.Until(end), longest))
		f.End = time.Now()
		s.mu.Lock()
		s.faults = append(s.faults, f)
		s.mu.Unlock()
		s.t.Logf("fault %-17s %5.1fs  %s", kind, f.End.Sub(f.Start).Seconds(), f.Detail)
	}
}

// inject runs one fault of kind, lasting about up to at most, and returns
// what it did and the poller slot it hit (0: none in particular). step is
// faultClockStep's offset.
func (s *soak) inject(kind string, step, upTo time.Duration) (string, int) {
	hold := func() time.Duration { // 1.5 s … upTo
		return 1500*time.Millisecond + time.Duration(s.faultRand.Int64N(int64(max(upTo-1500*time.Millisecond, time.Millisecond))))
	}
	switch kind {
	case faultPollerKill:
		slot := 1 + s.faultRand.IntN(3)
		pause := time.Duration(300+s.faultRand.IntN(1700)) * time.Millisecond
		s.mu.Lock()
		p := s.pollers[slot-1]
		s.mu.Unlock()
		p.kill()
		time.Sleep(pause)
		if err := s.startPoller(slot); err != nil {
			s.problem("restart poller %d: %v", slot, err)
		}
		return fmt.Sprintf("SIGKILL %s, started again after %v", p.name, pause), slot

	case faultPrimaryKill:
		return s.killPrimary(), 0

	case faultFlush:
		return s.flush(), 0

	case faultSilent:
		slot := 1 + s.faultRand.IntN(3)
		d := hold()
		s.redisGates[slot-1].Stall()
		time.Sleep(d)
		s.redisGates[slot-1].Resume()
		return fmt.Sprintf("redis silent for poller-%d for %v", slot, d.Round(time.Millisecond)), slot

	case faultGitHub500:
		d := hold()
		s.githubFault(kind, fakegithub.ServerError(), d)
		return fmt.Sprintf("every request answered 500 for %v", d.Round(time.Millisecond)), 0

	case faultSlow:
		d, delay := hold(), time.Duration(1000+s.faultRand.IntN(6000))*time.Millisecond
		s.githubFault(kind, fakegithub.Slow(delay), d)
		return fmt.Sprintf("every answer held back %v, for %v", delay, d.Round(time.Millisecond)), 0

	case faultRateLimit:
		// The reset is announced in whole seconds; the window ends there.
		reset := time.Now().Add(hold()).Truncate(time.Second).Add(time.Second)
		s.githubFault(kind, fakegithub.RateLimit(reset), time.Until(reset))
		return "rate limited, reset at " + reset.Format("15:04:05"), 0

	case faultGarbage:
		bodies := []struct {
			name  string
			fault fakegithub.Fault
		}{
			{"JSON cut off", fakegithub.Malformed()},
			{"an HTML page", fakegithub.Raw("<html><body>Unicorn!</body></html>")},
			{"wrong types", fakegithub.Raw(`{"tag_name":5,"assets":"none","draft":"no"}`)},
			{"a release one byte over the size limit", fakegithub.Oversized(github.MaxBody + 1)},
		}
		b := bodies[s.faultRand.IntN(len(bodies))]
		d := hold()
		s.githubFault(kind, b.fault, d)
		return fmt.Sprintf("every answer 200 with %s, for %v", b.name, d.Round(time.Millisecond)), 0

	case faultNotFound:
		// Shorter than an interval: a blip, which must cost no release.
		d := hold()
		s.githubFault(kind, fakegithub.Status(http.StatusNotFound), d)
		return fmt.Sprintf("every request answered 404 for %v", d.Round(time.Millisecond)), 0

	case faultAhead, faultPoison, faultOversized:
		return s.tamper(kind), 0

	case faultFlood:
		return s.floodUnsigned(hold()), 0

	case faultClockStep:
		d := hold()
		s.redisClock.Set(step)
		time.Sleep(d)
		s.redisClock.Set(0)
		return fmt.Sprintf("redis's clock %v off for %v, then put right", step, d.Round(time.Millisecond)), 0

	case faultQuotaFar:
		// A quota nearly spent with a reset ten years away: believed, it
		// would pace the fleet to an interval of decades.
		d := hold()
		s.gh.SetQuota(fakegithub.Quota{Limit: 5000, Remaining: 1, Reset: time.Now().AddDate(10, 0, 0)})
		time.Sleep(d)
		s.gh.SetQuota(fakegithub.Quota{Limit: 5000, Remaining: 4999, Reset: time.Now().Add(time.Hour)})
		return fmt.Sprintf("1 request left, reset in ten years, for %v", d.Round(time.Millisecond)), 0

	case faultBigRefresh:
		return s.bigRefresh(hold()), 0

	case faultReplay:
		return s.replayStorm(hold()), 0
	}
	panic("unknown fault " + kind)
}

// tamper writes to one app's hash what no honest poller writes, with a tag
// that was never published, so that an answer serving it is a bad one:
// faultAhead, a fetch and a claim from a clock an hour ahead; faultPoison, a
// release whose download URL is in another repository; faultOversized, a
// 16 MiB release. It measures how long until a poller's write replaced it,
// which the rules bound by the next tick of any poller (repairBound).
func (s *soak) tamper(kind string) string {
	addr, err := s.sentinels[0].MasterAddr()
	if err != nil {
		s.problem("ask a sentinel for the primary: %v", err)
		return "no primary known"
	}
	a := apps[s.faultRand.IntN(len(apps))]
	tag := tagOf(1000 + s.faultRand.IntN(1000))
	rel, err := github.ParseRelease(a, fakegithub.NewRelease(a.Repo, tag).JSON())
	if err != nil {
		s.problem("parse the fake's %s %s: %v", a.Repo, tag, err)
		return "no release"
	}
	b, err := release.Marshal(rel)
	if err != nil {
		s.problem("encode %s: %v", tag, err)
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
	ms := strconv.FormatInt(at.UnixMilli(), 10)
	key := store.AppKey(a.Key)
	if _, err := redistest.Query(addr, "HSET", key, "v", "1", "fetched_ms", ms, "etag", `"tampered"`,
		"release", value, "claimed_ms", ms, "by", intruder); err != nil {
		s.problem("HSET %s on %s: %v", key, addr, err)
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
	took := time.Since(began)
	if took > repairBound {
		s.problem("%s of %s replaced after %v, want within the next tick (%v)", what, a.Key, took.Round(time.Millisecond), repairBound)
	}
	return fmt.Sprintf("%s for %s %s, replaced by a poller after %v", what, a.Key, tag, took.Round(time.Millisecond))
}

// bigRefresh writes a refresh request with a 16 MiB tag, as an API pod's
// Redis user may, and announces it, for d; then deletes it. Every poller
// reads refresh requests bounded (docs/redis.md, "What a reader refuses"), so
// what the primary sends its clients meanwhile stays far below one copy of
// the field (its replica gets one, by replication, which is not counted).
func (s *soak) bigRefresh(d time.Duration) string {
	addr, err := s.sentinels[0].MasterAddr()
	if err != nil {
		s.problem("ask a sentinel for the primary: %v", err)
		return "no primary known"
	}
	a := apps[s.faultRand.IntN(len(apps))]
	key := store.RefreshKey(a.Key)
	sent := func() int64 {
		info, err := redistest.Info(addr, "stats")
		if err != nil {
			s.problem("INFO stats on %s: %v", addr, err)
			return 0
		}
		all, _ := strconv.ParseInt(info["total_net_output_bytes"], 10, 64)
		repl, _ := strconv.ParseInt(info["total_net_repl_output_bytes"], 10, 64)
		return all - repl
	}
	before := sent()
	if _, err := redistest.Query(addr, "HSET", key, "v", "1", "at_ms", strconv.FormatInt(time.Now().UnixMilli(), 10),
		"tag", strings.Repeat("x", 16<<20), "by", "intruder"); err != nil {
		s.problem("HSET %s on %s: %v", key, addr, err)
		return "HSET failed"
	}
	if _, err := redistest.Query(addr, "PUBLISH", store.RefreshChannel, a.Key); err != nil {
		s.problem("PUBLISH on %s: %v", addr, err)
	}
	time.Sleep(d)
	out := sent() - before
	if _, err := redistest.Query(addr, "DEL", key); err != nil {
		s.problem("DEL %s on %s: %v", key, addr, err)
	}
	if out > 4<<20 {
		s.problem("a 16 MiB refresh request of %s: the primary sent its clients %d bytes meanwhile, want far less than the field", a.Key, out)
	}
	return fmt.Sprintf("a 16 MiB refresh request of %s for %v: the primary sent its clients %d bytes meanwhile", a.Key, d.Round(time.Millisecond), out)
}

// githubFault makes every GitHub answer f for d.
func (s *soak) githubFault(kind string, f fakegithub.Fault, d time.Duration) {
	s.mu.Lock()
	s.githubNow = kind
	s.mu.Unlock()
	s.gh.Stick(fakegithub.AnyRepo, f)
	time.Sleep(d)
	s.gh.Unstick(fakegithub.AnyRepo)
	s.mu.Lock()
	s.githubNow = ""
	s.mu.Unlock()
}

// killPrimary kills the primary with SIGKILL, waits until every sentinel
// names the replica, and starts the old primary again, empty, as a replica of
// the new one, waiting until it is in sync.
func (s *soak) killPrimary() string {
	old, err := s.sentinels[0].MasterAddr()
	if err != nil {
		s.problem("ask a sentinel for the primary: %v", err)
		return "no primary known"
	}
	servers := s.servers()
	victim := servers[old]
	if victim == nil {
		s.problem("the sentinels name %s, which the soak did not start", old)
		return "unknown primary"
	}
	var promoted string
	for a := range servers {
		if a != old {
			promoted = a
		}
	}
	began := time.Now()
	victim.Kill()
	if !testkit.Within(waitFor, func() bool {
		for _, st := range s.sentinels {
			if a, err := st.MasterAddr(); err != nil || a != promoted {
				return false
			}
		}
		return true
	}) {
		s.problem("no failover to %s within %v of killing %s", promoted, waitFor, old)
		return "SIGKILL the primary " + old + ": no failover"
	}
	failover := time.Since(began)
	victim.RestartAsReplicaOf(promoted)
	if !testkit.Within(waitFor, victim.Synced) {
		s.problem("%s did not come back as a replica of %s within %v", old, promoted, waitFor)
	}
	return fmt.Sprintf("SIGKILL the primary %s; sentinels promoted %s after %v; old primary back as a replica after %v",
		old, promoted, failover.Round(time.Millisecond), time.Since(began).Round(time.Millisecond))
}

// waitHealthyReplica waits until every sentinel sees one healthy replica, so
// that a failover has one to promote.
func (s *soak) waitHealthyReplica() {
	if !testkit.Within(waitFor, func() bool {
		for _, st := range s.sentinels {
			if rs, err := st.Replicas(); err != nil || len(rs) != 1 {
				return false
			}
		}
		return true
	}) {
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
	addr, err := s.sentinels[0].MasterAddr()
	if err != nil {
		s.problem("ask a sentinel for the primary: %v", err)
		return "no primary known"
	}
	exists := []string{"EXISTS"}
	for _, a := range apps {
		exists = append(exists, store.AppKey(a.Key))
	}
	at := time.Now()
	if _, err := redistest.Query(addr, "FLUSHALL"); err != nil {
		s.problem("FLUSHALL on %s: %v", addr, err)
		return "FLUSHALL failed"
	}
	// Wait well past the bound, so that the figure says how long it took.
	limit := at.Add(interval + repairBound)
	rep := flushRepair{At: at}
	for time.Now().Before(limit) {
		n, err := redistest.Query(addr, exists...)
		if err == nil && n == int64(len(apps)) {
			rep.Took, rep.Repaired = time.Since(at), true
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if !rep.Repaired {
		rep.Took = time.Since(at)
	}
	s.mu.Lock()
	s.flushes = append(s.flushes, rep)
	s.mu.Unlock()
	if !rep.Repaired {
		return fmt.Sprintf("FLUSHALL on %s: entries not all back after %v", addr, rep.Took.Round(time.Millisecond))
	}
	return fmt.Sprintf("FLUSHALL on %s: every entry back after %v", addr, rep.Took.Round(time.Millisecond))
}
