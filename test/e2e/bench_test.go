package e2e

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
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

// The scale figures (docs/operations.md, "Sizing"). Each benchmark starts
// its own Redis and processes (deployment) and reports its figures
// (report).
//
//	CRAFT_TEST_INTEGRATION=1 go test -run '^$' -bench . -benchtime=1x ./test/e2e

// loadConns is how many keep-alive connections the load generator keeps
// busy, one request in flight on each.
const loadConns = 16

// report reports figures (unit → value) as the benchmark's metrics, with
// ns/op suppressed: it would only time a whole measurement.
func report(b *testing.B, figures map[string]float64) {
	b.ReportMetric(0, "ns/op")
	for unit, v := range figures {
		b.ReportMetric(v, unit)
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

// splitStack is a Redis holding the 13 default apps, each with the release
// the fake GitHub makes (11 assets, notes) written as a poller writes it,
// and pods serving them.
type splitStack struct {
	store   *store.Store
	pods    []*proc
	base    time.Time           // fetch time of the first writes
	rels    [2]*release.Release // photocraft's, in turns
	changes int                 // writes of photocraft so far
	etags   []string            // what each pod serves
}

// newSplitStack starts the stack on the Redis at url, of any topology, on
// TLS with ca's certificates when ca is not nil.
func newSplitStack(b *testing.B, url string, ca *redistest.CA, pods int) *splitStack {
	b.Helper()
	st := &splitStack{base: time.Now().Truncate(time.Millisecond),
		rels: [2]*release.Release{fakeRelease(b, photocraft, "v2.0.0"), fakeRelease(b, photocraft, "v2.0.1")}}
	d := deployment{url: url}
	var tlsCfg *tls.Config
	if ca != nil {
		d.caFile, tlsCfg = ca.File, &tls.Config{RootCAs: ca.Pool}
	}
	st.store = newStore(b, url, tlsCfg)
	for i, a := range config.DefaultApps() {
		st.put(b, a.Key, release.Entry{FetchedAt: st.base, ETag: fmt.Sprintf(`"%s-%d"`, a.Key, i), Release: fakeRelease(b, a.Repo, fmt.Sprintf("v1.%d.0", i))})
	}
	st.pods = d.pods(b, pods)
	for _, p := range st.pods {
		testkit.Eventually(b, p.name+" serves every app", p.warm)
		st.etags = append(st.etags, p.get(b).header.Get("ETag"))
	}
	return st
}

func (st *splitStack) put(b *testing.B, app string, e release.Entry) {
	if ok, err := st.store.PutFetch(context.Background(), app, e); err != nil || !ok {
		b.Fatalf("put fetch %s: written %v, %v", app, ok, err)
	}
}

// change writes a new fetch of photocraft as a poller does, and returns how
// long from the call that writes it to every pod serving a new ETag (each
// pod asked in a tight loop with If-None-Match of the ETag it served).
func (st *splitStack) change(b *testing.B) time.Duration {
	b.Helper()
	st.changes++
	n, began := st.changes, time.Now()
	st.put(b, "photocraft", release.Entry{FetchedAt: st.base.Add(time.Duration(n) * time.Millisecond), ETag: `"photocraft-` + strconv.Itoa(n) + `"`, Release: st.rels[n%2]})
	for i, p := range st.pods {
		for {
			a, err := ask(p.base+infoPath, "If-None-Match", st.etags[i])
			if err != nil {
				b.Fatalf("%s: %v", p.name, err)
			}
			if a.status == http.StatusOK {
				st.etags[i] = a.header.Get("ETag")
				break
			}
			if time.Since(began) > waitFor {
				b.Fatalf("%s still served ETag %s after %v", p.name, st.etags[i], waitFor)
			}
		}
	}
	return time.Since(began)
}

// BenchmarkPropagation times each change of the split stack (the write to
// every pod serving it), on a single server and on a Cluster of 3 primaries
// with a replica each, in plain text and on TLS.
func BenchmarkPropagation(b *testing.B) {
	b.Run("single", func(b *testing.B) { propagation(b, newSplitStack(b, redistest.Start(b).URL(), nil, 2)) })
	b.Run("cluster", func(b *testing.B) { propagation(b, newSplitStack(b, redistest.StartCluster(b, 3, 1).URL(), nil, 2)) })
	b.Run("cluster-tls", func(b *testing.B) {
		ca := redistest.NewCA(b)
		propagation(b, newSplitStack(b, redistest.StartClusterTLS(b, ca, 3, 1).URL(), ca, 2))
	})
}

func propagation(b *testing.B, st *splitStack) {
	var samples []time.Duration
	for b.Loop() {
		samples = append(samples, st.change(b))
	}
	slices.Sort(samples)
	percentile := func(p int) time.Duration { return samples[max(0, (len(samples)*p+99)/100-1)] } // nearest rank
	p50, p99, most := percentile(50), percentile(99), samples[len(samples)-1]
	ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
	b.ReportMetric(ms(p50), "p50-ms") // and ns/op, the mean of a change
	b.ReportMetric(ms(p99), "p99-ms")
	b.ReportMetric(ms(most), "max-ms")
	b.Logf("%d writes: from the guarded write to both pods serving it, p50 %v, p99 %v, max %v", len(samples), p50, p99, most)
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
		throughput(b, newSplitStack(b, redistest.Start(b).URL(), nil, 1).pods[0], 3000, 1000)
	})
	b.Run("apps=1000", func(b *testing.B) {
		gh := fakegithub.New(b)
		d := deployment{gh: gh, apps: scaleApps(gh, 1000), podEnv: map[string]string{"CRAFT_APPS_RELEASE_POLL_INTERVAL_SECS": "3600"}} // no poll while measured
		pod := d.pods(b, 1)[0]
		testkit.Eventually(b, "every app served", pod.warm)
		throughput(b, pod, 150, 50)
	})
}

