package e2e

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/storytold/craft-releases/pkg/redis/store"
	"github.com/storytold/craft-releases/test/fakegithub"
	"github.com/storytold/craft-releases/test/redistest"
	"github.com/storytold/craft-releases/test/testkit"
)

// A failover is a Redis topology with pollers and pods serving through it,
// and the kill of the primary that holds photocraft's key.
type failover struct {
	url    string // without credentials: runFailover adds the users'
	caFile string // REDIS_TLS_CA_FILE for a rediss:// url
	// nodes are the data nodes (primaries and replicas, not sentinels):
	// the binaries' users are made on each.
	nodes []*redistest.Server
	// kill SIGKILLs the primary of key and returns it, and what reports
	// that its replica was promoted.
	kill func(key string) (killed *redistest.Server, promoted func() bool)
}

// The least-privilege users the binaries run as (store.PollerACL,
// store.APIACL).
const (
	pollerUser, pollerPassword = "craft-poller", "poller-secret"
	apiUser, apiPassword       = "craft-api", "api-secret"
)

// failoverFigures is what runFailover measured.
type failoverFigures struct {
	promoted time.Duration // kill → the replica is a primary
	served   time.Duration // kill → every pod serves the release published after the promotion
	bad      int64         // answers that were not 200, or went back in time, meanwhile
	answers  int64
	badSeen  string // what the bad answers were
	// invalidations is how many invalidations the pods counted between the
	// second release published after the promotion and every pod serving
	// it: as many as pods means client-side caching works through the new
	// primary, not only the safety-net re-read.
	invalidations float64
}

// pod is an API pod with its metrics port.
type pod struct {
	*proc
	metrics string
}

// runFailover makes the binaries' users on every node, starts 2 pollers and
// 2 pods as them on f.url, waits until they serve what the fake GitHub has,
// watches every pod's answers, kills the primary of photocraft's key, waits
// for the promotion, then publishes a new photocraft release and waits until
// every pod serves it. No node may deny the users anything (its ACL LOG, read
// before the kill on the killed node, at the end on the others).
func runFailover(tb testing.TB, f failover) failoverFigures {
	tb.Helper()
	for _, n := range f.nodes {
		n.MustDo(store.SetUser(pollerUser, pollerPassword, store.PollerACL)...)
		n.MustDo(store.SetUser(apiUser, apiPassword, store.APIACL)...)
	}
	gh := fakegithub.New(tb)
	want := publishFirst(gh)
	startPollers(tb, 2, f.env(pollerEnv(gh, withUser(tb, f.url, pollerUser, pollerPassword), testAppsEnv)))
	pods := make([]pod, 2)
	for i := range pods {
		env := f.env(podEnv(withUser(tb, f.url, apiUser, apiPassword), testAppsEnv))
		env["METRICS_ADDR"] = testkit.FreeAddr(tb)
		pods[i] = pod{start(tb, fmt.Sprintf("api-%d", i+1), binary(tb, "api"), env), "http://" + env["METRICS_ADDR"] + "/metrics"}
	}
	procs := []*proc{pods[0].proc, pods[1].proc}
	waitTags(tb, want, procs...)

	w := watchAnswers(procs)
	var denied []string
	for _, n := range f.nodes {
		denied = append(denied, prefixed(n.Addr+" before the kill: ", n.Denied())...)
	}
	killed := time.Now()
	dead, promoted := f.kill(store.AppKey("photocraft"))
	testkit.Eventually(tb, "the replica is promoted", promoted)
	var fig failoverFigures
	fig.promoted = time.Since(killed)

	gh.Publish(photocraft, fakegithub.NewRelease(photocraft, "v1.1.0"))
	want["photocraft"] = "v1.1.0"
	waitTags(tb, want, procs...)
	fig.served = time.Since(killed)

	// The first change may reach a pod by the re-read of its reconnection;
	// once every pod served it, every pod read from the new primary, and
	// the next change must come by an invalidation from there.
	before := invalidations(tb, pods)
	gh.Publish(photocraft, fakegithub.NewRelease(photocraft, "v1.2.0"))
	want["photocraft"] = "v1.2.0"
	waitTags(tb, want, procs...)
	fig.invalidations = invalidations(tb, pods) - before
	fig.bad, fig.answers = w.stop()
	fig.badSeen = w.String()
	for _, n := range f.nodes {
		if n != dead {
			denied = append(denied, prefixed(n.Addr+": ", n.Denied())...)
		}
	}
	if len(denied) > 0 {
		tb.Errorf("Redis denied the binaries' users (store.PollerACL or store.APIACL lacks a right):\n%s", strings.Join(denied, "\n"))
	}
	return fig
}

