package e2e

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/storytold/craft-releases/pkg/config"
	"github.com/storytold/craft-releases/pkg/daemon"
	"github.com/storytold/craft-releases/pkg/redis/store"
	"github.com/storytold/craft-releases/pkg/release"
	"github.com/storytold/craft-releases/test/fakegithub"
	"github.com/storytold/craft-releases/test/redistest"
	"github.com/storytold/craft-releases/test/testkit"
)

// The scale figures (docs/operations.md, "Sizing"). Each benchmark starts its own redis-server and
// pods serving the 13 default apps, each with the release the fake GitHub
// makes (11 assets, notes), written as a poller writes it. They report their
// figures with ReportMetric; the load benchmarks suppress ns/op, which would
// only time a whole measurement.
//
//	go test -run '^$' -bench . -benchtime=1s ./test/e2e

// loadConns is how many keep-alive connections the load generator keeps
// busy, one request in flight on each.
const loadConns = 16

// splitStack is a redis-server holding the 13 default apps, and pods
// serving them.
type splitStack struct {
	redis *redistest.Server // nil on another topology than a single server
	store *store.Store
	pods  []*proc
	base  time.Time // fetch time of the first writes
}

func newSplitStack(b *testing.B, pods int) *splitStack {
	b.Helper()
	rs := redistest.Start(b)
	st := newSplitStackOn(b, rs.URL(), nil, pods)
	st.redis = rs
	return st
}

// newSplitStackOn is newSplitStack on the Redis at url, of any topology, on
// TLS with ca's certificates when ca is not nil; the stack's redis is nil.
func newSplitStackOn(b *testing.B, url string, ca *redistest.CA, pods int) *splitStack {
	b.Helper()
	st := &splitStack{base: time.Now().Truncate(time.Millisecond)}
	env := podEnv(url, "")
	var tlsCfg *tls.Config
	if ca != nil {
		env["REDIS_TLS_CA_FILE"] = ca.File
		tlsCfg = &tls.Config{RootCAs: ca.Pool}
	}
	st.store = newStore(b, url, tlsCfg)
	for i, a := range config.DefaultApps() {
		e := release.Entry{
			FetchedAt: st.base,
			ETag:      fmt.Sprintf(`"%s-%d"`, a.Key, i),
			Release:   fakeRelease(b, a.Repo, fmt.Sprintf("v1.%d.0", i)),
		}
		if ok, err := st.store.PutFetch(context.Background(), a.Key, e); err != nil || !ok {
			b.Fatalf("put fetch %s: written %v, %v", a.Key, ok, err)
		}
	}
	st.pods = startPods(b, pods, env)
	for _, p := range st.pods {
		testkit.Eventually(b, p.name+" serves every app", func() bool {
			a := p.get(b)
			return a.header.Get("Cache-Control") == "public, max-age=60, stale-while-revalidate=30, stale-if-error=86400"
		})
	}
	return st
}

// publish writes a new fetch of photocraft, the n-th since the stack
// started, as a poller does.
func (st *splitStack) publish(b *testing.B, n int, rels [2]*release.Release) {
	b.Helper()
	e := release.Entry{
		FetchedAt: st.base.Add(time.Duration(n) * time.Millisecond),
		ETag:      `"photocraft-` + strconv.Itoa(n) + `"`,
		Release:   rels[n%2],
	}
	if ok, err := st.store.PutFetch(context.Background(), "photocraft", e); err != nil || !ok {
		b.Fatalf("put fetch %d: written %v, %v", n, ok, err)
	}
}

func photocraftReleases(b *testing.B) [2]*release.Release {
	return [2]*release.Release{fakeRelease(b, photocraft, "v2.0.0"), fakeRelease(b, photocraft, "v2.0.1")}
}

// BenchmarkPropagation times, for each guarded write of a new photocraft
// fetch, from the call that writes it to both pods serving a new ETag (each
// pod asked in a tight loop with If-None-Match of the ETag it served), on a
// single server and on a Cluster of 3 primaries with a replica each, in
// plain text and on TLS.
func BenchmarkPropagation(b *testing.B) {
	b.Run("single", func(b *testing.B) { propagation(b, newSplitStack(b, 2)) })
	b.Run("cluster", func(b *testing.B) {
		propagation(b, newSplitStackOn(b, redistest.StartCluster(b, 3, 1).URL(), nil, 2))
	})
	b.Run("cluster-tls", func(b *testing.B) {
		ca := redistest.NewCA(b)
		propagation(b, newSplitStackOn(b, redistest.StartClusterTLS(b, ca, 3, 1).URL(), ca, 2))
	})
}

