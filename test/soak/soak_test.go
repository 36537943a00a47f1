package soak

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
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
	"github.com/storytold/craft-releases/test/testkit"
)

func TestMain(m *testing.M) { os.Exit(redistest.Main(m.Run)) }

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

	publishEvery = 3 * time.Second  // a new release of some app
	quietLead    = 2 * publishEvery // from the start of the load to the first fault
	masterName   = "craft"

	// waitFor bounds a wait for something that must happen (a process to
	// start, a failover); it is a guard against hanging, never a measure.
	waitFor = 30 * time.Second

	infoPath = "/v1/craft_apps/release_info"
	// The load: workersPerPod loops per pod, each asking every loadPace.
	workersPerPod = 2
	loadPace      = 100 * time.Millisecond
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
	s := settings{Duration: d, Seed: 1, Report: cmp.Or(os.Getenv("SOAK_REPORT"), "test/soak/report")}
	if v := os.Getenv("SOAK_SEED"); v != "" {
		if s.Seed, err = strconv.ParseUint(v, 10, 64); err != nil {
			t.Fatalf("SOAK_SEED=%q: want a whole number", v)
		}
	}
	if !filepath.IsAbs(s.Report) {
		if s.Report, err = filepath.Abs(filepath.Join("..", "..", s.Report)); err != nil { // go test runs in test/soak
			t.Fatal(err)
		}
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

// soak is the deployment and everything recorded about it.
type soak struct {
	t          *testing.T
	set        settings
	bins, logs string // the binaries' directory, the report's logs directory

	primary, replica *redistest.Server
	sentinels        []*redistest.Sentinel
	redisClock       *redistest.Shift // the redis-servers' clocks, for faultClockStep
	gh               *fakegithub.Server
	ghGates          []*httptest.Server // per poller slot
	redisGates       []*redisGate       // per poller slot

	faultRand, publishRand *rand.Rand

	mu                                   sync.Mutex
	pollers, procs, pods                 []*proc           // the current poller of each slot (index slot-1), every process started, the pods
	published                            []publication     // every release published
	deliveries, replayed                 []webhookDelivery // each release's webhook; each replay storm's body, delivered new once
	latest                               map[string]int    // app key → its latest release number
	answers                              []podAnswer
	requests                             []ghRequest
	faults                               []fault
	githubNow                            string // the GitHub fault in force
	stats                                map[string][]processStats
	flushes                              []flushRepair
	problems                             []string // failures of the harness itself (no failover, …)
	began, loadEnded, faultsEnd, settled time.Time
}

func (s *soak) locked(fn func()) { s.mu.Lock(); defer s.mu.Unlock(); fn() }

func (s *soak) problem(format string, args ...any) {
	s.locked(func() { s.problems = append(s.problems, fmt.Sprintf(format, args...)) })
}

type publication struct {
	App string    `json:"app"`
	N   int       `json:"n"`
	Tag string    `json:"tag"`
	At  time.Time `json:"at"`
}

func tagOf(n int) string { return "v2.0." + strconv.Itoa(n) }

// numberOf is the release number of a tag the soak published, or 0.
func numberOf(tag string) int {
	if n, err := strconv.Atoi(strings.TrimPrefix(tag, "v2.0.")); err == nil && strings.HasPrefix(tag, "v2.0.") {
		return n
	}
	return 0
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
		faultRand: rand.New(rand.NewPCG(set.Seed, 1)), publishRand: rand.New(rand.NewPCG(set.Seed, 2)),
		pollers: make([]*proc, 3), latest: map[string]int{}, stats: map[string][]processStats{},
	}
	t.Logf("soak: %v, seed %d, report in %s", set.Duration, set.Seed, set.Report)
	if err := errors.Join(os.MkdirAll(s.logs, 0o755), buildBinaries(s.bins)); err != nil {
		t.Fatal(err)
	}
	s.start()
	if err := s.waitServing(waitFor); err != nil {
		t.Fatalf("the pods do not serve release 1 of every app %v after start-up: %v", waitFor, err)
	}

	var wg sync.WaitGroup
	s.began = time.Now()
	s.sampleAll()
	loadCtx, stopLoad := context.WithCancel(context.Background())
	defer stopLoad()
	wg.Go(func() { s.load(loadCtx) })
	wg.Go(func() { every(loadCtx, 2*time.Second, s.sampleAll) })
	pubCtx, stopPublishing := context.WithTimeout(loadCtx, quietLead+set.Duration)
	var publishing sync.WaitGroup
	publishing.Go(func() {
		every(pubCtx, publishEvery, func() { // a new release of a random app, and its webhook
			a := apps[s.publishRand.IntN(len(apps))]
			s.deliverRelease(s.publishOne(a), a.Repo)
		})
	})

	time.Sleep(quietLead) // releases delivered with nothing broken: the webhook path's own lag
	s.injectFaults(set.Duration)
	stopPublishing()
	publishing.Wait() // settle waits for the last release published
	s.locked(func() { s.faultsEnd = time.Now() })
	if s.waitServing(settleBound) == nil {
		s.locked(func() { s.settled = time.Now() })
	}
	time.Sleep(time.Second) // the load sees what settle saw
	stopLoad()
	wg.Wait()
	s.locked(func() { s.loadEnded = time.Now() })
	defaultClient.CloseIdleConnections()
	identityClient.CloseIdleConnections()
	time.Sleep(time.Second) // let the pods' connection goroutines end
	s.sampleAll()

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

// start starts Redis (a primary, its replica and three sentinels), the fake
// GitHub with release 1 of every app, a GitHub gate and a Redis gate per
// poller slot, and the fleet: 3 pollers and 3 API pods.
func (s *soak) start() {
	// Either may be the primary later; a primary starts a replica's full sync
	// at once instead of waiting 5 s for more replicas.
	s.redisClock = redistest.NewShift(s.t, 0)
	s.primary = s.redisClock.Start(s.t, "--repl-diskless-sync-delay", "0")
	s.replica = redistest.StartReplica(s.t, s.primary, "--repl-diskless-sync-delay", "0")
	s.sentinels = redistest.StartSentinels(s.t, masterName, s.primary, 3, 2)
	sentinels := make([]string, len(s.sentinels))
	for i, st := range s.sentinels {
		sentinels[i] = st.Addr
	}
	s.gh = fakegithub.New(s.t)
	for _, a := range apps {
		s.publishOne(a)
	}
	for slot := 1; slot <= 3; slot++ {
		g, err := newGithubGate(s.gh.URL(), func(q *ghRequest) {
			q.Poller = fmt.Sprintf("poller-%d#?", slot)
			s.locked(func() {
				if p := s.pollers[slot-1]; p != nil {
					q.Poller = p.name
				}
				q.Fault = s.githubNow
			})
		}, func(q ghRequest) { s.locked(func() { s.requests = append(s.requests, q) }) })
		rg, err2 := newRedisGate(sentinels, []string{s.primary.Addr, s.replica.Addr})
		if err = errors.Join(err, err2); err != nil {
			s.t.Fatal(err)
		}
		s.t.Cleanup(g.Close)
		s.t.Cleanup(rg.Close)
		s.ghGates, s.redisGates = append(s.ghGates, g), append(s.redisGates, rg)
	}
	for _, role := range []string{"poller", "api"} {
		for slot := 1; slot <= 3; slot++ {
			if err := s.startProc(role, slot); err != nil {
				s.t.Fatal(err)
			}
		}
	}
}

// startProc starts a new instance of the poller or the API pod in slot: a
// poller through its slot's gates, a pod on the sentinels.
func (s *soak) startProc(role string, slot int) error {
	key := role + "-" + strconv.Itoa(slot)
	name := fmt.Sprintf("%s#%d", key, 1+len(slices.DeleteFunc(s.procsNow(), func(p *proc) bool { return !strings.HasPrefix(p.name, key+"#") })))
	env := map[string]string{
		"REDIS_URL":               redistest.SentinelURL(masterName, s.sentinels...),
		"CRAFT_APPS_RELEASE_APPS": appsEnv(),
		"SHUTDOWN_TIMEOUT_SECS":   "5",
	}
	if role == "api" {
		env["CRAFT_APPS_HYDRATE_TIMEOUT_SECS"] = "10"
		env["CRAFT_APPS_RELEASE_WEBHOOK_SECRET"] = webhookSecret
	} else {
		addrs := make([]string, len(s.sentinels))
		for i, st := range s.sentinels {
			addrs[i] = s.redisGates[slot-1].Addr(st.Addr)
		}
		env["REDIS_URL"] = redistest.SentinelURLOf(masterName, addrs...)
		env["CRAFT_APPS_RELEASE_GITHUB_API_URL"] = s.ghGates[slot-1].URL + "/"
		env["CRAFT_APPS_RELEASE_REQUEST_SPACING_MS"] = strconv.Itoa(int(spacing / time.Millisecond))
		for name, d := range map[string]time.Duration{"POLL_INTERVAL": interval, "TICK": tick, "MAX_BACKOFF": maxBackoff, "STARTUP_JITTER": startupJitter} {
			env["CRAFT_APPS_RELEASE_"+name+"_SECS"] = strconv.Itoa(int(d / time.Second))
		}
	}
	p, err := launch(name, role, slot, filepath.Join(s.bins, role), filepath.Join(s.logs, key+".log"), env)
	if err != nil {
		return err
	}
	s.locked(func() {
		s.procs = append(s.procs, p)
		if role == "api" {
			s.pods = append(s.pods, p)
		} else {
			s.pollers[slot-1] = p
		}
	})
	return nil
}

func (s *soak) publishOne(a release.App) publication {
	var n int
	s.locked(func() { n = s.latest[a.Key] + 1 })
	s.gh.Publish(a.Repo, fakegithub.NewRelease(a.Repo, tagOf(n)))
	p := publication{App: a.Key, N: n, Tag: tagOf(n), At: time.Now()}
	s.locked(func() { s.latest[a.Key], s.published = n, append(s.published, p) })
	return p
}

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

// sampleAll scrapes every live process (one killed a moment ago is skipped).
func (s *soak) sampleAll() {
	for _, p := range slices.DeleteFunc(s.procsNow(), func(p *proc) bool { return !p.alive() }) {
		if st, err := scrape(p); err == nil {
			s.locked(func() { s.stats[p.name] = append(s.stats[p.name], st) })
		}
	}
}

// waitServing waits, at most d, until every pod serves a good answer with
// the latest release of every app; it returns why not when they still do not.
func (s *soak) waitServing(d time.Duration) error {
	for deadline := time.Now().Add(d); ; time.Sleep(100 * time.Millisecond) {
		var why error
		for _, p := range s.pods {
			a, latest := s.ask(defaultClient, p), s.latestNow()
			for i := 0; a.Bad == "" && i < len(apps); i++ {
				if k := apps[i].Key; a.Tags[k] < latest[k] {
					a.Bad = fmt.Sprintf("%s is not at %s", k, tagOf(latest[k]))
				}
			}
			if a.Bad != "" && why == nil {
				why = fmt.Errorf("%s: %s", p.name, a.Bad)
			}
		}
		if why == nil || time.Now().After(deadline) {
			return why
		}
	}
}

func (s *soak) latestNow() (latest map[string]int) {
	s.locked(func() { latest = maps.Clone(s.latest) })
	return latest
}

func (s *soak) procsNow() (procs []*proc) {
	s.locked(func() { procs = slices.Clone(s.procs) })
	return procs
}

// stopAll stops every process with SIGTERM; a process that does not exit 0
// is a failure (a killed poller instance was already gone).
func (s *soak) stopAll(rep *report) {
	procs := s.procsNow()
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

// defaultClient asks for gzip and decodes it, as most launchers do;
// identityClient asks for the plain body.
var (
	defaultClient  = &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{Proxy: nil, MaxIdleConnsPerHost: 4}}
	identityClient = &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{Proxy: nil, DisableCompression: true, MaxIdleConnsPerHost: 4}}
)

