package api

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"testing"
	"time"

	"go.uber.org/zap"
)

// TestNosniffOnEveryAnswer: every answer of both servers, errors included,
// carries X-Content-Type-Options: nosniff (issue 10, finding 7).
func TestNosniffOnEveryAnswer(t *testing.T) {
	metrics := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "m 1\n") })
	servers := map[string]http.Handler{
		"api":    New(fixed{rendering(t, true)}, new(Gate), zap.NewNop(), Options{}),
		"health": NewHealth(new(Gate), zap.NewNop(), Options{Metrics: metrics}),
	}
	requests := []struct{ method, path string }{
		{"GET", ReleaseInfoPath}, {"HEAD", ReleaseInfoPath}, {"OPTIONS", ReleaseInfoPath}, {"POST", ReleaseInfoPath},
		{"GET", HealthzPath}, {"GET", ReadyzPath}, {"GET", MetricsPath}, {"GET", "/nope"}, {"DELETE", HealthzPath},
	}
	for name, srv := range servers {
		for _, r := range requests {
			t.Run(name+" "+r.method+" "+r.path, func(t *testing.T) {
				w := httptest.NewRecorder()
				srv.ServeHTTP(w, httptest.NewRequest(r.method, r.path, nil))
				if got := w.Header().Get("X-Content-Type-Options"); got != "nosniff" {
					t.Errorf("status %d, X-Content-Type-Options %q, want nosniff", w.Code, got)
				}
			})
		}
	}
	t.Run("304", func(t *testing.T) {
		cur := rendering(t, true)
		req := httptest.NewRequest("GET", ReleaseInfoPath, nil)
		req.Header.Set("If-None-Match", cur.ETag)
		w := httptest.NewRecorder()
		servers["api"].ServeHTTP(w, req)
		if w.Code != http.StatusNotModified || w.Header().Get("X-Content-Type-Options") != "nosniff" {
			t.Errorf("status %d, headers %v; want 304 with nosniff", w.Code, w.Header())
		}
	})
}

// TestOptionsRoute: OPTIONS is answered by the route itself: 204 with Allow,
// the Vary of the route's other answers, and counted under the route
// (finding 7).
func TestOptionsRoute(t *testing.T) {
	obs := &recorder{}
	srv := New(fixed{rendering(t, true)}, new(Gate), zap.NewNop(), Options{Observer: obs})
	tests := []struct{ target, route, vary string }{
		{ReleaseInfoPath, ReleaseInfoPath, "Accept-Encoding"},
		{ReleaseInfoPath + "/photocraft", ReleaseInfoAppPath, "Accept-Encoding"},
		{"/v1/craft_apps/download/photocraft", DownloadPath, "User-Agent"},
		{PagePath, PagePath, "Accept-Encoding"},
		{HealthzPath, HealthzPath, ""},
		{ReadyzPath, ReadyzPath, ""},
	}
	var want []string
	for _, tt := range tests {
		w := httptest.NewRecorder()
		srv.ServeHTTP(w, httptest.NewRequest(http.MethodOptions, tt.target, nil))
		if w.Code != http.StatusNoContent || w.Header().Get("Allow") != "GET, HEAD, OPTIONS" {
			t.Errorf("OPTIONS %s: status %d, Allow %q; want 204, GET, HEAD, OPTIONS", tt.target, w.Code, w.Header().Get("Allow"))
		}
		if got := w.Header().Get("Vary"); got != tt.vary {
			t.Errorf("OPTIONS %s: Vary %q, want %q", tt.target, got, tt.vary)
		}
		want = append(want, tt.route+" 204")
	}
	if got := obs.take(); !slices.Equal(got, want) {
		t.Errorf("observed %v, want %v", got, want)
	}
}

// serveOnLoopback runs s on a loopback listener until the test ends and returns its
// address.
func serveOnLoopback(t *testing.T, s *Server) string {
	t.Helper()
	ln := listen(t)
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- s.Serve(ctx, ln, time.Second) }()
	t.Cleanup(func() {
		cancel()
		if err := <-served; err != nil {
			t.Errorf("Serve: %v", err)
		}
	})
	return ln.Addr().String()
}

