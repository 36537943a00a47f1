package soak

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"time"
)

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

// githubGate is a poller slot's way to the fake GitHub: a reverse proxy on a
// loopback port of its own that records each request with the poller
// instance that sent it (the fake alone cannot tell pollers apart).
type githubGate struct {
	srv    *http.Server
	ln     net.Listener
	proxy  *httputil.ReverseProxy
	who    func() string // the slot's current poller instance
	fault  func() string // the GitHub fault in force
	record func(ghRequest)
}

func newGithubGate(target string, who, fault func() string, record func(ghRequest)) (*githubGate, error) {
	u, err := url.Parse(target)
	if err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	g := &githubGate{ln: ln, who: who, fault: fault, record: record}
	g.proxy = httputil.NewSingleHostReverseProxy(u)
	g.proxy.Transport = &http.Transport{Proxy: nil, MaxIdleConnsPerHost: 16}
	g.proxy.ErrorHandler = func(w http.ResponseWriter, _ *http.Request, _ error) {
		w.WriteHeader(http.StatusBadGateway)
	}
	g.srv = &http.Server{Handler: g, ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = g.srv.Serve(ln) }()
	return g, nil
}

// URL is the gate's base URL, as CRAFT_APPS_RELEASE_GITHUB_API_URL takes it.
func (g *githubGate) URL() string { return "http://" + g.ln.Addr().String() + "/" }

func (g *githubGate) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	req := ghRequest{Poller: g.who(), Repo: repoOf(r.URL.Path), At: time.Now(), Fault: g.fault()}
	sw := &statusWriter{ResponseWriter: w}
	g.proxy.ServeHTTP(sw, r)
	req.Done, req.Status, req.Canceled = time.Now(), sw.status, r.Context().Err() != nil
	g.record(req)
}

func (g *githubGate) Close() { _ = g.srv.Close() }

// repoOf returns "org/project" of /repos/org/project/releases/latest, else the path.
func repoOf(path string) string {
	parts := strings.Split(strings.TrimPrefix(path, "/"), "/")
	if len(parts) == 5 && parts[0] == "repos" && parts[3] == "releases" {
		return parts[1] + "/" + parts[2]
	}
	return path
}

type statusWriter struct {
	http.ResponseWriter
	status int
}

func (w *statusWriter) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	return w.ResponseWriter.Write(b)
}

// redisGate is a poller slot's way to Redis: one TCP proxy per sentinel and
// per redis-server, so that the soak can make Redis silent for that poller
// alone. The sentinels' answers name redis-servers and sentinels by port; the
// gate rewrites each real port to its own proxy's, so the poller's client
// connects to the proxies whatever the sentinels tell it. Every port is five
// digits (the kernel's ephemeral range), so a rewrite keeps RESP's lengths.
type redisGate struct {
	proxies  []*tcpProxy
	byTarget map[string]*tcpProxy // real address → its proxy

	mu      sync.Mutex
	stalled bool
	resume  chan struct{}         // closed when a stall ends
	conns   map[net.Conn]struct{} // every open connection, either side
	doomed  []net.Conn            // open during the stall: closed when it ends
}

// newRedisGate makes a proxy for each of sentinels and servers (host:port).
func newRedisGate(sentinels, servers []string) (*redisGate, error) {
	g := &redisGate{byTarget: make(map[string]*tcpProxy), conns: make(map[net.Conn]struct{})}
	ports := make(map[string]string)
	for _, target := range append(append([]string(nil), sentinels...), servers...) {
		p, err := g.listen(target)
		if err != nil {
			g.Close()
			return nil, err
		}
		_, real, _ := net.SplitHostPort(target)
		_, mine, _ := net.SplitHostPort(p.ln.Addr().String())
		if len(real) != len(mine) {
			g.Close()
			return nil, fmt.Errorf("redis gate: ports %s and %s differ in length", real, mine)
		}
		ports[real] = mine
	}
	for _, s := range sentinels {
		g.byTarget[s].rewrite = ports
	}
	return g, nil
}

func (g *redisGate) listen(target string) (*tcpProxy, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	p := &tcpProxy{gate: g, ln: ln, target: target}
	g.proxies = append(g.proxies, p)
	g.byTarget[target] = p
	go p.accept()
	return p, nil
}

