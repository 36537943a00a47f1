package soak

import (
	"context"
	"fmt"
	"maps"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/storytold/craft-releases/pkg/config"
	"github.com/storytold/craft-releases/pkg/release"
	"github.com/storytold/craft-releases/test/fakegithub"
	"github.com/storytold/craft-releases/test/redistest"
)

const module = "github.com/storytold/craft-releases"

// The deployment's timings. The rules of docs/scheduling.md derive the rest from
// them, and every bound the soak checks is derived from these in turn.
const (
	interval      = 10 * time.Second // I, CRAFT_APPS_RELEASE_POLL_INTERVAL_SECS
	tick          = time.Second      // CRAFT_APPS_RELEASE_TICK_SECS, ±10 %
	maxBackoff    = 20 * time.Second // CRAFT_APPS_RELEASE_MAX_BACKOFF_SECS
	startupJitter = time.Second      // CRAFT_APPS_RELEASE_STARTUP_JITTER_SECS
	spacing       = 50 * time.Millisecond

	skewMargin  = interval / 4 // M = min(30 s, I/4)
	claimWindow = interval / 2 // C = min(60 s, I/2)
	resetMargin = interval     // R = min(60 s, I)
	longestTick = tick * 11 / 10

	redisCall  = 5 * time.Second // the poller's and the pod's limit on one Redis call
	hydrateNet = 5 * time.Second // a pod's safety-net re-read

	// slack is what the checks allow for a request or a write to travel
	// between a process's clock and the soak's on a loaded machine.
	slack = time.Second

	publishEvery = 3 * time.Second // a new release of some app
	// quietLead is the time before the first fault, after the load began.
	quietLead  = 2 * publishEvery
	masterName = "craft"

	// waitFor bounds a wait for something that must happen (a process to
	// start, a failover); it is a guard against hanging, never a measure.
	waitFor = 30 * time.Second
)

// Bounds of the checks, from the rules.
const (
	// earlyGap: two requests for one app closer than this need a reason
	// (docs/scheduling.md: fresh until I − M, and a failure is retried after
	// min(F·2ⁿ⁻¹, I) − M with F = I here).
	earlyGap = interval - skewMargin - slack

	// repairBound: a flushed entry is written back from memory at the next
	// tick of any poller (docs/operations.md, "Redis flushed"): one tick,
	// plus a round in progress, plus slack.
	repairBound = longestTick + longestTick + slack

	// settleBound: after the last fault, every pod serves every app's latest
	// release within the longest backoff (max backoff +10 %, or a reset plus
	// R), then a due app's next tick (I − M and a tick), a call that timed
	// out on a Redis gone away, a lapsed claim and a pod's safety net.
	settleBound = maxBackoff*11/10 + interval - skewMargin + longestTick + redisCall + claimWindow + hydrateNet + slack

	// Leak bounds per process, from the first scrape to the last (after the
	// load stopped): connections that come and go keep a few goroutines,
	// and a leak of one per request, round or fault grows past these.
	goroutineBound = 50
	heapBound      = 32 << 20

	// rssBound: every process stays within the base manifests' memory
	// limit (deploy/base), whatever Redis holds (a 16 MiB value included).
	rssBound = 128 << 20
)

// settings are what the environment chooses.
type settings struct {
	Duration time.Duration `json:"duration"`
	Seed     uint64        `json:"seed"`
	Report   string        `json:"report"`
}

func readSettings(t *testing.T) settings {
	v := os.Getenv("SOAK_DURATION")
	if v == "" {
		t.Skip("the soak runs in task soak, which sets SOAK_DURATION")
	}
	d, err := time.ParseDuration(v)
	if err != nil || d < 10*time.Second {
		t.Fatalf("SOAK_DURATION=%q: want a duration of at least 10s", v)
	}
	s := settings{Duration: d, Seed: 1, Report: "test/soak/report"}
	if v := os.Getenv("SOAK_SEED"); v != "" {
		n, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			t.Fatalf("SOAK_SEED=%q: want a whole number", v)
		}
		s.Seed = n
	}
	if v := os.Getenv("SOAK_REPORT"); v != "" {
		s.Report = v
	}
	if !filepath.IsAbs(s.Report) {
		root, err := filepath.Abs(filepath.Join("..", "..")) // go test runs in test/soak
		if err != nil {
			t.Fatal(err)
		}
		s.Report = filepath.Join(root, s.Report)
	}
	return s
}

// The apps of the soak: the first five default apps.
var apps = config.DefaultApps()[:5]