// roundTrip sends raw on a new connection and returns the answer's status,
// its Connection header and whether the server then closed the connection:
// EOF, where a connection kept open answers a second request.
func roundTrip(t *testing.T, addr, raw string) (int, string, bool) {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	// A guard against a hang, not a timed assertion.
	_ = c.SetDeadline(time.Now().Add(30 * time.Second))
	if _, err := io.WriteString(c, raw); err != nil {
		t.Fatal(err)
	}
	ic := &idleConn{Conn: c, br: bufio.NewReader(c)}
	res, err := http.ReadResponse(ic.br, nil)
	if err != nil {
		t.Fatalf("read answer: %v", err)
	}
	_, _ = io.Copy(io.Discard, res.Body)
	res.Body.Close()
	code, err := ic.get(t, HealthzPath)
	return res.StatusCode, res.Header.Get("Connection"), err != nil || code != http.StatusOK
}

// TestBodyOnGetRefused: a GET or HEAD with a body is answered 400 and the
// connection closed, on any path (finding 7, RFC 9112 §6.1).
func TestBodyOnGetRefused(t *testing.T) {
	obs := &recorder{}
	addr := serveOnLoopback(t, New(fixed{rendering(t, true)}, new(Gate), zap.NewNop(), Options{Observer: obs}))
	tests := []struct {
		name, raw  string
		wantStatus int
		wantClosed bool
	}{
		{"GET with Content-Length", "GET " + ReleaseInfoPath + " HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\nhello", 400, true},
		{"GET chunked", "GET " + ReleaseInfoPath + " HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n", 400, true},
		{"HEAD with Content-Length", "HEAD " + HealthzPath + " HTTP/1.1\r\nHost: x\r\nContent-Length: 1\r\n\r\nx", 400, true},
		{"GET of an unknown path with a body", "GET /nope HTTP/1.1\r\nHost: x\r\nContent-Length: 1\r\n\r\nx", 400, true},
		{"GET with Content-Length 0", "GET " + ReleaseInfoPath + " HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n", 200, false},
		{"GET without a body", "GET " + ReleaseInfoPath + " HTTP/1.1\r\nHost: x\r\n\r\n", 200, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			status, conn, closed := roundTrip(t, addr, tt.raw)
			if status != tt.wantStatus || closed != tt.wantClosed {
				t.Errorf("status %d, Connection %q, closed %v; want %d, closed %v", status, conn, closed, tt.wantStatus, tt.wantClosed)
			}
		})
	}
	if got := obs.take(); !slices.Contains(got, ReleaseInfoPath+" 400") || !slices.Contains(got, UnmatchedRoute+" 400") {
		t.Errorf("observed %v, want the 400s counted under their route and %s", got, UnmatchedRoute)
	}
}

// TestErrorsNoStore: every error answer is no-store, the router's own 404
// and 405 and a panic's 500 included, so that no cache keeps the 404 of a
// route a rollout is adding (issue 22, item 2).
func TestErrorsNoStore(t *testing.T) {
	s := New(fixed{rendering(t, true)}, new(Gate), zap.NewNop(), Options{})
	tests := []struct {
		name, method, target string
		want                 int
	}{
		{"unknown path", http.MethodGet, "/v1/craft_apps/release_infos", http.StatusNotFound},
		{"unknown path HEAD", http.MethodHead, "/nope", http.StatusNotFound},
		{"wrong method", http.MethodPost, ReleaseInfoPath, http.StatusMethodNotAllowed},
		{"wrong method on the page", http.MethodDelete, PagePath, http.StatusMethodNotAllowed},
		{"wrong method on the document", http.MethodPut, OpenAPIPath, http.StatusMethodNotAllowed},
		{"unknown app", http.MethodGet, ReleaseInfoPath + "/nope", http.StatusNotFound},
		{"bad download value", http.MethodGet, DownloadPath[:len(DownloadPath)-len(":app")] + "photocraft?os=beos", http.StatusBadRequest},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec := serve(t, s, tt.method, tt.target, nil)
			if rec.Code != tt.want || rec.Header().Get("Cache-Control") != "no-store" {
				t.Errorf("%s %s: %d, Cache-Control %q; want %d, no-store", tt.method, tt.target, rec.Code, rec.Header().Get("Cache-Control"), tt.want)
			}
		})
	}
	rec := serve(t, New(panicking{}, new(Gate), zap.NewNop(), Options{}), http.MethodGet, ReleaseInfoPath, nil)
	if rec.Code != http.StatusInternalServerError || rec.Header().Get("Cache-Control") != "no-store" {
		t.Errorf("panic: %d, Cache-Control %q; want 500, no-store", rec.Code, rec.Header().Get("Cache-Control"))
	}
}

