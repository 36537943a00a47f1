package soak

import (
	"bufio"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/storytold/craft-releases/test/testkit"
)

// proc is one process of the deployment: a poller or an API pod. A poller
// that is killed and started again is a new proc (poller-2#1, poller-2#2).
type proc struct {
	name, role string // "poller-2#1", "api-3#1"; "poller" or "api"
	slot       int    // 1…3 within its role
	cmd        *exec.Cmd
	base       string // "http://" and the address it logged as listening on
	metrics    string // its metrics URL: an API pod's METRICS_ADDR, a poller's one port
	started    time.Time
	exited     chan struct{} // closed once it exited and its output was read

	mu       sync.Mutex
	ended    time.Time
	err      error
	killed   bool
	logged   map[string]int // log lines by message
	backoffs []window       // each fleet backoff its "poll round" lines set, from when one was read
}

// window is a span of time, From included, Until not.
type window struct{ From, Until time.Time }

func (w window) has(t time.Time) bool { return !t.Before(w.From) && t.Before(w.Until) }

// overlaps reports whether w and o share an instant, ends included.
func (w window) overlaps(o window) bool { return !w.From.After(o.Until) && !w.Until.Before(o.From) }

// launch starts path with env, plus HTTP_ADDR and METRICS_ADDR (which the
// poller does not read) on free loopback ports, its output appended to
// logPath, and waits until it logs the addresses it listens on.
func launch(name, role string, slot int, path, logPath string, env map[string]string) (*proc, error) {
	p := &proc{name: name, role: role, slot: slot, cmd: exec.Command(path), exited: make(chan struct{}), logged: map[string]int{}}
	p.cmd.Env = []string{"HTTP_ADDR=127.0.0.1:0", "METRICS_ADDR=127.0.0.1:0"}
	for k, v := range env {
		p.cmd.Env = append(p.cmd.Env, k+"="+v)
	}
	logFile, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	out, err := p.cmd.StdoutPipe()
	if err == nil {
		p.cmd.Stderr = p.cmd.Stdout
		err = p.cmd.Start()
	}
	if err != nil {
		logFile.Close()
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	p.started = time.Now()
	listening := make(chan [2]string, 1)
	go func() {
		sc := bufio.NewScanner(out)
		sc.Buffer(make([]byte, 64<<10), 4<<20)
		for sc.Scan() {
			fmt.Fprintln(logFile, sc.Text())
			var rec struct {
				Msg, Addr   string
				MetricsAddr string `json:"metrics_addr"`
				Backoff     float64
			}
			if json.Unmarshal(sc.Bytes(), &rec) != nil {
				continue
			}
			p.mu.Lock()
			p.logged[rec.Msg]++
			if now := time.Now(); rec.Msg == "poll round" && rec.Backoff > 0 {
				p.backoffs = append(p.backoffs, window{now, now.Add(time.Duration(rec.Backoff * float64(time.Second)))})
			}
			p.mu.Unlock()
			if rec.Msg == "listening" && rec.Addr != "" {
				select {
				case listening <- [2]string{rec.Addr, cmp.Or(rec.MetricsAddr, rec.Addr)}:
				default:
				}
			}
		}
		_, _ = io.Copy(logFile, out)
		logFile.Close()
		err := p.cmd.Wait()
		p.mu.Lock()
		p.ended, p.err = time.Now(), err
		p.mu.Unlock()
		close(p.exited)
	}()
	select {
	case a := <-listening:
		p.base, p.metrics = "http://"+a[0], "http://"+a[1]+"/metrics"
		return p, nil
	case <-p.exited:
		return nil, fmt.Errorf("%s exited at start-up: %w (log: %s)", name, p.err, logPath)
	case <-time.After(waitFor):
		p.kill()
		return nil, fmt.Errorf("%s did not log a listening address in %v (log: %s)", name, waitFor, logPath)
	}
}

func (p *proc) kill() {
	p.mu.Lock()
	p.killed = true
	p.mu.Unlock()
	_ = p.cmd.Process.Signal(syscall.SIGKILL)
	<-p.exited
}

// stop sends SIGTERM and waits for the exit, killing it after waitFor; it
// returns the exit error, nil for status 0 or a process the soak killed.
func (p *proc) stop() error {
	if p.alive() {
		_ = p.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-p.exited:
		case <-time.After(waitFor):
			p.kill()
			return fmt.Errorf("%s still ran %v after SIGTERM; killed", p.name, waitFor)
		}
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.killed {
		return nil
	}
	return p.err
}

func (p *proc) alive() bool { return p.endedAt().IsZero() }

// count returns how many of its log lines had the message msg.
func (p *proc) count(msg string) int { p.mu.Lock(); defer p.mu.Unlock(); return p.logged[msg] }

// endedAt is zero while p runs.
func (p *proc) endedAt() time.Time { p.mu.Lock(); defer p.mu.Unlock(); return p.ended }

type processStats struct {
	At         time.Time `json:"at"`
	Goroutines float64   `json:"goroutines"`
	HeapInuse  float64   `json:"heap_inuse_bytes"`
	RSS        float64   `json:"rss_bytes"`
}

// scrape reads the process's goroutines and memory from its metrics.
func scrape(p *proc) (processStats, error) {
	res, body, err := testkit.Ask(defaultClient, p.metrics)
	if err == nil && res.StatusCode != http.StatusOK {
		err = fmt.Errorf("GET %s: %d", p.metrics, res.StatusCode)
	}
	if err != nil {
		return processStats{}, err
	}
	st := processStats{At: time.Now()}
	want := map[string]*float64{"go_goroutines": &st.Goroutines, "go_memstats_heap_inuse_bytes": &st.HeapInuse,
		"process_resident_memory_bytes": &st.RSS}
	found := 0
	for line := range strings.Lines(string(body)) {
		name, value, _ := strings.Cut(strings.TrimSpace(line), " ")
		if dst := want[name]; dst != nil {
			if *dst, err = strconv.ParseFloat(value, 64); err != nil {
				return processStats{}, fmt.Errorf("%s: %s %q", p.name, name, value)
			}
			found++
		}
	}
	if found != len(want) {
		return processStats{}, fmt.Errorf("%s: %d of %d process metrics in %s", p.name, found, len(want), p.metrics)
	}
	return st, nil
}

// buildBinaries builds cmd/api and cmd/poller into dir, as test/e2e does:
// without the race detector, since the processes are what is observed.
func buildBinaries(dir string) error {
	cmd := exec.Command("go", "build", "-o", dir+string(filepath.Separator), module+"/cmd/api", module+"/cmd/poller")
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("go build: %w\n%s", err, out)
	}
	return nil
}