func appsEnv() string {
	parts := make([]string, len(apps))
	for i, a := range apps {
		parts[i] = a.Key + "=" + a.Name + "=" + a.Repo
	}
	return strings.Join(parts, ",")
}

// soak is the deployment under test and everything recorded about it.
type soak struct {
	t    *testing.T
	set  settings
	bins string
	logs string // the report's logs directory

	primary, replica *redistest.Server
	sentinels        []*redistest.Sentinel
	redisClock       *redistest.Shift // the redis-servers' clocks, for faultClockStep
	gh               *fakegithub.Server
	ghGates          []*githubGate // per poller slot
	redisGates       []*redisGate  // per poller slot

	faultRand, publishRand *rand.Rand

	mu         sync.Mutex
	pollers    []*proc // current instance per slot (index slot-1)
	instances  map[string]int
	procs      []*proc // every instance ever started
	pods       []*proc
	published  []publication
	deliveries []webhookDelivery
	replayed   []webhookDelivery // each replay storm's body, delivered new once
	latest     map[string]int    // app key → its latest release number
	answers    []podAnswer
	requests   []ghRequest
	faults     []fault
	githubNow  string // the GitHub fault in force
	stats      map[string][]processStats
	flushes    []flushRepair
	problems   []string // failures of the harness itself (no failover, …)
	began      time.Time
	loadEnded  time.Time
	faultsEnd  time.Time
	settled    time.Time
}

// publication is one release the fake GitHub started serving.
type publication struct {
	App string    `json:"app"`
	N   int       `json:"n"`
	Tag string    `json:"tag"`
	At  time.Time `json:"at"`
}

func tagOf(n int) string { return "v2.0." + strconv.Itoa(n) }

// numberOf is the release number of a tag the soak published, or 0.
func numberOf(tag string) int {
	n, err := strconv.Atoi(strings.TrimPrefix(tag, "v2.0."))
	if err != nil || !strings.HasPrefix(tag, "v2.0.") {
		return 0
	}
	return n
}