// idleConn is a client connection that made one request and is kept alive.
type idleConn struct {
	net.Conn
	br *bufio.Reader
}

func (c *idleConn) get(t *testing.T, path string) (int, error) {
	t.Helper()
	if _, err := fmt.Fprintf(c, "GET %s HTTP/1.1\r\nHost: x\r\n\r\n", path); err != nil {
		return 0, err
	}
	res, err := http.ReadResponse(c.br, nil)
	if err != nil {
		return 0, err
	}
	_, _ = io.Copy(io.Discard, res.Body)
	res.Body.Close()
	return res.StatusCode, nil
}

func dialIdle(t *testing.T, addr string) *idleConn {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	_ = c.SetDeadline(time.Now().Add(30 * time.Second)) // a guard against a hang
	ic := &idleConn{Conn: c, br: bufio.NewReader(c)}
	if code, err := ic.get(t, HealthzPath); err != nil || code != 200 {
		t.Fatalf("first request: %d, %v", code, err)
	}
	return ic
}

// TestConnectionCap: with real loopback connections, a server at its cap
// closes idle keep-alive connections for new ones, so a flood of them never
// locks a new client out, holds no more than the cap, and makes a new
// connection wait when none is idle (finding 4).
func TestConnectionCap(t *testing.T) {
	const max = 4
	addr := serveOnLoopback(t, New(fixed{rendering(t, true)}, new(Gate), zap.NewNop(), Options{MaxConnections: max, Webhook: webhookHandler(t, true)}))

	// A flood of idle connections, three times the cap: each new one is
	// served, closing an idle one.
	flood := make([]*idleConn, 3*max)
	for i := range flood {
		flood[i] = dialIdle(t, addr)
	}
	var open []*idleConn
	for _, c := range flood {
		if code, err := c.get(t, HealthzPath); err == nil && code == http.StatusOK {
			open = append(open, c)
		}
	}
	if len(open) != max {
		t.Fatalf("%d of %d idle connections still served, want the cap, %d", len(open), len(flood), max)
	}
	if open[len(open)-1] != flood[len(flood)-1] {
		t.Error("the newest connection was closed, want an older idle one closed for it")
	}

	// Busy connections, slow but honest clients: a request whose body is
	// still on its way. Each takes the place of an idle one.
	const body = `{"zen":"slow"}`
	busy := make([]net.Conn, max)
	for i := range busy {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		_ = c.SetDeadline(time.Now().Add(30 * time.Second)) // a guard against a hang
		if _, err := fmt.Fprintf(c, "POST %s HTTP/1.1\r\nHost: x\r\nX-GitHub-Event: ping\r\nContent-Length: %d\r\n\r\n%s", WebhookPath, len(body), body[:1]); err != nil {
			t.Fatal(err)
		}
		busy[i] = c
	}
	for i, c := range open {
		if _, err := c.br.ReadByte(); err != io.EOF {
			t.Errorf("idle connection %d: read %v, want EOF (closed for a busy one)", i, err)
		}
	}
	// None is idle now: a new connection waits, closing no busy one, and is
	// served once a busy one goes.
	waiting := make(chan error, 1)
	go func() {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			waiting <- err
			return
		}
		defer c.Close()
		_ = c.SetDeadline(time.Now().Add(30 * time.Second))
		fmt.Fprintf(c, "GET %s HTTP/1.1\r\nHost: x\r\n\r\n", HealthzPath)
		res, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err == nil && res.StatusCode != http.StatusOK {
			err = fmt.Errorf("status %d", res.StatusCode)
		}
		waiting <- err
	}()
	busy[0].Close()
	if err := <-waiting; err != nil {
		t.Errorf("the waiting connection: %v, want it served", err)
	}
	for i, c := range busy[1:] {
		if _, err := io.WriteString(c, body[1:]); err != nil {
			t.Errorf("busy connection %d: %v", i+1, err)
			continue
		}
		res, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil || res.StatusCode != http.StatusUnauthorized {
			t.Errorf("busy connection %d: %v, %v; want it kept and answered (401: unsigned)", i+1, res, err)
		}
	}
}