type podAnswer struct {
	Pod        string
	Start, End time.Time
	Status     int
	Bad        string         // why the answer is not valid; "" when it is
	Tags       map[string]int // app → release number served, 0 for none
	Fetched    map[string]time.Time
}

// load asks every pod with workersPerPod loops, every loadPace, until ctx
// ends, so at most 3 × workersPerPod / loadPace answers a second.
func (s *soak) load(ctx context.Context) {
	var wg sync.WaitGroup
	for _, p := range s.pods {
		for w := range workersPerPod {
			client := []*http.Client{defaultClient, identityClient}[w%2]
			wg.Go(func() {
				every(ctx, loadPace, func() {
					a := s.ask(client, p)
					s.locked(func() { s.answers = append(s.answers, a) })
				})
			})
		}
	}
	wg.Wait()
}

// ask asks pod p once and judges the answer.
func (s *soak) ask(client *http.Client, p *proc) podAnswer {
	a := podAnswer{Pod: p.name, Start: time.Now()}
	answer, status, err := fetchInfo(client, p)
	a.End, a.Status = time.Now(), status
	if err != nil {
		a.Bad = err.Error()
		return a
	}
	info, latest := answer.info, s.latestNow()
	a.Tags, a.Fetched = make(map[string]int, len(apps)), make(map[string]time.Time, len(apps))
	if len(info.ReleaseInfo.Apps) != len(apps) {
		a.Bad = fmt.Sprintf("%d apps listed, want %d", len(info.ReleaseInfo.Apps), len(apps))
	}
	for _, app := range apps {
		ai, ok := info.ReleaseInfo.Apps[app.Key]
		switch {
		case !ok:
			a.Bad = "app " + app.Key + " missing"
		case ai.Name != app.Name || ai.Repo != app.Repo:
			a.Bad = fmt.Sprintf("app %s listed as %q %q", app.Key, ai.Name, ai.Repo)
		case ai.LatestRelease == nil:
			a.Bad = "app " + app.Key + " has no release"
		case numberOf(ai.LatestRelease.Tag) == 0 || numberOf(ai.LatestRelease.Tag) > latest[app.Key]:
			a.Bad = fmt.Sprintf("app %s serves %q, which was never published", app.Key, ai.LatestRelease.Tag)
		case ai.AppLastFetched == nil:
			a.Bad = "app " + app.Key + " has a release and no app_last_fetched"
		case len(ai.LatestRelease.Assets) == 0:
			a.Bad = "app " + app.Key + " has a release without assets"
		case answer.untrusted[app.Key] != nil: // verified against ai.Repo, which is app.Repo
			a.Bad = fmt.Sprintf("app %s serves a release that fails the trust check: %v", app.Key, answer.untrusted[app.Key])
		default:
			a.Tags[app.Key] = numberOf(ai.LatestRelease.Tag)
			a.Fetched[app.Key] = ai.AppLastFetched.Time
		}
	}
	return a
}