// ghRequest is one request a poller sent to GitHub, as its gate saw it.
type ghRequest struct {
	Poller   string    `json:"poller"` // the process instance, "poller-2#1"
	Repo     string    `json:"repo"`
	At       time.Time `json:"at"`   // arrival
	Done     time.Time `json:"done"` // the answer was written, or the poller gave up
	Status   int       `json:"status"`
	Canceled bool      `json:"canceled,omitempty"` // the poller hung up before the answer
	Fault    string    `json:"fault,omitempty"`    // the GitHub fault in force on arrival
}

// newGithubGate starts a poller slot's way to the fake GitHub at target: a
// reverse proxy that records each request, which arrived fills in with the
// slot's current poller instance (the fake alone cannot tell pollers apart)
// and the GitHub fault in force.
func newGithubGate(target string, arrived func(*ghRequest), record func(ghRequest)) (*httptest.Server, error) {
	u, err := url.Parse(target)
	if err != nil {
		return nil, err
	}
	transport := &http.Transport{Proxy: nil, MaxIdleConnsPerHost: 16}
	return httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		q := ghRequest{Repo: repoOf(r.URL.Path), At: time.Now()}
		arrived(&q)
		(&httputil.ReverseProxy{
			Transport: transport,
			Rewrite:   func(pr *httputil.ProxyRequest) { pr.SetURL(u) },
			ModifyResponse: func(res *http.Response) error {
				q.Status = res.StatusCode
				return nil
			},
			ErrorHandler: func(w http.ResponseWriter, _ *http.Request, _ error) {
				q.Status = http.StatusBadGateway
				w.WriteHeader(q.Status)
			},
		}).ServeHTTP(w, r)
		q.Done, q.Canceled = time.Now(), r.Context().Err() != nil
		record(q)
	})), nil
}

// repoOf returns "org/project" of /repos/org/project/releases/latest, else the path.
func repoOf(path string) string {
	parts := strings.Split(strings.TrimPrefix(path, "/"), "/")
	if len(parts) == 5 && parts[0] == "repos" && parts[3] == "releases" {
		return parts[1] + "/" + parts[2]
	}
	return path
}