func TestSoak(t *testing.T) {
	set := readSettings(t)
	for _, name := range reportFiles { // only what a soak writes, whatever SOAK_REPORT names
		if err := os.RemoveAll(filepath.Join(set.Report, name)); err != nil {
			t.Fatal(err)
		}
	}
	s := &soak{
		t: t, set: set, bins: t.TempDir(), logs: filepath.Join(set.Report, "logs"),
		faultRand:   rand.New(rand.NewPCG(set.Seed, 1)),
		publishRand: rand.New(rand.NewPCG(set.Seed, 2)),
		instances:   make(map[string]int),
		latest:      make(map[string]int),
		stats:       make(map[string][]processStats),
	}
	if err := os.MkdirAll(s.logs, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Logf("soak: %v, seed %d, report in %s", set.Duration, set.Seed, set.Report)
	if err := buildBinaries(s.bins); err != nil {
		t.Fatal(err)
	}
	s.startRedis()
	s.startGitHub()
	s.startFleet()
	s.warmUp()

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var wg sync.WaitGroup
	s.began = time.Now()
	for _, p := range s.allLive() {
		s.sample(p)
	}
	loadCtx, stopLoad := context.WithCancel(ctx)
	wg.Go(func() { s.load(loadCtx) })
	wg.Go(func() { s.sampleLoop(loadCtx) })
	pubCtx, stopPublishing := context.WithTimeout(ctx, quietLead+set.Duration)
	published := make(chan struct{})
	go func() { defer close(published); s.publish(pubCtx) }()

	time.Sleep(quietLead) // releases delivered with nothing broken: the webhook path's own lag
	s.injectFaults(set.Duration)
	stopPublishing()
	<-published // settle waits for the last release published
	s.mu.Lock()
	s.faultsEnd = time.Now()
	s.mu.Unlock()
	s.settle()
	time.Sleep(time.Second) // the load sees what settle saw
	stopLoad()
	wg.Wait()
	s.mu.Lock()
	s.loadEnded = time.Now()
	s.mu.Unlock()
	idleLoadClients()
	time.Sleep(time.Second) // let the pods' connection goroutines end
	for _, p := range s.allLive() {
		s.sample(p)
	}

	rep := s.check()
	s.stopAll(&rep)
	s.checkLogs(&rep)
	if err := s.writeReport(&rep); err != nil {
		t.Errorf("write the report: %v", err)
	}
	t.Logf("%s", rep.Summary())
	for _, f := range rep.Failures {
		t.Error(f)
	}
}

// startRedis starts the primary, its replica and three sentinels.
func (s *soak) startRedis() {
	// Either may be the primary later; a primary starts a replica's full sync
	// at once instead of waiting 5 s for more replicas.
	s.redisClock = redistest.NewShift(s.t, 0)
	s.primary = s.redisClock.Start(s.t, "--repl-diskless-sync-delay", "0")
	s.replica = redistest.StartReplica(s.t, s.primary, "--repl-diskless-sync-delay", "0")
	s.sentinels = redistest.StartSentinels(s.t, masterName, s.primary, 3, 2)
}

// servers returns the two redis-servers by address.
func (s *soak) servers() map[string]*redistest.Server {
	return map[string]*redistest.Server{s.primary.Addr: s.primary, s.replica.Addr: s.replica}
}

func (s *soak) sentinelAddrs() []string {
	out := make([]string, len(s.sentinels))
	for i, st := range s.sentinels {
		out[i] = st.Addr
	}
	return out
}

// startGitHub starts the fake GitHub with release 1 of every app, and a gate
// per poller slot.
func (s *soak) startGitHub() {
	s.gh = fakegithub.New(s.t)
	for _, a := range apps {
		s.publishOne(a)
	}
	for slot := 1; slot <= 3; slot++ {
		g, err := newGithubGate(s.gh.URL(),
			func() string { return s.currentName(slot) },
			s.currentGitHubFault,
			func(r ghRequest) { s.mu.Lock(); s.requests = append(s.requests, r); s.mu.Unlock() })
		if err != nil {
			s.t.Fatal(err)
		}
		s.t.Cleanup(g.Close)
		s.ghGates = append(s.ghGates, g)
		rg, err := newRedisGate(s.sentinelAddrs(), []string{s.primary.Addr, s.replica.Addr})
		if err != nil {
			s.t.Fatal(err)
		}
		s.t.Cleanup(rg.Close)
		s.redisGates = append(s.redisGates, rg)
	}
}

func (s *soak) publishOne(a release.App) publication {
	s.mu.Lock()
	n := s.latest[a.Key] + 1
	s.mu.Unlock()
	s.gh.Publish(a.Repo, fakegithub.NewRelease(a.Repo, tagOf(n)))
	p := publication{App: a.Key, N: n, Tag: tagOf(n), At: time.Now()}
	s.mu.Lock()
	s.latest[a.Key] = n
	s.published = append(s.published, p)
	s.mu.Unlock()
	return p
}

// publishAndDeliver publishes a new release of a and delivers its webhook.
func (s *soak) publishAndDeliver(a release.App) {
	s.deliverRelease(s.publishOne(a), a.Repo)
}

// publish makes a new release of a random app every publishEvery until ctx
// ends, and delivers its webhook.
func (s *soak) publish(ctx context.Context) {
	every(ctx, publishEvery, func() { s.publishAndDeliver(apps[s.publishRand.IntN(len(apps))]) })
}

// every calls fn every d until ctx ends.
func every(ctx context.Context, d time.Duration, fn func()) {
	tk := time.NewTicker(d)
	defer tk.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tk.C:
			fn()
		}
	}
}

func (s *soak) currentGitHubFault() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.githubNow
}

func (s *soak) currentName(slot int) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if slot > len(s.pollers) || s.pollers[slot-1] == nil {
		return fmt.Sprintf("poller-%d#?", slot)
	}
	return s.pollers[slot-1].name
}

// pollerEnv is the environment of the poller in slot: the sentinel URL of its
// Redis gate and its GitHub gate.
func (s *soak) pollerEnv(slot int) map[string]string {
	g := s.redisGates[slot-1]
	addrs := make([]string, len(s.sentinels))
	for i, st := range s.sentinels {
		addrs[i] = g.Addr(st.Addr)
	}
	return map[string]string{
		"REDIS_URL":                              redistest.SentinelURLOf(masterName, addrs...),
		"CRAFT_APPS_RELEASE_APPS":                appsEnv(),
		"CRAFT_APPS_RELEASE_GITHUB_API_URL":      s.ghGates[slot-1].URL(),
		"CRAFT_APPS_RELEASE_POLL_INTERVAL_SECS":  strconv.Itoa(int(interval / time.Second)),
		"CRAFT_APPS_RELEASE_TICK_SECS":           strconv.Itoa(int(tick / time.Second)),
		"CRAFT_APPS_RELEASE_MAX_BACKOFF_SECS":    strconv.Itoa(int(maxBackoff / time.Second)),
		"CRAFT_APPS_RELEASE_STARTUP_JITTER_SECS": strconv.Itoa(int(startupJitter / time.Second)),
		"CRAFT_APPS_RELEASE_REQUEST_SPACING_MS":  strconv.Itoa(int(spacing / time.Millisecond)),
		"SHUTDOWN_TIMEOUT_SECS":                  "5",
	}
}