// throughput measures pod against a reference serving its answers, in
// pairs of runs of perRun requests after a warm-up of warmRun each.
func throughput(b *testing.B, pod *proc, perRun, warmRun int) {
	const pairs = 8
	servers := [2]*proc{pod, startReference(b, pod)}
	var fig [2]struct { // plain, gzip
		rps      [2][]float64     // of each server
		cpu      [2]time.Duration // of each server
		ratios   []float64
		requests int
	}
	for b.Loop() {
		for m := range fig {
			for _, s := range servers {
				load(b, s, loadConns, warmRun, m == 1)
			}
			for i := range pairs {
				var rate [2]float64
				// Turns alternate, so neither always runs on a warmer machine.
				for _, s := range []int{i % 2, 1 - i%2} {
					cpu := servers[s].cpu(b)
					rate[s] = load(b, servers[s], loadConns, perRun, m == 1)
					fig[m].cpu[s] += servers[s].cpu(b) - cpu
					fig[m].rps[s] = append(fig[m].rps[s], rate[s])
				}
				fig[m].ratios = append(fig[m].ratios, rate[0]/rate[1])
				fig[m].requests += perRun
			}
		}
	}
	us := func(d time.Duration, n int) float64 { return float64(d) / float64(time.Microsecond) / float64(n) }
	for m, name := range []string{"plain", "gzip"} {
		f := fig[m]
		p, r, ratio := median(f.rps[0]), median(f.rps[1]), median(f.ratios)
		podUS, refUS := us(f.cpu[0], f.requests), us(f.cpu[1], f.requests)
		report(b, map[string]float64{name + "-req/s": p, name + "-ref-req/s": r, name + "-ratio": ratio,
			name + "-cpu-µs/req": podUS, name + "-ref-cpu-µs/req": refUS, name + "-cpu-ratio": refUS / podUS})
		b.Logf("%s: pod %.0f req/s, net/http %.0f req/s, ratio %.2f (median of %d pairs of %d requests on %d connections; from %.2f to %.2f)",
			name, p, r, ratio, len(f.ratios), perRun, loadConns, slices.Min(f.ratios), slices.Max(f.ratios))
		b.Logf("%s: CPU per request: pod %.1f µs, net/http %.1f µs, ratio %.2f (%d requests each)",
			name, podUS, refUS, refUS/podUS, f.requests)
	}
}

