package e2e

import (
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/storytold/craft-releases/test/fakegithub"
	"github.com/storytold/craft-releases/test/redistest"
	"github.com/storytold/craft-releases/test/testkit"
)

// scaleApps publishes a release of n apps on gh and returns them as
// CRAFT_APPS_RELEASE_APPS takes them.
func scaleApps(gh *fakegithub.Server, n int) string {
	entries := make([]string, n)
	for i := range entries {
		repo := fmt.Sprintf("storytold/craft-%04d", i)
		gh.Publish(repo, fakegithub.NewRelease(repo, fmt.Sprintf("v1.%d.0", i)))
		entries[i] = fmt.Sprintf("craft-%04d=Craft %d=%s", i, i, repo)
	}
	return strings.Join(entries, ",")
}

// standaloneEnv is the environment of an API that polls gh itself with a
// token, every app due at once and no spacing between requests.
func standaloneEnv(gh *fakegithub.Server, apps string) map[string]string {
	return map[string]string{
		"CRAFT_APPS_RELEASE_APPS":                apps,
		"CRAFT_APPS_RELEASE_GITHUB_API_URL":      gh.URL(),
		"CRAFT_APPS_RELEASE_GITHUB_TOKEN":        "e2e-scale-token",
		"CRAFT_APPS_RELEASE_STARTUP_JITTER_SECS": "0",
		"CRAFT_APPS_RELEASE_REQUEST_SPACING_MS":  "0",
		"SHUTDOWN_TIMEOUT_SECS":                  "5",
	}
}

// warm reports whether p's full answer is cached as warm: every app was
// fetched. A HEAD costs the pod no body.
func (p *proc) warm() bool {
	req, err := http.NewRequest(http.MethodHead, p.base+infoPath, nil)
	if err != nil {
		return false
	}
	res, err := testkit.Client.Do(req)
	if err != nil {
		return false
	}
	res.Body.Close()
	return res.StatusCode == http.StatusOK && res.Header.Get("Cache-Control") != "no-store"
}

// BenchmarkScale starts the real cmd/api standalone against the fake GitHub
// with 13 and with 1,000 apps and reports the first round (from the start of
// the process to an answer with every app fetched: within 10 s at
// 1,000), then the peak resident memory (VmHWM: under 100 MiB at
// 1,000) after 200 full answers, half of them gzip, over loadConns
// connections.
func BenchmarkScale(b *testing.B) {
	for _, n := range []int{13, 1000} {
		b.Run(fmt.Sprintf("apps=%d", n), func(b *testing.B) {
			gh := fakegithub.New(b)
			env := standaloneEnv(gh, scaleApps(gh, n))
			path := binary(b, "api")
			var round time.Duration
			var body int
			var rss, peak int64
			for b.Loop() {
				began := time.Now()
				p := start(b, "api", path, env)
				for !p.warm() {
					if time.Since(began) > time.Minute {
						b.Fatalf("%d apps: not every app served after a minute\n%s", n, p.logs)
					}
					time.Sleep(5 * time.Millisecond)
				}
				round = time.Since(began)
				body = len(p.get(b).body)
				load(b, p, loadConns, 100, false)
				load(b, p, loadConns, 100, true)
				rss, peak = p.rss(b)
				p.stop(b)
			}
			mib := func(n int64) float64 { return float64(n) / (1 << 20) }
			b.ReportMetric(0, "ns/op")
			b.ReportMetric(round.Seconds(), "first-round-s")
			b.ReportMetric(mib(rss), "rss-MiB")
			b.ReportMetric(mib(peak), "peak-MiB")
			b.ReportMetric(float64(body), "body-bytes")
			b.Logf("%d apps: every app served %v after the start; VmRSS %.1f MiB, VmHWM %.1f MiB; the body has %d bytes",
				n, round.Round(time.Millisecond), mib(rss), mib(peak), body)
		})
	}
}

// BenchmarkSplitScale runs the split deployment from the real binaries with
// 13 and with 1,000 apps: one poller fills an empty redis-server from the
// fake GitHub, then one API pod loads it. It reports Redis's memory per app
// (INFO memory's used_memory, less the empty server's, over the apps; the
// tracking table of the pod's client-side cache included), the pod's peak
// resident memory (VmHWM) once it served 200 full answers, and the Redis
// connections the pod holds.
func BenchmarkSplitScale(b *testing.B) {
	for _, n := range []int{13, 1000} {
		b.Run(fmt.Sprintf("apps=%d", n), func(b *testing.B) { splitScale(b, n) })
	}
}

func splitScale(b *testing.B, n int) {
	gh := fakegithub.New(b)
	apps := scaleApps(gh, n)
	var perApp float64
	var peak int64
	var podRound time.Duration
	var conns int64
	for b.Loop() {
		rs := redistest.Start(b)
		empty := usedMemory(b, rs)
		env := pollerEnv(gh, rs.URL(), apps)
		env["CRAFT_APPS_RELEASE_GITHUB_TOKEN"] = "e2e-scale-token"
		env["CRAFT_APPS_RELEASE_POLL_INTERVAL_SECS"] = "120"
		poller := startPollers(b, 1, env)[0]
		clients := connectedClients(b, rs)
		began := time.Now()
		pod := start(b, "api", binary(b, "api"), podEnv(rs.URL(), apps))
		for !pod.warm() {
			if time.Since(began) > time.Minute {
				b.Fatalf("not every app served after a minute\n%s\n%s", poller.logs, pod.logs)
			}
			time.Sleep(5 * time.Millisecond)
		}
		podRound = time.Since(began)
		conns = connectedClients(b, rs) - clients
		load(b, pod, loadConns, 100, false)
		load(b, pod, loadConns, 100, true)
		_, peak = pod.rss(b)
		perApp = float64(usedMemory(b, rs)-empty) / float64(n)
		pod.stop(b)
		poller.stop(b)
	}
	b.ReportMetric(0, "ns/op")
	b.ReportMetric(perApp, "redis-B/app")
	b.ReportMetric(float64(peak)/(1<<20), "pod-peak-MiB")
	b.ReportMetric(float64(conns), "pod-redis-conns")
	b.Logf("%d apps: Redis holds %.0f bytes per app; the pod served every app %v after the poller started, VmHWM %.1f MiB, %d Redis connections",
		n, perApp, podRound.Round(time.Millisecond), float64(peak)/(1<<20), conns)
}

// usedMemory returns INFO memory's used_memory of rs, in bytes.
func usedMemory(b *testing.B, rs *redistest.Server) int64 {
	b.Helper()
	v, err := strconv.ParseInt(redisInfo(b, rs.Addr, "memory")["used_memory"], 10, 64)
	if err != nil {
		b.Fatalf("used_memory: %v", err)
	}
	return v
}

// connectedClients returns INFO clients' connected_clients of rs, less the
// connection that asks.
func connectedClients(b *testing.B, rs *redistest.Server) int64 {
	b.Helper()
	v, err := strconv.ParseInt(redisInfo(b, rs.Addr, "clients")["connected_clients"], 10, 64)
	if err != nil {
		b.Fatalf("connected_clients: %v", err)
	}
	return v - 1
}
