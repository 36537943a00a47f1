package daemon

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/storytold/craft-releases/test/testkit"
)

// blocking is a handler that answers "done" once release is closed,
// announcing each request on entered.
type blocking struct {
	entered chan struct{}
	release chan struct{}
}

func newBlocking() blocking {
	return blocking{entered: make(chan struct{}), release: make(chan struct{})}
}

func (b blocking) ServeHTTP(w http.ResponseWriter, _ *http.Request) {
	b.entered <- struct{}{}
	<-b.release
	_, _ = io.WriteString(w, "done")
}

// closeNotifier is a listener that reports when it is closed.
type closeNotifier struct {
	net.Listener
	once   sync.Once
	closed chan struct{}
}

func (l *closeNotifier) Close() error {
	l.once.Do(func() { close(l.closed) })
	return l.Listener.Close()
}

// listen returns a loopback listener that reports when it is closed.
func listen(t testing.TB) *closeNotifier {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ln.Close() })
	return &closeNotifier{Listener: ln, closed: make(chan struct{})}
}

type result struct {
	res  *http.Response
	body []byte
	err  error
}

// get requests url in the background and delivers the outcome on the channel.
func get(url string) <-chan result {
	out := make(chan result, 1)
	go func() { res, body, err := testkit.Ask(nil, url); out <- result{res, body, err} }()
	return out
}

// shutDuringRequest serves a blocking handler with the given shutdown
// timeout, and starts the shutdown once a request is in it.
func shutDuringRequest(t *testing.T, shutdown time.Duration) (h blocking, ln *closeNotifier, served <-chan error, inFlight <-chan result) {
	t.Helper()
	h, ln = newBlocking(), listen(t)
	cancel, served := startServe(Endpoint{Handler: h, Listener: ln}, serverTimeouts, shutdown)
	t.Cleanup(cancel)
	inFlight = get("http://" + ln.Addr().String() + "/slow")
	<-h.entered
	cancel()
	return h, ln, served, inFlight
}

// TestServeGraceful: a shutdown stops accepting at once and waits for the
// request in flight.
func TestServeGraceful(t *testing.T) {
	h, ln, served, inFlight := shutDuringRequest(t, time.Minute)
	// The listener closing is what refuses new connections. (Dialling the
	// port to prove it would be flaky: another test may listen on it by now.)
	<-ln.closed

	select {
	case err := <-served:
		t.Fatalf("Serve returned %v with a request in flight", err)
	default:
	}

	close(h.release)
	res := <-inFlight
	if res.err != nil || res.res.StatusCode != http.StatusOK || string(res.body) != "done" {
		t.Errorf("in-flight request: got %v, %q, err %v; want 200 with the body", res.res, res.body, res.err)
	}
	if err := <-served; err != nil {
		t.Errorf("Serve: got %v, want nil after a graceful shutdown", err)
	}
}

// TestServeShutdownDeadline: a request still running at the deadline is cut.
func TestServeShutdownDeadline(t *testing.T) {
	h, _, served, inFlight := shutDuringRequest(t, 10*time.Millisecond)
	if err := <-served; !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Serve: got %v, want the shutdown deadline exceeded", err)
	}
	close(h.release)
	if res := <-inFlight; res.err == nil {
		t.Errorf("request cut at the deadline: got status %d, want a connection error", res.res.StatusCode)
	}
}

// TestTimeouts: behind the connection cap, each of the server's timeouts
// still ends what it bounds (a request's headers, its body, an answer the
// client does not read, an idle keep-alive connection), and none cuts off a
// client that keeps within them.
func TestTimeouts(t *testing.T) {
	testkit.Integration(t) // it waits seconds on the wall clock
	// As in production, an answer has longer than its request: the answer to a
	// body cut off by the read timeout is written after it.
	to := timeouts{header: 100 * time.Millisecond, read: 300 * time.Millisecond, write: 600 * time.Millisecond, idle: 300 * time.Millisecond,
		headerGrace: headerGrace, writeGrace: writeGrace}
	stuck := make(chan error, 1)
	h := testHandler()
	handler := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/flood" {
			h.ServeHTTP(w, r)
			return
		}
		chunk := make([]byte, 1<<20)
		for {
			if _, err := w.Write(chunk); err != nil {
				stuck <- err
				return
			}
		}
	})
	addr := serveOnLoopback(t, handler, 0, to)
	closed := func(what string, c net.Conn) {
		t.Helper()
		if _, err := io.ReadAll(c); err != nil && !errors.Is(err, syscall.ECONNRESET) {
			t.Errorf("%s: %v, want the connection closed", what, err)
		}
	}

	// A keep-alive client inside every bound is served throughout, over
	// several idle and read timeouts.
	client := dialIdle(t, addr)
	for end := time.Now().Add(4 * to.idle); time.Now().Before(end); time.Sleep(to.idle / 3) {
		if code, err := client.get(HealthzPath); err != nil || code != http.StatusOK {
			t.Fatalf("a client within the timeouts: %d, %v", code, err)
		}
	}

	closed("headers never ended", dialSend(t, addr, "GET /healthz HTTP/1.1\r\nHost: x\r\n"))

	body := dialSend(t, addr, "POST /slow HTTP/1.1\r\nHost: x\r\nContent-Length: 10\r\n\r\nx")
	if res, err := http.ReadResponse(bufio.NewReader(body), nil); err != nil || res.StatusCode != http.StatusUnauthorized {
		t.Errorf("a body that stopped: %v, %v; want the handler's read cut off, then its answer", res, err)
	}

	dialSend(t, addr, "GET /flood HTTP/1.1\r\nHost: x\r\n\r\n")
	select {
	case err := <-stuck:
		if !errors.Is(err, os.ErrDeadlineExceeded) {
			t.Errorf("an answer never read: %v, want the write deadline exceeded", err)
		}
	case <-time.After(10 * time.Second):
		t.Error("an answer never read: the handler's write still blocked after 10 s")
	}

	closed("idle", client)
}