// Addr returns the proxy address that stands for the real address target.
func (g *redisGate) Addr(target string) string { return g.byTarget[target].ln.Addr().String() }

// Stall makes Redis silent for the gate's poller: connections stay open and
// new ones are accepted, but nothing is passed on either way until Resume,
// which closes every connection that was open meanwhile (a healed partition
// whose connections the peers have given up on).
func (g *redisGate) Stall() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.stalled {
		return
	}
	g.stalled, g.resume = true, make(chan struct{})
	g.doomed = g.doomed[:0]
	for c := range g.conns {
		g.doomed = append(g.doomed, c)
	}
}

// Resume ends a stall.
func (g *redisGate) Resume() {
	g.mu.Lock()
	if !g.stalled {
		g.mu.Unlock()
		return
	}
	g.stalled = false
	close(g.resume)
	doomed := g.doomed
	g.doomed = nil
	g.mu.Unlock()
	for _, c := range doomed {
		c.Close()
	}
}

// pass reports whether bytes may go on now; during a stall it waits for the
// end and reports false: the connection is then closed.
func (g *redisGate) pass() bool {
	g.mu.Lock()
	if !g.stalled {
		g.mu.Unlock()
		return true
	}
	ch := g.resume
	g.mu.Unlock()
	<-ch
	return false
}

// track adds c to the open connections (and to the doomed ones during a
// stall); the returned func removes it.
func (g *redisGate) track(c net.Conn) func() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.conns[c] = struct{}{}
	if g.stalled {
		g.doomed = append(g.doomed, c)
	}
	return func() {
		g.mu.Lock()
		delete(g.conns, c)
		g.mu.Unlock()
	}
}

// Close stops every proxy and closes every connection.
func (g *redisGate) Close() {
	g.Resume()
	for _, p := range g.proxies {
		p.ln.Close()
	}
	g.mu.Lock()
	for c := range g.conns {
		c.Close()
	}
	g.mu.Unlock()
}

type tcpProxy struct {
	gate    *redisGate
	ln      net.Listener
	target  string
	rewrite map[string]string // real port → proxy port, in answers; nil: none
}

func (p *tcpProxy) accept() {
	for {
		client, err := p.ln.Accept()
		if err != nil {
			return
		}
		go p.serve(client)
	}
}

func (p *tcpProxy) serve(client net.Conn) {
	defer p.gate.track(client)()
	defer client.Close()
	if !p.gate.pass() {
		return
	}
	server, err := net.DialTimeout("tcp", p.target, time.Second)
	if err != nil {
		return
	}
	defer p.gate.track(server)()
	defer server.Close()
	done := make(chan struct{})
	go func() {
		defer close(done)
		p.copyAnswers(client, server)
		client.Close()
	}()
	buf := make([]byte, 32<<10)
	for {
		n, err := client.Read(buf)
		if n > 0 && (!p.gate.pass() || writeAll(server, buf[:n]) != nil) {
			break
		}
		if err != nil {
			break
		}
	}
	server.Close()
	<-done
}

// copyAnswers passes the server's answers on line by line (RESP is
// line-based), rewriting ports where the gate asks.
func (p *tcpProxy) copyAnswers(dst io.Writer, src io.Reader) {
	r := bufio.NewReaderSize(src, 64<<10)
	for {
		line, err := r.ReadSlice('\n')
		if len(line) > 0 {
			if p.rewrite != nil && err == nil {
				line = rewritePorts(line, p.rewrite)
			}
			if !p.gate.pass() || writeAll(dst, line) != nil {
				return
			}
		}
		if err != nil && !errors.Is(err, bufio.ErrBufferFull) {
			return
		}
	}
}

// rewritePorts replaces each space-separated word of line that is a key of
// ports by its value, of the same length.
func rewritePorts(line []byte, ports map[string]string) []byte {
	body := bytes.TrimRight(line, "\r\n")
	words := bytes.Split(body, []byte(" "))
	changed := false
	for i, w := range words {
		if to, ok := ports[string(w)]; ok {
			words[i], changed = []byte(to), true
		}
	}
	if !changed {
		return line
	}
	out := bytes.Join(words, []byte(" "))
	return append(out, line[len(body):]...)
}

func writeAll(w io.Writer, b []byte) error {
	_, err := w.Write(b)
	return err
}
