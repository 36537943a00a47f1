package daemon

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/storytold/craft-releases/pkg/snapshot"
)

// newSegments returns segments of random bytes of the given sizes.
func newSegments(sizes ...int) snapshot.Segments {
	r := rand.New(rand.NewPCG(1, uint64(len(sizes))))
	s := make(snapshot.Segments, len(sizes))
	for i, n := range sizes {
		s[i] = make([]byte, n)
		for j := range s[i] {
			s[i][j] = byte('a' + r.IntN(26))
		}
	}
	return s
}

// countingConn counts the writes that reach it one by one. A writev
// (net.Buffers) does not count: it reaches the embedded TCPConn directly.
type countingConn struct {
	*net.TCPConn
	writes *atomic.Int64
}

func (c countingConn) Write(p []byte) (int, error) {
	c.writes.Add(1)
	return c.TCPConn.Write(p)
}

type countingListener struct {
	net.Listener
	writes atomic.Int64
}

func (l *countingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return countingConn{TCPConn: c.(*net.TCPConn), writes: &l.writes}, nil
}

// serveCounting serves h until the test ends and returns its address and
// the count of single writes to its connections.
func serveCounting(t *testing.T, h http.Handler) (string, *atomic.Int64) {
	t.Helper()
	ln := &countingListener{Listener: listen(t)}
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- Serve(ctx, Listening{Handler: h, Listener: ln}, time.Second, zap.NewNop()) }()
	t.Cleanup(func() {
		cancel()
		if err := <-served; err != nil {
			t.Errorf("Serve: %v", err)
		}
	})
	return ln.Addr().String(), &ln.writes
}

// bodyHandler answers with body, written by WriteBody, or by its own
// WriteTo when the path is /plain.
func bodyHandler(body snapshot.Segments) http.Handler {
	length := body.Len()
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", strconv.Itoa(length))
		w.WriteHeader(http.StatusOK)
		if r.URL.Path == "/plain" {
			_, _ = body.WriteTo(w)
			return
		}
		if _, err := WriteBody(r, w, &body); err != nil {
			panic(err)
		}
	})
}

// TestWriteBodyCoalesces checks that WriteBody sends a large answer's
// headers and body in one writev, where net/http alone makes two writes,
// and that every answer arrives whole and in order on a kept-alive
// connection, whatever its pieces.
func TestWriteBodyCoalesces(t *testing.T) {
	tests := []struct {
		name  string
		sizes []int
		// The single writes an answer takes with WriteBody, and without.
		most, without int64
	}{
		// The headers and the first bytes fill net/http's buffer, then
		// the rest goes at once: one writev.
		{"large", []int{20_000}, 0, 2},
		// What is left after the buffer is sent stays in it until the
		// handler returns: the held bytes must be a copy.
		{"buffer and a bit", []int{4090}, 2, 2},
		{"pieces", []int{5000, 300, 2500, 9000, 10, 4096, 4097}, 1, 7},
		{"small", []int{100}, 1, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			body := newSegments(tt.sizes...)
			addr, writes := serveCounting(t, bodyHandler(body))
			c := dialIdle(t, addr)
			want := body.Bytes()
			for _, path := range []string{"/plain", "/", "/"} {
				before := writes.Load()
				if code, got, err := c.fetch(path); err != nil || code != http.StatusOK || !bytes.Equal(got, want) {
					t.Fatalf("GET %s: %d, %d bytes (%v), not the %d of the body", path, code, len(got), err, len(want))
				}
				got, most := writes.Load()-before, tt.most
				if path == "/plain" {
					most = tt.without
				}
				if got != most {
					t.Errorf("GET %s: %d single writes, want %d", path, got, most)
				}
			}
		})
	}
}

// TestWriteBodyHoldsNothingAfter checks that WriteBody sends what it held
// before it returns: a handler that flushes after it and then waits has
// its whole answer at the client.
func TestWriteBodyHoldsNothingAfter(t *testing.T) {
	body := newSegments(4090)
	sent := make(chan struct{})
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", "4090")
		if _, err := WriteBody(r, w, &body); err != nil {
			panic(err)
		}
		w.(http.Flusher).Flush()
		<-sent
	})
	addr, _ := serveCounting(t, h)
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	defer close(sent)
	_ = c.SetDeadline(time.Now().Add(10 * time.Second)) // a guard against a hang
	ic := &idleConn{Conn: c, br: bufio.NewReader(c)}
	if code, got, err := ic.fetch("/"); err != nil || code != http.StatusOK || !bytes.Equal(got, body[0]) {
		t.Fatalf("%d, %d bytes (%v), not the body's %d", code, len(got), err, len(body[0]))
	}
}

// readFour reads four bytes from c in the background.
func readFour(c net.Conn) <-chan []byte {
	got := make(chan []byte, 1)
	go func() {
		b := make([]byte, 4)
		_, _ = io.ReadFull(c, b)
		got <- b
	}()
	return got
}

// received returns what arrives on got, failing after 10 s.
func received(t *testing.T, got <-chan []byte) []byte {
	t.Helper()
	select {
	case b := <-got:
		return b
	case <-time.After(10 * time.Second):
		t.Fatal("nothing was sent in 10 s")
		return nil
	}
}

// panicking writes its bytes to w, then panics.
type panicking []byte

func (p panicking) WriteTo(w io.Writer) (int64, error) {
	_, _ = w.Write(p)
	panic("body")
}

// TestWriteBodyEnd checks what the end of WriteBody does with held bytes:
// it sends them, also when the body panics, and closes the connection when
// it cannot, since net/http takes them as sent.
func TestWriteBodyEnd(t *testing.T) {
	t.Run("sent", func(t *testing.T) {
		c, _, client := pipeConn(t)
		c.hold = holds.Get().(*[holdMax]byte)
		if n, err := c.Write([]byte("held")); n != 4 || err != nil {
			t.Fatalf("write: %d, %v", n, err)
		}
		got := readFour(client)
		if err := c.release(); err != nil {
			t.Fatal(err)
		}
		if b := received(t, got); string(b) != "held" {
			t.Fatalf("client read %q", b)
		}
		if c.hold != nil || len(c.l.conns) != 1 {
			t.Fatalf("after release: hold %v, %d connections open", c.hold != nil, len(c.l.conns))
		}
	})
	t.Run("panic", func(t *testing.T) {
		c, _, client := pipeConn(t)
		r := httptest.NewRequestWithContext(context.WithValue(context.Background(), connKey{}, c), "GET", "/", nil)
		got := readFour(client)
		func() {
			defer func() { _ = recover() }()
			_, _ = WriteBody(r, c, panicking("held"))
		}()
		if b := received(t, got); string(b) != "held" || c.hold != nil {
			t.Fatalf("client read %q; still holding: %v", b, c.hold != nil)
		}
	})
	t.Run("failed", func(t *testing.T) {
		c, _, _ := pipeConn(t)
		c.hold = holds.Get().(*[holdMax]byte)
		if _, err := c.Write([]byte("held")); err != nil {
			t.Fatal(err)
		}
		_ = c.SetWriteDeadline(time.Unix(1, 0))
		if err := c.release(); err == nil {
			t.Fatal("release sent on a connection past its write deadline")
		}
		if len(c.l.conns) != 0 {
			t.Fatal("the connection stayed open")
		}
	})
}