func propagation(b *testing.B, st *splitStack) {
	rels := photocraftReleases(b)
	old := etags(b, st.pods)
	var samples []time.Duration
	n := 0
	for b.Loop() {
		n++
		began := time.Now()
		st.publish(b, n, rels)
		var took []time.Duration
		took, old = changedETags(b, began, old, st.pods...)
		samples = append(samples, slices.Max(took))
	}
	slices.Sort(samples)
	ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
	b.ReportMetric(ms(percentile(samples, 50)), "p50-ms")
	b.ReportMetric(ms(percentile(samples, 99)), "p99-ms")
	b.ReportMetric(ms(samples[len(samples)-1]), "max-ms")
	b.Logf("%d writes: from the guarded write to both pods serving it, p50 %v, p99 %v, max %v",
		len(samples), percentile(samples, 50), percentile(samples, 99), samples[len(samples)-1])
}

// changedETags waits until every pod serves a plain ETag other than old[i]
// and returns how long each took since from and the new ETags.
func changedETags(tb testing.TB, from time.Time, old []string, pods ...*proc) ([]time.Duration, []string) {
	tb.Helper()
	took := make([]time.Duration, len(pods))
	now := make([]string, len(pods))
	for i, p := range pods {
		for {
			a, err := ask(p.base+infoPath, "If-None-Match", old[i])
			if err != nil {
				tb.Fatalf("%s: %v", p.name, err)
			}
			if a.status == http.StatusOK {
				took[i], now[i] = time.Since(from), a.header.Get("ETag")
				break
			}
			if time.Since(from) > waitFor {
				tb.Fatalf("%s still served ETag %s after %v", p.name, old[i], waitFor)
			}
		}
	}
	return took, now
}

// percentile returns the p-th percentile of sorted samples (nearest rank).
func percentile(sorted []time.Duration, p int) time.Duration {
	i := (len(sorted)*p + 99) / 100
	return sorted[max(0, i-1)]
}

// BenchmarkThroughput measures requests per second of one pod's endpoint,
// plain and gzip, at 13 apps (a split pod) and at 1,000 (a standalone one),
// under a load generator with loadConns keep-alive connections, against a
// reference: a net/http server with the public port's four timeouts, in a
// process of its own, writing the same bytes with the same headers in one
// Write. It is a guard against regressions, not a race: the pod should keep
// at least 0.85 of the reference's rate. The two are measured in short runs
// side by side, in turns, and each rate is the median over the pairs, which
// damps what other work on the machine does. The CPU time each server spent
// per request (user and system, from /proc/<pid>/stat) is the steadier
// figure on a busy machine; its ratio (reference over pod) is the share of
// the reference's capacity the pod has. B/op and allocs/op are the load
// generator's.
func BenchmarkThroughput(b *testing.B) {
	if testkit.RaceEnabled {
		b.Skip("the race detector would slow the reference server, not the pod")
	}
	b.Run("apps=13", func(b *testing.B) {
		throughput(b, newSplitStack(b, 1).pods[0], 3000, 1000)
	})
	b.Run("apps=1000", func(b *testing.B) {
		gh := fakegithub.New(b)
		env := standaloneEnv(gh, scaleApps(gh, 1000))
		// No poll while the rates are measured.
		env["CRAFT_APPS_RELEASE_POLL_INTERVAL_SECS"] = "3600"
		pod := start(b, "api", binary(b, "api"), env)
		testkit.Eventually(b, "every app served", pod.warm)
		throughput(b, pod, 150, 50)
	})
}