// redisGate is a poller slot's way to Redis: a TCP proxy per sentinel and per
// redis-server, so that the soak can make Redis silent for that poller alone.
// The sentinels' answers name redis-servers and sentinels by port; the gate
// rewrites each real port to its own proxy's, so the poller's client connects
// to the proxies whatever the sentinels tell it. Every port is five digits
// (the kernel's ephemeral range), so a rewrite keeps RESP's lengths.
type redisGate struct {
	addrs map[string]string // real address → its proxy's
	lns   []net.Listener

	mu     sync.Mutex
	resume chan struct{}         // during a stall, closed when it ends
	conns  map[net.Conn]struct{} // every open connection, either side
}

// newRedisGate makes a proxy for each of sentinels and servers (host:port).
func newRedisGate(sentinels, servers []string) (*redisGate, error) {
	g := &redisGate{addrs: map[string]string{}, conns: map[net.Conn]struct{}{}}
	targets, ports := slices.Concat(sentinels, servers), map[string]string{}
	for _, target := range targets {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			g.Close()
			return nil, err
		}
		g.lns, g.addrs[target] = append(g.lns, ln), ln.Addr().String()
		_, real, _ := net.SplitHostPort(target)
		_, mine, _ := net.SplitHostPort(ln.Addr().String())
		if ports[real] = mine; len(real) != len(mine) {
			g.Close()
			return nil, fmt.Errorf("redis gate: ports %s and %s differ in length", real, mine)
		}
	}
	for i, target := range targets {
		rewrite := ports
		if i >= len(sentinels) {
			rewrite = nil
		}
		go func() {
			for {
				client, err := g.lns[i].Accept()
				if err != nil {
					return
				}
				go g.serve(client, target, rewrite)
			}
		}()
	}
	return g, nil
}

// Addr returns the proxy's address for the real address target.
func (g *redisGate) Addr(target string) string { return g.addrs[target] }

// Stall makes Redis silent for the gate's poller until Resume: connections
// stay open and new ones are accepted, but nothing is passed on either way.
func (g *redisGate) Stall() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.resume = cmp.Or(g.resume, make(chan struct{}))
}

// Resume ends a stall and closes every connection open during it (a healed
// partition whose connections the peers have given up on).
func (g *redisGate) Resume() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.resume != nil {
		close(g.resume)
		g.resume = nil
		for c := range g.conns {
			c.Close()
		}
	}
}

func (g *redisGate) Close() {
	g.Stall()
	g.Resume()
	for _, ln := range g.lns {
		ln.Close()
	}
}

// pass reports whether bytes may go on now; during a stall it waits for the
// end and reports false: the connection is then closed.
func (g *redisGate) pass() bool {
	g.mu.Lock()
	ch := g.resume
	g.mu.Unlock()
	if ch != nil {
		<-ch
	}
	return ch == nil
}

// track adds c to the open connections; the func it returns closes c and
// removes it.
func (g *redisGate) track(c net.Conn) func() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.conns[c] = struct{}{}
	return func() {
		g.mu.Lock()
		defer g.mu.Unlock()
		delete(g.conns, c)
		c.Close()
	}
}

func (g *redisGate) serve(client net.Conn, target string, rewrite map[string]string) {
	defer g.track(client)()
	if !g.pass() {
		return
	}
	server, err := net.DialTimeout("tcp", target, time.Second)
	if err != nil {
		return
	}
	defer g.track(server)()
	go func() {
		g.copy(client, server, rewrite)
		client.Close()
	}()
	g.copy(server, client, nil)
}

// copy passes src on to dst line by line (RESP is line-based), rewriting
// ports where asked, until either side fails or a stall ends.
func (g *redisGate) copy(dst io.Writer, src io.Reader, rewrite map[string]string) {
	r := bufio.NewReaderSize(src, 64<<10)
	for {
		line, err := r.ReadSlice('\n')
		if rewrite != nil && err == nil {
			line = rewritePorts(line, rewrite)
		}
		if len(line) > 0 && !g.pass() {
			return
		}
		if _, werr := dst.Write(line); werr != nil || err != nil && !errors.Is(err, bufio.ErrBufferFull) {
			return
		}
	}
}

// rewritePorts replaces each space-separated word of line that is a key of
// ports by its value, of the same length.
func rewritePorts(line []byte, ports map[string]string) []byte {
	body := strings.TrimRight(string(line), "\r\n")
	words := strings.Split(body, " ")
	for i, w := range words {
		words[i] = cmp.Or(ports[w], w)
	}
	return append([]byte(strings.Join(words, " ")), line[len(body):]...)
}