// TestSilentConnectionsAtTheCap: connections that send no request, or only
// its first byte (a flood of connects renewed before the header timeout),
// take no client's place: at the cap the oldest of them without its headers
// for headerGrace is closed for a new client, and the others stay open
// (issue 21, item 4, for the byte).
func TestSilentConnectionsAtTheCap(t *testing.T) {
	for name, first := range map[string]string{"silent": "", "one byte": "G"} {
		t.Run(name, func(t *testing.T) {
			const max = 4
			addr := serveOnLoopback(t, New(fixed{rendering(t, true)}, new(Gate), zap.NewNop(), Options{MaxConnections: max}))
			silent := make([]*bufio.Reader, max)
			conns := make([]net.Conn, max)
			for i := range silent {
				c, err := net.Dial("tcp", addr)
				if err != nil {
					t.Fatal(err)
				}
				defer c.Close()
				if _, err := io.WriteString(c, first); err != nil {
					t.Fatal(err)
				}
				conns[i], silent[i] = c, bufio.NewReader(c)
				if i < max-1 {
					// Each is the server's before the next: a request on another
					// connection, under the cap, is answered after it was accepted.
					probe := dialIdle(t, addr)
					probe.Close()
				}
			}
			time.Sleep(headerGrace) // not a timed assertion: the silent ones come of age
			client := dialIdle(t, addr)
			if code, err := client.get(t, HealthzPath); err != nil || code != http.StatusOK {
				t.Fatalf("a client at the cap: %d, %v; want it served", code, err)
			}
			if _, err := silent[0].ReadByte(); err != io.EOF {
				t.Errorf("the oldest connection: read %v, want EOF (closed for the client)", err)
			}
			for i, r := range silent[1:] {
				_ = conns[i+1].SetReadDeadline(time.Now().Add(50 * time.Millisecond))
				if _, err := r.ReadByte(); !errors.Is(err, os.ErrDeadlineExceeded) {
					t.Errorf("connection %d: read %v, want it still open", i+1, err)
				}
			}
		})
	}
}

// TestIdleTimeoutFitsCloudflare: idle keep-alive connections outlive
// Cloudflare's 900 s proxy idle timeout, so the proxy closes them first.
func TestIdleTimeoutFitsCloudflare(t *testing.T) {
	if IdleTimeout <= 900*time.Second || IdleTimeout > 960*time.Second {
		t.Errorf("IdleTimeout = %v, want just over Cloudflare's 900 s", IdleTimeout)
	}
}

// TestShutdownClosesUnusedConnections: a connection that a client dialed and
// never used (HTTP clients keep spares) holds no request, so a shutdown
// shorter than net/http's 5 s grace for new connections still ends cleanly.
func TestShutdownClosesUnusedConnections(t *testing.T) {
	s := New(fixed{rendering(t, true)}, new(Gate), zap.NewNop(), Options{})
	ln := listen(t)
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- s.Serve(ctx, ln, time.Second) }()
	unused, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer unused.Close()
	// A request answered on another connection: the unused one was
	// accepted by then.
	idle := dialIdle(t, ln.Addr().String())
	defer idle.Close()
	cancel()
	if err := <-served; err != nil {
		t.Errorf("Serve = %v after shutdown with an unused connection open, want nil", err)
	}
	_ = unused.SetReadDeadline(time.Now().Add(10 * time.Second)) // a guard against a hang
	if _, err := unused.Read(make([]byte, 1)); err != io.EOF {
		t.Errorf("the unused connection: read %v, want EOF (closed)", err)
	}
}
