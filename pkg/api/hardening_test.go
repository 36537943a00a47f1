package api

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/storytold/craft-releases/pkg/daemon"
	"github.com/storytold/craft-releases/pkg/routes"
	"github.com/storytold/craft-releases/test/testkit"
)

// serveOnLoopback serves s on a loopback listener until the test ends.
func serveOnLoopback(t *testing.T, s *Server) string {
	t.Helper()
	ln := testkit.Listen(t)
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() {
		served <- daemon.Serve(ctx, daemon.Endpoint{Handler: s, Listener: ln}, time.Second, zap.NewNop())
	}()
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
	_ = c.SetDeadline(time.Now().Add(30 * time.Second))
	if _, err := io.WriteString(c, raw); err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(c)
	res, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatalf("read answer: %v", err)
	}
	_, _ = io.Copy(io.Discard, res.Body)
	res.Body.Close()
	_, err = fmt.Fprintf(c, "GET %s HTTP/1.1\r\nHost: x\r\n\r\n", daemon.HealthzPath)
	var code int
	if err == nil {
		var second *http.Response
		if second, err = http.ReadResponse(br, nil); err == nil {
			code = second.StatusCode
			second.Body.Close()
		}
	}
	return res.StatusCode, res.Header.Get("Connection"), err != nil || code != http.StatusOK
}

// TestBodyOnGetRefused: a GET or HEAD with a body is answered 400 and the
// connection closed, on any path (RFC 9112 §6.1).
func TestBodyOnGetRefused(t *testing.T) {
	t.Parallel()
	obs := &recorder{}
	addr := serveOnLoopback(t, New(fixed{rendering(t, true)}, new(daemon.Gate), zap.NewNop(), Options{Observer: obs}))
	for _, tt := range []struct {
		name, raw  string
		wantStatus int
		wantClosed bool
	}{
		{"GET with Content-Length", "GET " + routes.ReleaseInfoPath + " HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\nhello", 400, true},
		{"GET chunked", "GET " + routes.ReleaseInfoPath + " HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n", 400, true},
		{"HEAD with Content-Length", "HEAD " + daemon.HealthzPath + " HTTP/1.1\r\nHost: x\r\nContent-Length: 1\r\n\r\nx", 400, true},
		{"GET of an unknown path with a body", "GET /nope HTTP/1.1\r\nHost: x\r\nContent-Length: 1\r\n\r\nx", 400, true},
		{"GET with Content-Length 0", "GET " + routes.ReleaseInfoPath + " HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n", 200, false},
		{"GET without a body", "GET " + routes.ReleaseInfoPath + " HTTP/1.1\r\nHost: x\r\n\r\n", 200, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			status, conn, closed := roundTrip(t, addr, tt.raw)
			if status != tt.wantStatus || closed != tt.wantClosed {
				t.Errorf("status %d, Connection %q, closed %v; want %d, closed %v", status, conn, closed, tt.wantStatus, tt.wantClosed)
			}
		})
	}
	if got := obs.take(); !slices.Contains(got, routes.ReleaseInfoPath+" 400") || !slices.Contains(got, daemon.UnmatchedRoute+" 400") {
		t.Errorf("observed %v, want the 400s counted under their route and %s", got, daemon.UnmatchedRoute)
	}
}
