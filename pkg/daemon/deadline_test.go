package daemon

import (
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/storytold/craft-releases/test/testkit"
)

// recordingConn records the deadlines applied to it.
type recordingConn struct {
	net.Conn
	mu            sync.Mutex
	reads, writes []time.Time
}

func (c *recordingConn) SetReadDeadline(t time.Time) error {
	c.mu.Lock()
	c.reads = append(c.reads, t)
	c.mu.Unlock()
	return c.Conn.SetReadDeadline(t)
}

func (c *recordingConn) SetWriteDeadline(t time.Time) error {
	c.mu.Lock()
	c.writes = append(c.writes, t)
	c.mu.Unlock()
	return c.Conn.SetWriteDeadline(t)
}

// applied returns the read and the write deadlines applied so far.
func (c *recordingConn) applied() (reads, writes []time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.reads), slices.Clone(c.writes)
}

// pipeConn returns a limitedConn over one end of a pipe, what was applied
// to that end, and the other end.
func pipeConn(t *testing.T) (*limitedConn, *recordingConn, net.Conn) {
	t.Helper()
	server, client := net.Pipe()
	rec := &recordingConn{Conn: server}
	l := newLimitListener(nil, 1)
	c := &limitedConn{Conn: rec, l: l}
	l.conns[c] = struct{}{}
	t.Cleanup(func() {
		c.Close()
		client.Close()
	})
	return c, rec, client
}

// readAsync reads a byte from c in the background.
func readAsync(c net.Conn) <-chan error {
	done := make(chan error, 1)
	go func() {
		_, err := c.Read(make([]byte, 1))
		done <- err
	}()
	return done
}

// within waits at most 5 s for done.
func within(t *testing.T, what string, done <-chan error) error {
	t.Helper()
	select {
	case err := <-done:
		return err
	case <-time.After(5 * time.Second):
		t.Fatalf("%s: still blocked after 5 s", what)
		return nil
	}
}

// TestReadDeadlineLazy: a read deadline set while no Read is under way is
// applied when the next Read starts, only the last one and only once; one
// set during a Read cuts that Read short; a past one fails the next Read.
func TestReadDeadlineLazy(t *testing.T) {
	c, rec, client := pipeConn(t)
	hour := time.Now().Add(time.Hour)
	for _, d := range []time.Time{hour.Add(time.Minute), {}, hour} {
		if err := c.SetReadDeadline(d); err != nil {
			t.Fatal(err)
		}
	}
	if reads, _ := rec.applied(); len(reads) != 0 {
		t.Fatalf("applied %v before any Read, want nothing", reads)
	}
	for range 2 {
		go func() { _, _ = client.Write([]byte("x")) }()
		if err := within(t, "a Read with a byte sent", readAsync(c)); err != nil {
			t.Fatal(err)
		}
	}
	if reads, _ := rec.applied(); !slices.EqualFunc(reads, []time.Time{hour}, time.Time.Equal) {
		t.Fatalf("applied %v over two Reads, want the last deadline set, once: %v", reads, hour)
	}

	// During a Read: at once, and the Read ends at the deadline.
	blocked := readAsync(c)
	testkit.Eventually(t, "the Read under way", func() bool { return c.dl.read.calls.Load() == 1 })
	if err := c.SetReadDeadline(time.Now().Add(20 * time.Millisecond)); err != nil {
		t.Fatal(err)
	}
	if err := within(t, "a Read given a deadline while blocked", blocked); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("the blocked Read: %v, want the deadline exceeded", err)
	}

	// A deadline in the past fails the next Read at once, even with a byte
	// waiting, as net/http's abort of its background read expects; no
	// deadline, or one too far off to matter, lets it read.
	go func() { _, _ = client.Write([]byte("y")) }()
	for _, past := range []time.Time{time.Unix(1, 0), time.Unix(0, 0), time.Date(1960, 1, 1, 0, 0, 0, 0, time.UTC)} {
		if err := c.SetReadDeadline(past); err != nil {
			t.Fatal(err)
		}
		if err := within(t, "a Read past its deadline", readAsync(c)); !errors.Is(err, os.ErrDeadlineExceeded) {
			t.Fatalf("a Read past its deadline %v: %v, want the deadline exceeded", past, err)
		}
	}
	for i, d := range []time.Time{{}, time.Date(3000, 1, 1, 0, 0, 0, 0, time.UTC)} {
		if err := c.SetReadDeadline(d); err != nil {
			t.Fatal(err)
		}
		if i > 0 { // the first reads the byte still waiting
			go func() { _, _ = client.Write([]byte("z")) }()
		}
		if err := within(t, "a Read", readAsync(c)); err != nil {
			t.Fatalf("a Read with the deadline %v: %v", d, err)
		}
	}
}