// throughput measures pod against a reference serving its answers, in
// pairs of runs of perRun requests after a warm-up of warmRun each.
func throughput(b *testing.B, pod *proc, perRun, warmRun int) {
	ref := startReference(b, pod)
	const pairs = 8
	modes := []struct {
		name string
		gzip bool
	}{{"plain", false}, {"gzip", true}}
	type figures struct {
		podRPS, refRPS, ratios []float64
		podCPU, refCPU         time.Duration
		requests               int
	}
	fig := make(map[string]*figures)
	for _, m := range modes {
		fig[m.name] = &figures{}
	}
	// run loads p and returns its rate and the CPU time it spent.
	run := func(p *proc, gzip bool) (float64, time.Duration) {
		cpu := p.cpu(b)
		rps := load(b, p, loadConns, perRun, gzip)
		return rps, p.cpu(b) - cpu
	}
	for b.Loop() {
		for _, m := range modes {
			f := fig[m.name]
			load(b, pod, loadConns, warmRun, m.gzip)
			load(b, ref, loadConns, warmRun, m.gzip)
			for i := range pairs {
				var p, r float64
				var pc, rc time.Duration
				// Turns alternate, so neither always runs on a warmer machine.
				if i%2 == 0 {
					p, pc = run(pod, m.gzip)
					r, rc = run(ref, m.gzip)
				} else {
					r, rc = run(ref, m.gzip)
					p, pc = run(pod, m.gzip)
				}
				f.podRPS, f.refRPS, f.ratios = append(f.podRPS, p), append(f.refRPS, r), append(f.ratios, p/r)
				f.podCPU, f.refCPU, f.requests = f.podCPU+pc, f.refCPU+rc, f.requests+perRun
			}
		}
	}
	b.ReportMetric(0, "ns/op")
	us := func(d time.Duration, n int) float64 { return float64(d) / float64(time.Microsecond) / float64(n) }
	for _, m := range modes {
		f := fig[m.name]
		p, r, ratio := median(f.podRPS), median(f.refRPS), median(f.ratios)
		podUS, refUS := us(f.podCPU, f.requests), us(f.refCPU, f.requests)
		b.ReportMetric(p, m.name+"-req/s")
		b.ReportMetric(r, m.name+"-ref-req/s")
		b.ReportMetric(ratio, m.name+"-ratio")
		b.ReportMetric(podUS, m.name+"-cpu-µs/req")
		b.ReportMetric(refUS, m.name+"-ref-cpu-µs/req")
		b.ReportMetric(refUS/podUS, m.name+"-cpu-ratio")
		b.Logf("%s: pod %.0f req/s, net/http %.0f req/s, ratio %.2f (median of %d pairs of %d requests on %d connections; from %.2f to %.2f)",
			m.name, p, r, ratio, len(f.ratios), perRun, loadConns, slices.Min(f.ratios), slices.Max(f.ratios))
		b.Logf("%s: CPU per request: pod %.1f µs, net/http %.1f µs, ratio %.2f (%d requests each)",
			m.name, podUS, refUS, refUS/podUS, f.requests)
	}
}

