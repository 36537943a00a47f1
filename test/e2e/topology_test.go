package e2e

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/storytold/craft-releases/pkg/release"
	"github.com/storytold/craft-releases/pkg/store"
	"github.com/storytold/craft-releases/test/fakegithub"
	"github.com/storytold/craft-releases/test/redistest"
	"github.com/storytold/craft-releases/test/testkit"
)

// A failover is a Redis topology with pollers and pods serving through it,
// and the kill of the primary that holds photocraft's key.
type failover struct {
	url string
	// kill SIGKILLs the primary of key and returns what reports that its
	// replica was promoted.
	kill func(key string) (promoted func() bool)
}

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

// runFailover starts 2 pollers and 2 pods on f.url, waits until they serve
// what the fake GitHub has, watches every pod's answers, kills the primary of
// photocraft's key, waits for the promotion, then publishes a new photocraft
// release and waits until every pod serves it.
func runFailover(tb testing.TB, f failover) failoverFigures {
	tb.Helper()
	gh := fakegithub.New(tb)
	want := publishFirst(gh)
	startPollers(tb, 2, pollerEnv(gh, f.url, testAppsEnv))
	pods := make([]pod, 2)
	for i := range pods {
		env := podEnv(f.url, testAppsEnv)
		env["METRICS_ADDR"] = testkit.FreeAddr(tb)
		pods[i] = pod{start(tb, fmt.Sprintf("api-%d", i+1), binary(tb, "api"), env), "http://" + env["METRICS_ADDR"] + "/metrics"}
	}
	procs := []*proc{pods[0].proc, pods[1].proc}
	waitTags(tb, want, procs...)

	w := watchAnswers(procs)
	killed := time.Now()
	promoted := f.kill(store.AppKey("photocraft"))
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
	return fig
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
				info, err := decodeInfo(a.body)
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

// clusterFailover is a Cluster of 3 primaries with a replica each.
func clusterFailover(tb testing.TB) failover {
	c := redistest.StartCluster(tb, 3, 1)
	return failover{url: c.URL(), kill: func(key string) func() bool {
		primary := c.Primary(key)
		replica := c.ReplicaOf(primary)
		primary.Kill()
		return func() bool { return replica.Role() == "master" }
	}}
}

// sentinelFailover is a primary, a replica and 3 sentinels.
func sentinelFailover(tb testing.TB) failover {
	primary := redistest.Start(tb, "--repl-diskless-sync-delay", "0")
	replica := redistest.StartReplica(tb, primary)
	sentinels := redistest.StartSentinels(tb, "craft", primary, 3, 2)
	return failover{url: redistest.SentinelURL("craft", sentinels...), kill: func(string) func() bool {
		primary.Kill()
		return func() bool {
			addr, err := sentinels[0].MasterAddr()
			return err == nil && addr == replica.Addr && replica.Role() == "master"
		}
	}}
}

// topologies are the failovers of TestFailover and BenchmarkFailover.
func topologies() []struct {
	name  string
	setup func(testing.TB) failover
} {
	return []struct {
		name  string
		setup func(testing.TB) failover
	}{
		{"cluster", clusterFailover},
		{"sentinel", sentinelFailover},
	}
}

// TestFailover: on a Cluster and on Sentinel, SIGKILLing the primary that
// holds photocraft's key promotes its replica; a release published after
// that reaches every pod through the new primary by an invalidation (the
// pods track their reads there, not only re-read every few seconds), and no
// pod answers anything but 200 or goes back in time meanwhile.
func TestFailover(t *testing.T) {
	for _, tc := range topologies() {
		t.Run(tc.name, func(t *testing.T) {
			fig := runFailover(t, tc.setup(t))
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

func decodeInfo(body []byte) (release.Info, error) {
	var info release.Info
	err := json.Unmarshal(body, &info)
	return info, err
}

// BenchmarkFailover reports the figures of one failover of each topology
// (runFailover): kill → promoted and kill → served by every pod, in seconds,
// and the answers that were not 200 or went back in time meanwhile.
//
//	go test -run '^$' -bench Failover ./test/e2e
func BenchmarkFailover(b *testing.B) {
	for _, tc := range topologies() {
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