// env is base with f's REDIS_TLS_CA_FILE.
func (f failover) env(base map[string]string) map[string]string {
	if f.caFile != "" {
		base["REDIS_TLS_CA_FILE"] = f.caFile
	}
	return base
}

// withUser is rawURL with user and password.
func withUser(tb testing.TB, rawURL, user, password string) string {
	tb.Helper()
	u, err := url.Parse(rawURL)
	if err != nil {
		tb.Fatal(err)
	}
	u.User = url.UserPassword(user, password)
	return u.String()
}

func prefixed(prefix string, lines []string) []string {
	out := make([]string, len(lines))
	for i, l := range lines {
		out[i] = prefix + l
	}
	return out
}

// invalidations is the sum of the pods' craft_api_invalidations_total.
func invalidations(tb testing.TB, pods []pod) float64 {
	tb.Helper()
	var n float64
	for _, p := range pods {
		n += testkit.Scrape(tb, p.metrics)["craft_api_invalidations_total"]
	}
	return n
}

// answerWatch asks every pod in a loop and counts the answers that are not
// 200 or that serve an app fetched earlier than it served before.
type answerWatch struct {
	done         chan struct{}
	wg           sync.WaitGroup
	bad, answers atomic.Int64
	mu           sync.Mutex
	badDescribed []string
}

func watchAnswers(pods []*proc) *answerWatch {
	w := &answerWatch{done: make(chan struct{})}
	for _, p := range pods {
		w.wg.Add(1)
		go func() {
			defer w.wg.Done()
			last := map[string]time.Time{}
			for {
				select {
				case <-w.done:
					return
				case <-time.After(5 * time.Millisecond):
				}
				a, err := ask(p.base + infoPath)
				w.answers.Add(1)
				if err != nil || a.status != http.StatusOK {
					w.note(fmt.Sprintf("%s: %v %d", p.name, err, a.status))
					continue
				}
				info, err := testkit.DecodeInfo(a.body)
				if err != nil {
					w.note(fmt.Sprintf("%s: %v", p.name, err))
					continue
				}
				for app, at := range fetched(info) {
					if at.Before(last[app]) {
						w.note(fmt.Sprintf("%s: %s went back from %v to %v", p.name, app, last[app], at))
					}
					last[app] = at
				}
			}
		}()
	}
	return w
}

func (w *answerWatch) note(what string) {
	w.bad.Add(1)
	w.mu.Lock()
	w.badDescribed = append(w.badDescribed, what)
	w.mu.Unlock()
}

func (w *answerWatch) stop() (bad, answers int64) {
	close(w.done)
	w.wg.Wait()
	return w.bad.Load(), w.answers.Load()
}

func (w *answerWatch) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return strings.Join(w.badDescribed, "\n")
}

// clusterFailover is a Cluster of 3 primaries with a replica each; with a
// CA, on TLS only (StartClusterTLS).
func clusterFailover(tb testing.TB, ca *redistest.CA) failover {
	var c *redistest.Cluster
	f := failover{}
	if ca != nil {
		c, f.caFile = redistest.StartClusterTLS(tb, ca, 3, 1), ca.File
	} else {
		c = redistest.StartCluster(tb, 3, 1)
	}
	f.url, f.nodes = c.URL(), c.Nodes
	f.kill = func(key string) (*redistest.Server, func() bool) {
		primary := c.Primary(key)
		replica := c.ReplicaOf(primary)
		primary.Kill()
		return primary, func() bool { return replica.Role() == "master" }
	}
	return f
}

// sentinelFailover is a primary, a replica and 3 sentinels; with a CA, on
// TLS only (StartTLS, and so its replica and sentinels).
func sentinelFailover(tb testing.TB, ca *redistest.CA) failover {
	var primary *redistest.Server
	f := failover{}
	if ca != nil {
		primary, f.caFile = redistest.StartTLS(tb, ca, "--repl-diskless-sync-delay", "0"), ca.File
	} else {
		primary = redistest.Start(tb, "--repl-diskless-sync-delay", "0")
	}
	replica := redistest.StartReplica(tb, primary)
	sentinels := redistest.StartSentinels(tb, "craft", primary, 3, 2)
	f.url, f.nodes = redistest.SentinelURL("craft", sentinels...), []*redistest.Server{primary, replica}
	f.kill = func(string) (*redistest.Server, func() bool) {
		primary.Kill()
		return primary, func() bool {
			addr, err := sentinels[0].MasterAddr()
			return err == nil && addr == replica.Addr && replica.Role() == "master"
		}
	}
	return f
}