// BenchmarkRedisLoad counts, with Redis's own INFO commandstats, the
// commands two pods send: while they answer requests and nothing changes
// (the goal is none), per release change per pod, and per key and minute
// while nothing changes at all, over an idle minute and a safety-net read
// more: every probe a pod holds lives a minute, so each key is read again
// once in it.
func BenchmarkRedisLoad(b *testing.B) {
	rs := redistest.Start(b)
	st := newSplitStack(b, rs.URL(), nil, 2)
	const perPod, changes = 20_000, 200
	const idleWindow = time.Minute + 5*time.Second
	var during, idle, onChange map[string]int64
	var requests int
	for b.Loop() {
		during = redisCalls(b, rs.Addr, func() {
			for _, p := range st.pods {
				load(b, p, loadConns, perPod/2, false)
				load(b, p, loadConns, perPod/2, true)
			}
		})
		requests += len(st.pods) * perPod
		idle = redisCalls(b, rs.Addr, func() { time.Sleep(idleWindow) })
		onChange = redisCalls(b, rs.Addr, func() {
			for range changes {
				st.change(b)
			}
		})
	}
	// The writer's guarded write: the script and the commands it runs.
	writer := []string{"evalsha", "eval", "script|load", "type", "hmget", "hset", "pexpire", "del"}
	podCmds := sum(onChange) - sum(onChange, writer...)
	// rueidis pings a connection that has been quiet for a while, requests
	// or not: the idle window shows as many.
	perRequest := sum(during) - sum(during, "ping")
	// Each pod reads every app's key, its history key and the meta key.
	keys := 2*len(config.DefaultApps()) + 1
	idleCmds := sum(idle) - sum(idle, "ping")
	perKeyMinute := float64(idleCmds) / float64(keys*len(st.pods)) / idleWindow.Minutes()
	report(b, map[string]float64{"cmds/request": float64(perRequest) / float64(requests), "cmds/change/pod": float64(podCmds) / float64(changes*len(st.pods)),
		"idle-cmds/key/min/pod": perKeyMinute})
	b.Logf("%d requests to %d pods, no change: %d commands besides pings %v", requests, len(st.pods), perRequest, during)
	b.Logf("%v idle: %d commands besides pings, %.1f per key and minute per pod %v", idleWindow, idleCmds, perKeyMinute, idle)
	b.Logf("%d release changes: the writer %d commands, the pods %d (%.1f per change per pod) %v",
		changes, sum(onChange, writer...), podCmds, float64(podCmds)/float64(changes*len(st.pods)), onChange)
}

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

// warm reports whether p's full answer is cached as warm: every app was
// fetched. A HEAD costs the pod no body.
func (p *proc) warm() bool {
	res, err := testkit.Client.Head(p.base + infoPath)
	if err != nil {
		return false
	}
	res.Body.Close()
	return res.StatusCode == http.StatusOK && res.Header.Get("Cache-Control") != "no-store"
}

// BenchmarkScale starts the real cmd/api standalone against the fake GitHub
// with 13 and with 1,000 apps and reports the first round (from the start of
// the process to an answer with every app fetched: within 10 s at 1,000),
// then the resident memory and its peak (VmHWM: under 100 MiB at 1,000)
// after 200 full answers, half of them gzip, over loadConns connections.
func BenchmarkScale(b *testing.B) { scale(b, false) }

// BenchmarkSplitScale runs the split deployment from the real binaries with
// 13 and with 1,000 apps: one poller fills an empty redis-server from the
// fake GitHub, then one API pod loads it. It reports Redis's memory per app
// (INFO memory's used_memory, less the empty server's, over the apps; the
// tracking table of the pod's client-side cache included), the pod's peak
// resident memory (VmHWM) once it served 200 full answers, and the Redis
// connections the pod holds.
func BenchmarkSplitScale(b *testing.B) { scale(b, true) }

func scale(b *testing.B, split bool) {
	for _, n := range []int{13, 1000} {
		b.Run(fmt.Sprintf("apps=%d", n), func(b *testing.B) {
			gh := fakegithub.New(b)
			d := deployment{gh: gh, apps: scaleApps(gh, n)}
			var fig map[string]float64
			for b.Loop() {
				var empty, clients int64
				var poller *proc
				var rs *redistest.Server
				if split {
					rs = redistest.Start(b)
					empty, d.url = redisInt(b, rs.Addr, "memory", "used_memory"), rs.URL()
					d.pollerEnv = map[string]string{"CRAFT_APPS_RELEASE_GITHUB_TOKEN": "e2e-token", "CRAFT_APPS_RELEASE_POLL_INTERVAL_SECS": "120"}
					poller = d.pollers(b, 1)[0]
					clients = redisInt(b, rs.Addr, "clients", "connected_clients")
				}
				began := time.Now()
				p := d.pods(b, 1)[0]
				if !testkit.Within(time.Minute, p.warm) {
					b.Fatalf("%d apps: not every app served after a minute\n%s", n, p.logs)
				}
				round, body := time.Since(began), len(p.get(b).body)
				load(b, p, loadConns, 100, false)
				load(b, p, loadConns, 100, true)
				rss, peak := p.rss(b)
				mib := func(n int64) float64 { return float64(n) / (1 << 20) }
				if split {
					fig = map[string]float64{"redis-B/app": float64(redisInt(b, rs.Addr, "memory", "used_memory")-empty) / float64(n),
						"pod-peak-MiB": mib(peak), "pod-redis-conns": float64(redisInt(b, rs.Addr, "clients", "connected_clients") - clients)}
					b.Logf("%d apps: Redis holds %.0f bytes per app; the pod served every app %v after it started, VmHWM %.1f MiB, %v Redis connections",
						n, fig["redis-B/app"], round.Round(time.Millisecond), mib(peak), fig["pod-redis-conns"])
					poller.stop(b)
				} else {
					fig = map[string]float64{"first-round-s": round.Seconds(), "rss-MiB": mib(rss), "peak-MiB": mib(peak), "body-bytes": float64(body)}
					b.Logf("%d apps: every app served %v after the start; VmRSS %.1f MiB, VmHWM %.1f MiB; the body has %d bytes",
						n, round.Round(time.Millisecond), mib(rss), mib(peak), body)
				}
				p.stop(b)
			}
			report(b, fig)
		})
	}
}