// TestWriteDeadlineOnGrid: a write deadline is rounded up to writeGrid,
// never earlier than asked, applied when a Write starts, and not again
// while it stays on the same step.
func TestWriteDeadlineOnGrid(t *testing.T) {
	c, rec, client := pipeConn(t)
	go func() { _, _ = io.Copy(io.Discard, client) }()
	step := time.Now().Add(time.Hour).Truncate(writeGrid)
	write := func(d time.Time) {
		t.Helper()
		if err := c.SetWriteDeadline(d); err != nil {
			t.Fatal(err)
		}
		if _, err := c.Write([]byte("answer")); err != nil {
			t.Fatal(err)
		}
	}
	write(step.Add(100 * time.Millisecond))
	write(time.Time{})
	write(step.Add(900 * time.Millisecond))
	write(step.Add(writeGrid))
	write(step.Add(writeGrid + time.Nanosecond))
	_ = c.SetWriteDeadline(time.Now()) // none is applied without a Write
	want := []time.Time{step.Add(writeGrid), {}, step.Add(writeGrid), step.Add(2 * writeGrid)}
	if _, writes := rec.applied(); !slices.EqualFunc(writes, want, time.Time.Equal) {
		t.Errorf("applied %v, want %v", writes, want)
	}
}

// TestUnixNano: deadlines as the sides hold them, in order, with 0 for none.
func TestUnixNano(t *testing.T) {
	now := time.Now()
	last := time.Date(2200, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, tt := range []struct {
		t    time.Time
		want int64
	}{
		{time.Time{}, 0},
		{time.Date(1960, 1, 1, 0, 0, 0, 0, time.UTC), 1},
		{time.Unix(0, 0), 1},
		{time.Unix(0, 1), 1},
		{time.Unix(1, 0), int64(time.Second)},
		{now, now.UnixNano()},
		{last, last.UnixNano()},
		{time.Date(3000, 1, 1, 0, 0, 0, 0, time.UTC), last.UnixNano()},
	} {
		if got := unixNano(tt.t); got != tt.want {
			t.Errorf("unixNano(%v) = %d, want %d", tt.t, got, tt.want)
		}
	}
}

// TestConnAllocs: what the server does to a connection in a request (its
// deadlines, a Read, a Write, its states) allocates nothing.
func TestConnAllocs(t *testing.T) {
	if testkit.RaceEnabled {
		t.Skip("the race detector changes allocation counts: task test-allocs runs this without it")
	}
	ln := listen(t)
	client, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	go func() { _, _ = io.Copy(client, client) }() // an echo
	server, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	l := newLimitListener(ln, 1)
	c := &limitedConn{Conn: server, l: l}
	defer c.Close()
	buf := make([]byte, 1)
	allocs := testing.AllocsPerRun(100, func() {
		now := time.Now()
		_ = c.SetReadDeadline(now.Add(time.Second))
		_ = c.SetWriteDeadline(now.Add(time.Second))
		c.l.state(c, http.StateActive)
		if _, err := c.Write(buf); err != nil {
			t.Fatal(err)
		}
		if _, err := c.Read(buf); err != nil {
			t.Fatal(err)
		}
		_ = c.SetReadDeadline(time.Time{})
		c.l.state(c, http.StateIdle)
	})
	if allocs != 0 {
		t.Errorf("%v allocations a request, want 0", allocs)
	}
	// An answer's body through WriteBody: net/http's buffer held, then
	// sent with the rest in one writev.
	head, rest := make([]byte, holdMax), make([]byte, holdMax+1)
	allocs = testing.AllocsPerRun(100, func() {
		c.hold = holds.Get().(*[holdMax]byte)
		if _, err := c.Write(head); err != nil {
			t.Fatal(err)
		}
		if _, err := c.Write(rest); err != nil {
			t.Fatal(err)
		}
		if err := c.release(); err != nil {
			t.Fatal(err)
		}
	})
	if allocs != 0 {
		t.Errorf("%v allocations a coalesced answer, want 0", allocs)
	}
}