// topology is a failover of TestFailover and BenchmarkFailover.
type topology struct {
	name  string
	setup func(testing.TB) failover
}

// topologies are each topology in plain text and on TLS with a CA of the
// test's.
var topologies = []topology{
	{"cluster", func(tb testing.TB) failover { return clusterFailover(tb, nil) }},
	{"cluster-tls", func(tb testing.TB) failover { return clusterFailover(tb, redistest.NewCA(tb)) }},
	{"sentinel", func(tb testing.TB) failover { return sentinelFailover(tb, nil) }},
	{"sentinel-tls", func(tb testing.TB) failover { return sentinelFailover(tb, redistest.NewCA(tb)) }},
}

// refusedWithoutTheCA starts a poller and a pod on f's rediss:// url without
// REDIS_TLS_CA_FILE: each logs that it refused the certificate, and the pod
// is not ready.
func refusedWithoutTheCA(t *testing.T, f failover) {
	t.Helper()
	gh := fakegithub.New(t)
	env := podEnv(f.url, testAppsEnv)
	env["CRAFT_APPS_HYDRATE_TIMEOUT_SECS"] = "1"
	procs := []*proc{
		start(t, "poller-without-the-ca", binary(t, "poller"), pollerEnv(gh, f.url, testAppsEnv)),
		start(t, "api-without-the-ca", binary(t, "api"), env),
	}
	for _, p := range procs {
		testkit.Eventually(t, p.name+" logs the refused certificate", func() bool {
			return strings.Contains(p.logs.String(), "certificate signed by unknown authority")
		})
	}
	if got := procs[1].status("/readyz"); got == http.StatusOK {
		t.Errorf("%s /readyz = %d without the CA, want not ready", procs[1].name, got)
	}
	for _, p := range procs {
		p.stop(t)
	}
}

// TestFailover: on a Cluster and on Sentinel, in plain text and over TLS,
// with the binaries as their least-privilege users, SIGKILLing the primary
// that holds photocraft's key promotes its replica; a release published
// after that reaches every pod through the new primary by an invalidation
// (the pods track their reads there, not only re-read every few seconds), no
// pod answers anything but 200 or goes back in time meanwhile, and no node
// denies the users anything. Over TLS, both binaries refuse the certificate
// without REDIS_TLS_CA_FILE.
func TestFailover(t *testing.T) {
	t.Parallel()
	for _, tc := range topologies {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f := tc.setup(t)
			if f.caFile != "" {
				refusedWithoutTheCA(t, f)
			}
			fig := runFailover(t, f)
			if fig.bad > 0 {
				t.Errorf("%d of %d answers were not 200 or went back in time:\n%s", fig.bad, fig.answers, fig.badSeen)
			}
			if fig.invalidations < 2 {
				t.Errorf("%v invalidations reached the 2 pods after the failover, want one each at least: the change came by the safety-net re-read", fig.invalidations)
			}
			t.Logf("kill → promoted %v, kill → served by every pod %v, %d answers, %d bad, %v invalidations",
				fig.promoted.Round(time.Millisecond), fig.served.Round(time.Millisecond), fig.answers, fig.bad, fig.invalidations)
		})
	}
}

// BenchmarkFailover reports the figures of one failover of each topology
// (runFailover): kill → promoted and kill → served by every pod, in seconds,
// and the answers that were not 200 or went back in time meanwhile.
//
//	CRAFT_TEST_INTEGRATION=1 go test -run '^$' -bench Failover ./test/e2e
func BenchmarkFailover(b *testing.B) {
	for _, tc := range topologies {
		b.Run(tc.name, func(b *testing.B) {
			var fig failoverFigures
			for b.Loop() {
				fig = runFailover(b, tc.setup(b))
			}
			b.ReportMetric(fig.promoted.Seconds(), "promoted-s")
			b.ReportMetric(fig.served.Seconds(), "served-s")
			b.ReportMetric(float64(fig.bad), "bad-answers")
			b.ReportMetric(float64(fig.answers), "answers")
			b.ReportMetric(0, "ns/op")
		})
	}
}
