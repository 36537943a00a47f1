package daemon

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/storytold/craft-releases/test/testkit"
)

// testHandler answers the health endpoints, and a POST of /slow with 401
// once its whole body arrived, as the webhook refuses an unsigned one.
func testHandler() http.Handler {
	health := NewHealth(new(Gate), nil, zap.NewNop(), nil)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost && r.URL.Path == "/slow" {
			_, _ = io.Copy(io.Discard, r.Body)
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		health.ServeHTTP(w, r)
	})
}

// serveOnLoopback serves h, capped at max connections, with the timeouts to,
// on a loopback listener until the test ends, and returns its address.
func serveOnLoopback(t testing.TB, h http.Handler, max int, to timeouts) string {
	t.Helper()
	ln := listen(t)
	cancel, served := startServe(Endpoint{Handler: h, Listener: ln, MaxConnections: max}, to, time.Second)
	t.Cleanup(func() {
		cancel()
		if err := <-served; err != nil {
			t.Errorf("Serve: %v", err)
		}
	})
	return ln.Addr().String()
}

// startServe runs serve until cancel is called, and delivers its result.
func startServe(ep Endpoint, to timeouts, shutdown time.Duration) (context.CancelFunc, <-chan error) {
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- serve(ctx, ep, to, shutdown, zap.NewNop()) }()
	return cancel, served
}

// idleConn is a client connection that made one request and is kept alive.
type idleConn struct {
	net.Conn
	br *bufio.Reader
}

// get sends a GET of path and returns the answer's status once its body is read.
func (c *idleConn) get(path string) (int, error) {
	if _, err := fmt.Fprintf(c, "GET %s HTTP/1.1\r\nHost: x\r\n\r\n", path); err != nil {
		return 0, err
	}
	res, err := http.ReadResponse(c.br, nil)
	if err != nil {
		return 0, err
	}
	defer res.Body.Close()
	_, err = io.Copy(io.Discard, res.Body)
	return res.StatusCode, err
}

// dial connects to addr until the test ends, with a deadline that guards
// against a hang.
func dial(t testing.TB, addr string) net.Conn {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	_ = c.SetDeadline(time.Now().Add(30 * time.Second))
	return c
}

// dialSend dials addr and sends s.
func dialSend(t testing.TB, addr, s string) net.Conn {
	t.Helper()
	c := dial(t, addr)
	if _, err := io.WriteString(c, s); err != nil {
		t.Fatal(err)
	}
	return c
}

// dialIdle dials addr and makes one request, answered.
func dialIdle(t *testing.T, addr string) *idleConn {
	t.Helper()
	c := dial(t, addr)
	ic := &idleConn{Conn: c, br: bufio.NewReader(c)}
	if code, err := ic.get(HealthzPath); err != nil || code != 200 {
		t.Fatalf("first request: %d, %v", code, err)
	}
	return ic
}