// median returns the median of xs.
func median(xs []float64) float64 {
	s := slices.Sorted(slices.Values(xs))
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// BenchmarkRedisLoad counts, with Redis's own INFO commandstats, the
// commands two pods send: while they answer requests and nothing changes
// (the goal is none), and per release change per pod. An idle window as long
// as the request window shows what the pods send with no request at all.
func BenchmarkRedisLoad(b *testing.B) {
	st := newSplitStack(b, 2)
	rels := photocraftReleases(b)
	const perPod = 20_000
	const changes = 200
	var during, idle, onChange map[string]int64
	var requests, writes int
	for b.Loop() {
		before := redisCalls(b, st.redis.Addr)
		began := time.Now()
		for _, p := range st.pods {
			load(b, p, loadConns, perPod/2, false)
			load(b, p, loadConns, perPod/2, true)
		}
		window := time.Since(began)
		during = delta(before, redisCalls(b, st.redis.Addr))
		requests += len(st.pods) * perPod

		before = redisCalls(b, st.redis.Addr)
		time.Sleep(window)
		idle = delta(before, redisCalls(b, st.redis.Addr))

		old := etags(b, st.pods)
		before = redisCalls(b, st.redis.Addr)
		for range changes {
			writes++
			began := time.Now()
			st.publish(b, writes, rels)
			_, old = changedETags(b, began, old, st.pods...)
		}
		onChange = delta(before, redisCalls(b, st.redis.Addr))
	}
	// The writer's guarded write: the script and the commands it runs.
	writer := []string{"evalsha", "eval", "script|load", "type", "hmget", "hset", "pexpire", "del"}
	podCmds := sum(onChange) - sum(onChange, writer...)
	// rueidis pings a connection that has been quiet for a while, requests
	// or not: the idle window shows as many.
	perRequest := sum(during) - sum(during, "ping")
	b.ReportMetric(0, "ns/op")
	b.ReportMetric(float64(perRequest)/float64(requests), "cmds/request")
	b.ReportMetric(float64(podCmds)/float64(changes*len(st.pods)), "cmds/change/pod")
	b.Logf("%d requests to %d pods, no change: %d commands besides pings %v; the same time idle: %v",
		requests, len(st.pods), perRequest, during, idle)
	b.Logf("%d release changes: the writer %d commands, the pods %d (%.1f per change per pod) %v",
		changes, sum(onChange, writer...), podCmds, float64(podCmds)/float64(changes*len(st.pods)), onChange)
}

// load sends total GET requests for the endpoint to p over conns keep-alive
// connections, one request in flight on each, and returns requests per
// second. It fails the test on anything but a 200 with a body.
func load(tb testing.TB, p *proc, conns, total int, gzip bool) float64 {
	tb.Helper()
	addr := strings.TrimPrefix(p.base, "http://")
	req := "GET " + infoPath + " HTTP/1.1\r\nHost: " + addr + "\r\nUser-Agent: e2e-load\r\n"
	if gzip {
		req += "Accept-Encoding: gzip\r\n"
	}
	reqBytes := []byte(req + "\r\n")

	cs := make([]net.Conn, conns)
	for i := range cs {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			tb.Fatalf("load %s: %v", p.name, err)
		}
		defer c.Close()
		cs[i] = c
	}
	var next atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, conns)
	began := time.Now()
	for _, c := range cs {
		wg.Go(func() {
			r := bufio.NewReaderSize(c, 64<<10)
			for next.Add(1) <= int64(total) {
				if _, err := c.Write(reqBytes); err != nil {
					errs <- err
					return
				}
				if err := readAnswer(r); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	took := time.Since(began)
	close(errs)
	for err := range errs {
		tb.Fatalf("load %s: %v", p.name, err)
	}
	return float64(total) / took.Seconds()
}

// readAnswer reads one answer to a GET and checks it is a 200 with a body.
func readAnswer(r *bufio.Reader) error {
	line, err := r.ReadSlice('\n')
	if err != nil {
		return err
	}
	if !bytes.HasPrefix(line, []byte("HTTP/1.1 200 ")) {
		return fmt.Errorf("status line %q, want 200", line)
	}
	length := -1
	for {
		line, err = r.ReadSlice('\n')
		if err != nil {
			return err
		}
		if len(line) <= 2 {
			break
		}
		if v, ok := bytes.CutPrefix(line, []byte("Content-Length: ")); ok {
			if length, err = strconv.Atoi(string(bytes.TrimSpace(v))); err != nil {
				return fmt.Errorf("content length %q", v)
			}
		}
	}
	if length <= 0 {
		return errors.New("answer without a body length")
	}
	_, err = r.Discard(length)
	return err
}

// baselineEnv names, in the environment of the re-executed test binary, the
// directory of the answers the reference server serves.
const baselineEnv = "CRAFT_E2E_REFERENCE_DIR"

// reference is one representation the reference server serves.
type reference struct {
	Header http.Header
	Body   []byte
}

// startReference starts the reference server with what pod serves now:
// every header but Date, which net/http adds to both, and the body. It
// checks that the reference's answers are the pod's.
func startReference(b *testing.B, pod *proc) *proc {
	b.Helper()
	dir := b.TempDir()
	encodings := []string{"identity", "gzip"}
	want := make(map[string]answer)
	for _, enc := range encodings {
		a := pod.get(b, "Accept-Encoding", enc)
		want[enc] = a
		ref := reference{Header: a.header.Clone(), Body: a.body}
		ref.Header.Del("Date")
		data, err := json.Marshal(ref)
		if err != nil {
			b.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, enc+".json"), data, 0o600); err != nil {
			b.Fatal(err)
		}
	}
	exe, err := os.Executable()
	if err != nil {
		b.Fatal(err)
	}
	ref := start(b, "net/http", exe, map[string]string{baselineEnv: dir})
	for _, enc := range encodings {
		got, want := ref.get(b, "Accept-Encoding", enc), want[enc]
		got.header.Del("Date")
		want.header.Del("Date")
		if !reflect.DeepEqual(got.header, want.header) || !bytes.Equal(got.body, want.body) {
			b.Fatalf("the reference's %s answer differs from the pod's: headers %v, want %v", enc, got.header, want.header)
		}
	}
	return ref
}

// serveBaseline is the reference server, run by TestMain in a re-executed
// test binary: it answers every GET with the plain or the gzip answer read
// from dir, as the client accepts gzip or not, until SIGTERM.
func serveBaseline(dir string) error {
	var plain, zipped reference
	for _, r := range []struct {
		name string
		into *reference
	}{{"identity", &plain}, {"gzip", &zipped}} {
		data, err := os.ReadFile(filepath.Join(dir, r.name+".json"))
		if err != nil {
			return err
		}
		if err := json.Unmarshal(data, r.into); err != nil {
			return err
		}
	}
	ln, err := net.Listen("tcp", os.Getenv("HTTP_ADDR"))
	if err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "{\"msg\":\"listening\",\"addr\":%q}\n", ln.Addr().String())
	srv := &http.Server{
		ReadHeaderTimeout: daemon.ReadHeaderTimeout,
		ReadTimeout:       daemon.ReadTimeout,
		WriteTimeout:      daemon.WriteTimeout,
		IdleTimeout:       daemon.IdleTimeout,
	}
	srv.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ref := &plain
		if strings.Contains(r.Header.Get("Accept-Encoding"), "gzip") {
			ref = &zipped
		}
		h := w.Header()
		for k, v := range ref.Header {
			h[k] = v
		}
		w.WriteHeader(http.StatusOK)
		_, _ = w.Write(ref.Body)
	})
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM)
	defer stop()
	go func() {
		<-ctx.Done()
		_ = srv.Shutdown(context.Background())
	}()
	if err := srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}