func (s *soak) podEnv() map[string]string {
	return map[string]string{
		"REDIS_URL":                         redistest.SentinelURL(masterName, s.sentinels...),
		"CRAFT_APPS_RELEASE_APPS":           appsEnv(),
		"CRAFT_APPS_HYDRATE_TIMEOUT_SECS":   "10",
		"SHUTDOWN_TIMEOUT_SECS":             "5",
		"CRAFT_APPS_RELEASE_WEBHOOK_SECRET": webhookSecret,
	}
}

// startPoller starts a new instance of the poller in slot.
func (s *soak) startPoller(slot int) error {
	s.mu.Lock()
	s.instances["poller-"+strconv.Itoa(slot)]++
	name := fmt.Sprintf("poller-%d#%d", slot, s.instances["poller-"+strconv.Itoa(slot)])
	s.mu.Unlock()
	p, err := launch(name, "poller", slot, filepath.Join(s.bins, "poller"),
		filepath.Join(s.logs, fmt.Sprintf("poller-%d.log", slot)), s.pollerEnv(slot))
	if err != nil {
		return err
	}
	s.mu.Lock()
	for len(s.pollers) < slot {
		s.pollers = append(s.pollers, nil)
	}
	s.pollers[slot-1] = p
	s.procs = append(s.procs, p)
	s.mu.Unlock()
	return nil
}

func (s *soak) startFleet() {
	for slot := 1; slot <= 3; slot++ {
		if err := s.startPoller(slot); err != nil {
			s.t.Fatal(err)
		}
	}
	for slot := 1; slot <= 3; slot++ {
		p, err := launch(fmt.Sprintf("api-%d#1", slot), "api", slot, filepath.Join(s.bins, "api"),
			filepath.Join(s.logs, fmt.Sprintf("api-%d.log", slot)), s.podEnv())
		if err != nil {
			s.t.Fatal(err)
		}
		s.mu.Lock()
		s.pods = append(s.pods, p)
		s.procs = append(s.procs, p)
		s.mu.Unlock()
	}
}

// allLive returns every process that runs now.
func (s *soak) allLive() []*proc {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []*proc
	for _, p := range s.procs {
		if p.alive() {
			out = append(out, p)
		}
	}
	return out
}

// warmUp waits until every pod serves release 1 of every app.
func (s *soak) warmUp() {
	deadline := time.Now().Add(waitFor)
	for _, p := range s.pods {
		for {
			info, err := getInfo(defaultClient, p)
			if err == nil && servesAll(info, 1) {
				break
			}
			if time.Now().After(deadline) {
				s.t.Fatalf("%s does not serve release 1 of every app %v after start-up: %v", p.name, waitFor, err)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
}

// settle waits, at most settleBound, until every pod serves the latest
// release of every app.
func (s *soak) settle() {
	deadline := time.Now().Add(settleBound)
	for {
		s.mu.Lock()
		latest := maps.Clone(s.latest)
		s.mu.Unlock()
		all := true
		for _, p := range s.pods {
			info, err := getInfo(defaultClient, p)
			if err != nil || !servesLatest(info, latest) {
				all = false
				break
			}
		}
		if all {
			s.mu.Lock()
			s.settled = time.Now()
			s.mu.Unlock()
			return
		}
		if time.Now().After(deadline) {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// sampleLoop scrapes every live process every two seconds until ctx ends.
func (s *soak) sampleLoop(ctx context.Context) {
	every(ctx, 2*time.Second, func() {
		for _, p := range s.allLive() {
			s.sample(p)
		}
	})
}

func (s *soak) sample(p *proc) {
	st, err := scrape(p)
	if err != nil {
		return // a process killed a moment ago; a live one is scraped again
	}
	s.mu.Lock()
	s.stats[p.name] = append(s.stats[p.name], st)
	s.mu.Unlock()
}

// stopAll stops every process with SIGTERM; a process that does not exit 0
// is a failure (a killed poller instance was already gone).
func (s *soak) stopAll(rep *report) {
	s.mu.Lock()
	procs := slices.Clone(s.procs)
	s.mu.Unlock()
	var wg sync.WaitGroup
	errs := make([]error, len(procs))
	for i, p := range procs {
		wg.Go(func() { errs[i] = p.stop() })
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			rep.fail("%s did not stop cleanly: %v", procs[i].name, err)
		}
	}
}

func (s *soak) problem(format string, args ...any) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.problems = append(s.problems, fmt.Sprintf(format, args...))
}