// TestConnectionCap: with real loopback connections, a server at its cap
// closes idle keep-alive connections for new ones, so a flood of them never
// locks a new client out, holds no more than the cap, and makes a new
// connection wait when none is idle.
func TestConnectionCap(t *testing.T) {
	const max = 4
	addr := serveOnLoopback(t, testHandler(), max, serverTimeouts)

	// A flood of idle connections, three times the cap: each new one is
	// served, closing an idle one.
	flood := make([]*idleConn, 3*max)
	for i := range flood {
		flood[i] = dialIdle(t, addr)
	}
	var open []*idleConn
	for _, c := range flood {
		if code, err := c.get(HealthzPath); err == nil && code == http.StatusOK {
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
		busy[i] = dialSend(t, addr, fmt.Sprintf("POST /slow HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n%s", len(body), body[:1]))
	}
	for i, c := range open {
		if _, err := c.br.ReadByte(); err != io.EOF {
			t.Errorf("idle connection %d: read %v, want EOF (closed for a busy one)", i, err)
		}
	}
	// None is idle now: a new connection waits, closing no busy one, and is
	// served once a busy one goes.
	waiting, c := make(chan error, 1), dial(t, addr)
	go func() {
		code, err := (&idleConn{Conn: c, br: bufio.NewReader(c)}).get(HealthzPath)
		if err == nil && code != http.StatusOK {
			err = fmt.Errorf("status %d", code)
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
			t.Errorf("busy connection %d: %v, %v; want it kept and answered", i+1, res, err)
		}
	}
}

// TestSilentConnectionsAtTheCap: connections that send no request, or only
// its first byte (a flood of connects renewed before the header timeout),
// take no client's place: at the cap the oldest of them without its headers
// for headerGrace is closed for a new client, and the others stay open.
func TestSilentConnectionsAtTheCap(t *testing.T) {
	for name, first := range map[string]string{"silent": "", "one byte": "G"} {
		t.Run(name, func(t *testing.T) {
			const max = 4
			addr := serveOnLoopback(t, testHandler(), max, serverTimeouts)
			silent := make([]*bufio.Reader, max)
			conns := make([]net.Conn, max)
			for i := range silent {
				conns[i] = dialSend(t, addr, first)
				silent[i] = bufio.NewReader(conns[i])
				if i < max-1 {
					// Each is the server's before the next: a request on another
					// connection, under the cap, is answered after it was accepted.
					probe := dialIdle(t, addr)
					probe.Close()
				}
			}
			time.Sleep(headerGrace) // not a timed assertion: the silent ones come of age
			client := dialIdle(t, addr)
			if code, err := client.get(HealthzPath); err != nil || code != http.StatusOK {
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
	ln := listen(t)
	cancel, served := startServe(Endpoint{Handler: testHandler(), Listener: ln}, serverTimeouts, time.Second)
	unused := dial(t, ln.Addr().String())
	dialIdle(t, ln.Addr().String()) // answered on another connection: the unused one was accepted by then
	cancel()
	if err := <-served; err != nil {
		t.Errorf("Serve = %v after shutdown with an unused connection open, want nil", err)
	}
	if _, err := unused.Read(make([]byte, 1)); !errors.Is(err, io.EOF) {
		t.Errorf("the unused connection: read %v, want EOF (closed)", err)
	}
}

// TestAgeStartsWithTheSlot: a connection that waited for room longer than
// headerGrace is not closed for the next one as soon as it gets its slot:
// its time to send its headers starts then.
func TestAgeStartsWithTheSlot(t *testing.T) {
	addr := serveOnLoopback(t, testHandler(), 1, serverTimeouts)
	busy := dialSend(t, addr, "POST /slow HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\nx")
	waiting := dial(t, addr)    // accepted, waits for room
	time.Sleep(2 * headerGrace) // not a timed assertion: it waits longer than the grace
	_ = dial(t, addr)           // in the backlog, accepted once waiting has its slot
	busy.Close()                // the slot frees: waiting gets it, the next looks for room at once
	time.Sleep(headerGrace / 5) // within the grace, counted from the slot
	if code, err := (&idleConn{Conn: waiting, br: bufio.NewReader(waiting)}).get(HealthzPath); err != nil || code != http.StatusOK {
		t.Fatalf("the connection that waited for room: %d, %v; want it served", code, err)
	}
}

// TestStuckWriteAtTheCap: at the cap, a connection whose answer the client
// does not read (it may have pipelined many requests) is closed for a new
// one once the client took nothing for writeGrace, not at the write
// timeout; a client that reads a large answer slowly keeps its connection.
func TestStuckWriteAtTheCap(t *testing.T) {
	testkit.Integration(t) // it waits seconds on the wall clock
	// Far more than the connection's buffers hold, so that the client's
	// reads pace the writes, for far longer than writeGrace.
	const size = 24 << 20
	answer := bytes.Repeat([]byte("x"), size)
	written := make(chan error, 1)
	h := testHandler()
	handler := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/large" {
			h.ServeHTTP(w, r)
			return
		}
		_, err := w.Write(answer)
		written <- err
	})
	for _, tt := range []struct {
		name      string
		readEvery time.Duration // 0: never
		wantKept  bool
	}{
		{"unread", 0, false},
		{"read slowly", 5 * time.Millisecond, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			addr := serveOnLoopback(t, handler, 1, serverTimeouts)
			c := dialSend(t, addr, "GET /large HTTP/1.1\r\nHost: x\r\n\r\n")
			read := make(chan int64, 1) // how much of the answer's body was read
			if tt.readEvery > 0 {
				go func() {
					res, err := http.ReadResponse(bufio.NewReader(c), nil)
					if err != nil {
						read <- 0
						return
					}
					var n int64
					buf := make([]byte, 64<<10)
					for {
						m, err := io.ReadFull(res.Body, buf)
						n += int64(m)
						if err != nil {
							read <- n
							return
						}
						time.Sleep(tt.readEvery)
					}
				}()
			}
			// A new client at the cap, with a deadline far shorter than the
			// write timeout.
			client := dialIdle(t, addr)
			_ = client.SetDeadline(time.Now().Add(5 * time.Second))
			code, err := client.get(HealthzPath)
			if err != nil || code != http.StatusOK {
				t.Fatalf("a new client: %d, %v; want it served", code, err)
			}
			werr := <-written
			if tt.wantKept {
				if werr != nil {
					t.Errorf("the answer read slowly: %v, want it written whole", werr)
				}
				if n := <-read; n != size {
					t.Errorf("the answer read slowly: %d bytes read, want %d", n, size)
				}
				return
			}
			if werr == nil || errors.Is(werr, os.ErrDeadlineExceeded) {
				t.Errorf("the unread answer: write %v, want it cut off by the cap, not by the write timeout", werr)
			}
		})
	}
}

// TestErrorsCloseCleanly: the answers net/http writes itself to a request
// it cannot read (its headers too large, or malformed) reach the client
// whole, followed by the end of the stream, not a reset; a request with a
// body its route does not take is answered, and its connection closed, at
// once: not once the body arrived or the read timeout passed.
func TestErrorsCloseCleanly(t *testing.T) {
	addr := serveOnLoopback(t, testHandler(), 0, serverTimeouts)
	for _, tt := range []struct {
		name, request, want string
	}{
		{"headers too large", "GET /healthz HTTP/1.1\r\nHost: x\r\nX-Big: " + strings.Repeat("a", 80<<10) + "\r\n\r\n", "HTTP/1.1 431 "},
		{"malformed header", "GET /healthz HTTP/1.1\r\nHost: x\r\nno colon\r\n\r\n", "HTTP/1.1 400 "},
		{"malformed length", "POST /healthz HTTP/1.1\r\nHost: x\r\nContent-Length: x\r\n\r\n", "HTTP/1.1 400 "},
		{"a body the route does not take", "POST /healthz HTTP/1.1\r\nHost: x\r\nContent-Length: 200000\r\n\r\nx", "HTTP/1.1 405 "},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c := dialSend(t, addr, tt.request)
			_ = c.SetDeadline(time.Now().Add(ReadTimeout / 2)) // the answer and EOF before the read timeout
			got, err := io.ReadAll(c)
			if err != nil || !strings.HasPrefix(string(got), tt.want) {
				t.Errorf("got %.40q, %v; want %q..., then EOF", got, err, tt.want)
			}
		})
	}
}
