package e2e

import (
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/storytold/craft-releases/pkg/redis/store"
	"github.com/storytold/craft-releases/pkg/release"
	"github.com/storytold/craft-releases/test/fakegithub"
	"github.com/storytold/craft-releases/test/redistest"
	"github.com/storytold/craft-releases/test/testkit"
)

// A failover is a Redis topology with pollers and pods serving through it,
// and the kill of the primary that holds photocraft's key.
type failover struct {
	url    string              // without credentials: runFailover adds the users'
	caFile string              // REDIS_TLS_CA_FILE for a rediss:// url
	nodes  []*redistest.Server // primaries and replicas, where the binaries' users are made
	// kill SIGKILLs the primary of key and returns it, and what reports
	// that its replica was promoted.
	kill func(key string) (killed *redistest.Server, promoted func() bool)
}

// topologies are a Cluster of 3 primaries with a replica each and a primary
// with a replica and 3 sentinels, each in plain text and on TLS only, with a
// CA of the test's.
var topologies = []struct {
	name          string
	sentinel, tls bool
}{{"cluster", false, false}, {"cluster-tls", false, true}, {"sentinel", true, false}, {"sentinel-tls", true, true}}

// newFailover starts a topology of topologies.
func newFailover(tb testing.TB, sentinel, onTLS bool) failover {
	var f failover
	var ca *redistest.CA
	if onTLS {
		ca = redistest.NewCA(tb)
		f.caFile = ca.File
	}
	if !sentinel {
		var c *redistest.Cluster
		if ca != nil {
			c = redistest.StartClusterTLS(tb, ca, 3, 1)
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
	args := []string{"--repl-diskless-sync-delay", "0"}
	var primary *redistest.Server
	if ca != nil {
		primary = redistest.StartTLS(tb, ca, args...) // and so its replica and sentinels
	} else {
		primary = redistest.Start(tb, args...)
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
	bad      []string      // answers that were not 200, or went back in time, meanwhile
	answers  int
	// invalidations is how many invalidations the pods counted between the
	// second release published after the promotion and every pod serving
	// it: as many as pods means client-side caching works through the new
	// primary, not only the safety-net re-read.
	invalidations float64
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
	deployment{gh: gh, url: withUser(f.url, pollerUser, pollerPassword), caFile: f.caFile, apps: testAppsEnv}.pollers(tb, 2)
	pods := deployment{url: withUser(f.url, apiUser, apiPassword), caFile: f.caFile, apps: testAppsEnv}.pods(tb, 2)
	waitTags(tb, want, pods...)

	stopWatch := watchAnswers(pods)
	var denied []string
	readDenied := func(n *redistest.Server, when string) {
		for _, l := range n.Denied() {
			denied = append(denied, n.Addr+when+": "+l)
		}
	}
	for _, n := range f.nodes {
		readDenied(n, " before the kill")
	}
	killed := time.Now()
	dead, promoted := f.kill(store.AppKey("photocraft"))
	testkit.Eventually(tb, "the replica is promoted", promoted)
	fig := failoverFigures{promoted: time.Since(killed)}

	gh.Publish(photocraft, fakegithub.NewRelease(photocraft, "v1.1.0"))
	want["photocraft"] = "v1.1.0"
	waitTags(tb, want, pods...)
	fig.served = time.Since(killed)

	// The first change may reach a pod by the re-read of its reconnection;
	// once every pod served it, every pod read from the new primary, and
	// the next change must come by an invalidation from there.
	before := invalidations(tb, pods)
	gh.Publish(photocraft, fakegithub.NewRelease(photocraft, "v1.2.0"))
	want["photocraft"] = "v1.2.0"
	waitTags(tb, want, pods...)
	fig.invalidations = invalidations(tb, pods) - before
	fig.bad, fig.answers = stopWatch()
	for _, n := range f.nodes {
		if n != dead {
			readDenied(n, "")
		}
	}
	if len(denied) > 0 {
		tb.Errorf("Redis denied the binaries' users (store.PollerACL or store.APIACL lacks a right):\n%s", strings.Join(denied, "\n"))
	}
	return fig
}

// withUser is url, which has no user, with user and password, which need
// no escaping.
func withUser(url, user, password string) string {
	return strings.Replace(url, "://", "://"+user+":"+password+"@", 1)
}

// invalidations is the sum of the pods' craft_api_invalidations_total.
func invalidations(tb testing.TB, pods []*proc) float64 {
	tb.Helper()
	var n float64
	for _, p := range pods {
		n += testkit.Scrape(tb, p.metrics+"/metrics")["craft_api_invalidations_total"]
	}
	return n
}

// watchAnswers asks every pod in a loop until the function it returns is
// called, which returns the answers that were not 200 or that served an app
// fetched earlier than the pod served before, and how many answers there
// were.
func watchAnswers(pods []*proc) func() (bad []string, answers int) {
	done := make(chan struct{})
	var wg sync.WaitGroup
	var mu sync.Mutex
	var bad []string
	answers := 0
	for _, p := range pods {
		wg.Go(func() {
			last := map[string]time.Time{}
			for {
				select {
				case <-done:
					return
				case <-time.After(5 * time.Millisecond):
				}
				var seen []string
				a, err := ask(p.base + infoPath)
				if err == nil && a.status != http.StatusOK {
					err = fmt.Errorf("status %d", a.status)
				}
				if err == nil {
					var info release.Info
					if info, err = testkit.DecodeInfo(a.body); err == nil {
						for app, at := range fetched(info) {
							if at.Before(last[app]) {
								seen = append(seen, fmt.Sprintf("%s: %s went back from %v to %v", p.name, app, last[app], at))
							}
							last[app] = at
						}
					}
				}
				if err != nil {
					seen = append(seen, fmt.Sprintf("%s: %v", p.name, err))
				}
				mu.Lock()
				answers++
				bad = append(bad, seen...)
				mu.Unlock()
			}
		})
	}
	return func() ([]string, int) {
		close(done)
		wg.Wait()
		return bad, answers
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
			f := newFailover(t, tc.sentinel, tc.tls)
			if f.caFile != "" { // a poller and a pod without REDIS_TLS_CA_FILE
				d := deployment{gh: fakegithub.New(t), url: f.url, apps: testAppsEnv, podEnv: map[string]string{"CRAFT_APPS_HYDRATE_TIMEOUT_SECS": "1"}}
				procs := append(d.pollers(t, 1), d.pods(t, 1)...)
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
			fig := runFailover(t, f)
			if len(fig.bad) > 0 {
				t.Errorf("%d of %d answers were not 200 or went back in time:\n%s", len(fig.bad), fig.answers, strings.Join(fig.bad, "\n"))
			}
			if fig.invalidations < 2 {
				t.Errorf("%v invalidations reached the 2 pods after the failover, want one each at least: the change came by the safety-net re-read", fig.invalidations)
			}
			t.Logf("kill → promoted %v, kill → served by every pod %v, %d answers, %d bad, %v invalidations",
				fig.promoted.Round(time.Millisecond), fig.served.Round(time.Millisecond), fig.answers, len(fig.bad), fig.invalidations)
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
				fig = runFailover(b, newFailover(b, tc.sentinel, tc.tls))
			}
			report(b, map[string]float64{"promoted-s": fig.promoted.Seconds(), "served-s": fig.served.Seconds(),
				"bad-answers": float64(len(fig.bad)), "answers": float64(fig.answers)})
		})
	}
}