// fetchInfo GETs the endpoint and decodes it; anything but a 200 with a JSON
// body that decodes is an error.
func fetchInfo(client *http.Client, p *proc) (*decodedAnswer, int, error) {
	res, body, err := testkit.Ask(client, p.base+infoPath)
	switch {
	case err != nil:
		return nil, 0, err
	case res.StatusCode != http.StatusOK:
		return nil, res.StatusCode, fmt.Errorf("status %d: %.200s", res.StatusCode, body)
	case !strings.HasPrefix(res.Header.Get("Content-Type"), "application/json"):
		return nil, res.StatusCode, fmt.Errorf("content type %q", res.Header.Get("Content-Type"))
	}
	answer, err := decoded.Of(body)
	if err != nil {
		return nil, res.StatusCode, fmt.Errorf("decode %.200q: %w", body, err)
	}
	if !answer.info.Success {
		return nil, res.StatusCode, errors.New("success is false")
	}
	return answer, res.StatusCode, nil
}

// decodedAnswer is what the bytes of an answer say: read-only once made.
type decodedAnswer struct {
	info      release.Info
	untrusted map[string]error // app key → why release.Verify refuses its release
}

// decoded holds the answers decoded last (each some 100 KB), more than the
// pods serve at once between two releases: the load asks each pod ten times
// a second for bytes that mostly did not change since. Each app's release is
// verified against the repository the answer lists for it.
var decoded = testkit.NewMemo(64, func(body []byte) (*decodedAnswer, error) {
	answer := &decodedAnswer{untrusted: make(map[string]error)}
	if err := json.Unmarshal(body, &answer.info); err != nil {
		return nil, err
	}
	for key, ai := range answer.info.ReleaseInfo.Apps {
		if err := release.Verify(release.App{Key: key, Repo: ai.Repo}, ai.LatestRelease); err != nil {
			answer.untrusted[key] = err
		}
	}
	return answer, nil
})