// redisInt returns the field of INFO section of the Redis at addr, as an
// integer (connected_clients counts the connection that asks).
func redisInt(b *testing.B, addr, section, field string) int64 {
	b.Helper()
	info, err := redistest.Info(addr, section)
	v, err2 := strconv.ParseInt(info[field], 10, 64)
	if err := errors.Join(err, err2); err != nil {
		b.Fatalf("info %s %s: %v", section, field, err)
	}
	return v
}

// redisCalls returns the calls of each command Redis counted (INFO
// commandstats, by name as Redis spells it: "hgetall", "client|caching")
// while during ran, leaving out the INFO calls that measured it.
func redisCalls(b *testing.B, addr string, during func()) map[string]int64 {
	b.Helper()
	calls := func() map[string]int64 {
		info, err := redistest.Info(addr, "commandstats")
		if err != nil {
			b.Fatalf("info commandstats: %v", err)
		}
		calls := make(map[string]int64)
		for k, v := range info {
			name, ok := strings.CutPrefix(k, "cmdstat_")
			n, _, _ := strings.Cut(strings.TrimPrefix(v, "calls="), ",")
			c, err := strconv.ParseInt(n, 10, 64)
			if !ok || err != nil {
				b.Fatalf("info commandstats: %s:%s", k, v)
			}
			calls[name] = c
		}
		return calls
	}
	before := calls()
	during()
	d := make(map[string]int64)
	for name, n := range calls() {
		if name != "info" && n != before[name] {
			d[name] = n - before[name]
		}
	}
	return d
}

// sum adds up the calls of the named commands, or of all when none is named.
func sum(calls map[string]int64, names ...string) int64 {
	var n int64
	for name, c := range calls {
		if len(names) == 0 || slices.Contains(names, name) {
			n += c
		}
	}
	return n
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
// file of the answers the reference server serves: a JSON object of
// references by encoding, "identity" and "gzip".
const baselineEnv = "CRAFT_E2E_REFERENCE"

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
	refs := map[string]reference{}
	for _, enc := range []string{"identity", "gzip"} {
		a := pod.get(b, "Accept-Encoding", enc)
		a.header.Del("Date")
		refs[enc] = reference{Header: a.header, Body: a.body}
	}
	data, err := json.Marshal(refs)
	file := filepath.Join(b.TempDir(), "answers.json")
	if err == nil {
		err = os.WriteFile(file, data, 0o600)
	}
	exe, err2 := os.Executable()
	if err := errors.Join(err, err2); err != nil {
		b.Fatal(err)
	}
	ref := start(b, "net/http", exe, map[string]string{baselineEnv: file})
	for enc, want := range refs {
		got := ref.get(b, "Accept-Encoding", enc)
		got.header.Del("Date")
		if !reflect.DeepEqual(got.header, want.Header) || !bytes.Equal(got.body, want.Body) {
			b.Fatalf("the reference's %s answer differs from the pod's: headers %v, want %v", enc, got.header, want.Header)
		}
	}
	return ref
}

// serveBaseline is the reference server, run by TestMain in a re-executed
// test binary: it answers every GET with the plain or the gzip answer read
// from file, as the client accepts gzip or not, until SIGTERM.
func serveBaseline(file string) error {
	var refs map[string]reference
	data, err := os.ReadFile(file)
	if err == nil {
		err = json.Unmarshal(data, &refs)
	}
	if err != nil {
		return err
	}
	plain, zipped := refs["identity"], refs["gzip"]
	ln, err := net.Listen("tcp", os.Getenv("HTTP_ADDR"))
	if err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "{\"msg\":\"listening\",\"addr\":%q}\n", ln.Addr().String())
	srv := &http.Server{ReadHeaderTimeout: daemon.ReadHeaderTimeout, ReadTimeout: daemon.ReadTimeout, WriteTimeout: daemon.WriteTimeout, IdleTimeout: daemon.IdleTimeout,
		Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			ref := &plain
			if strings.Contains(r.Header.Get("Accept-Encoding"), "gzip") {
				ref = &zipped
			}
			maps.Copy(w.Header(), ref.Header)
			w.WriteHeader(http.StatusOK)
			_, _ = w.Write(ref.Body)
		})}
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
