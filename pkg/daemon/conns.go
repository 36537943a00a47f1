package daemon

import (
	"errors"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"
)

// DefaultMaxConnections is the cap on the connections a server holds open
// when Endpoint.MaxConnections is 0 or less: idle keep-alive connections
// that fit well inside a pod's memory limit (docs/operations.md, "Sizing"),
// while Cloudflare, an ingress controller or a tunnel reaches a pod through
// far fewer.
const DefaultMaxConnections = 1024

// headerGrace is how long a new connection may take to send its request's
// headers, from when it got its slot, before it can be closed for another: a
// client's bytes can wait a moment in the kernel before the server reads
// them, and a proxy sends the headers within a millisecond. A connection that
// has sent nothing, or one byte, for longer holds no request worth a real
// client's place.
const headerGrace = 250 * time.Millisecond

// writeGrace is how long a client may take none of what was sent to it,
// while a write waits, before its connection can be closed for another: a
// client that sends requests and never reads their answers holds no place
// worth a real client's, while one that reads, however slowly, acknowledges
// bytes every round trip.
const writeGrace = 250 * time.Millisecond

// unsentMax is the most of a connection's bytes the kernel holds before
// sending them: beyond, a write waits. TCP sizes a connection's send buffer
// by its congestion window, megabytes on loopback, so without it each
// client that reads nothing makes the pod copy megabytes into buffers it
// keeps until the connection closes.
const unsentMax = 128 << 10

// limitListener caps the connections accepted from a listener and still
// open. A connection over the cap is accepted, then the one that has done
// nothing for longest is closed to make room: an idle keep-alive connection,
// a new one whose request headers are not complete after headerGrace
// (silent, or a byte at a time), or, when there is none of those, one whose
// client has taken nothing for writeGrace while a write waits (a client that
// pipelines requests and reads nothing). When there is none the new
// connection waits (and the ones after it wait in the kernel's backlog) until
// one closes, turns idle or comes of age; its own age starts when it gets its
// slot. So a flood of idle, silent, half-sent or unread connections cannot
// lock real clients out, a client whose request is being served (its body
// still arriving, or its answer being read) is never cut off for one, and at
// most max+1 connections are ever open.
//
// Each connection keeps its own state in atomic words, so that a request's
// state changes and writes take no lock; only a connection over the cap
// looks through them all. The server must report every connection's state
// to state (http.Server's ConnState). It is safe for concurrent use.
type limitListener struct {
	net.Listener
	max                     int
	headerGrace, writeGrace time.Duration
	epoch                   time.Time // what connections time their writes from

	wake    chan struct{} // a slot freed or a connection turned idle; buffered 1
	done    chan struct{} // closed by Close
	once    sync.Once
	waiting atomic.Int32  // Accepts under way: only they need wake
	seq     atomic.Uint64 // counts connections turning new or idle

	mu    sync.Mutex
	conns map[*limitedConn]struct{} // the open ones
}

// A connection's state word is seq<<2 | its kind: when it turned new or
// idle, and which of the three it is.
const (
	connBusy  = iota // reading or answering a request: never closed for another
	connIdle         // a keep-alive connection between requests
	connFresh        // new, before its first request's headers
)

func newLimitListener(ln net.Listener, max int, headerGrace, writeGrace time.Duration) *limitListener {
	return &limitListener{
		Listener:    ln,
		max:         max,
		headerGrace: headerGrace,
		writeGrace:  writeGrace,
		epoch:       time.Now(),
		wake:        make(chan struct{}, 1),
		done:        make(chan struct{}),
		conns:       make(map[*limitedConn]struct{}),
	}
}

// Accept waits for the next connection and, at the cap, for room for it.
func (l *limitListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	limitUnsent(c, unsentMax)
	lc := &limitedConn{Conn: c, l: l}
	l.waiting.Add(1)
	defer l.waiting.Add(-1)
	for {
		wait, ok := l.reserve(lc)
		if ok {
			return lc, nil
		}
		select {
		case <-l.wake:
		case <-time.After(wait): // a connection comes of age
		case <-l.done:
			c.Close()
			return nil, net.ErrClosed
		}
	}
}

// reserve takes a slot for c, which is new from then on. At the cap it
// closes the connection that has done nothing for longest (idle, or new and
// without its headers for headerGrace; else the one whose client has taken
// nothing for longest, at least writeGrace, while a write waits), whose
// Close frees a slot and wakes the caller, and reports false with how long
// to wait at most before trying again: until the next connection comes of
// age.
func (l *limitListener) reserve(c *limitedConn) (wait time.Duration, ok bool) {
	l.mu.Lock()
	now := time.Now()
	if len(l.conns) < l.max {
		c.admitted = now
		c.state.Store(l.seq.Add(1)<<2 | connFresh)
		l.conns[c] = struct{}{}
		l.mu.Unlock()
		return 0, true
	}
	var oldest, stuck *limitedConn
	var word uint64
	var since int64 // since when stuck's client took nothing
	writes := int64(now.Sub(l.epoch))
	wait = max(l.headerGrace, l.writeGrace)
	for o := range l.conns {
		w := o.state.Load()
		switch w & 3 {
		case connBusy:
			if o.writing.Load() == 0 {
				// Nothing to take: the next look starts anew.
				o.ackedAt, o.stalled = 0, false
				continue
			}
			if untaken, next := o.untaken(writes, l.writeGrace); !untaken {
				wait = min(wait, next)
			} else if stuck == nil || o.ackedAt < since {
				stuck, since = o, o.ackedAt
			}
			continue
		case connFresh:
			if age := now.Sub(o.admitted); age < l.headerGrace {
				wait = min(wait, l.headerGrace-age)
				continue
			}
		}
		if oldest == nil || w>>2 < word>>2 {
			oldest, word = o, w
		}
	}
	if oldest == nil && stuck != nil && !stuck.recheck(writes) {
		stuck, wait = nil, 0
	}
	l.mu.Unlock()
	switch {
	// Marked busy, it is closed once: unless it turned busy or idle again
	// meanwhile, and then the caller looks again.
	case oldest != nil && oldest.state.CompareAndSwap(word, connBusy):
		oldest.Close()
	case oldest != nil:
		wait = 0
	case stuck != nil:
		stuck.Close()
	}
	return wait, false
}

// Close closes the listener and gives up any connection waiting for room.
func (l *limitListener) Close() error {
	l.once.Do(func() { close(l.done) })
	return l.Listener.Close()
}

// state is the server's ConnState hook: it notes when a connection turns
// idle, or busy again. A new connection is fresh from Accept on.
func (l *limitListener) state(c net.Conn, s http.ConnState) {
	lc, ok := c.(*limitedConn)
	if !ok {
		return
	}
	switch s {
	case http.StateIdle:
		lc.state.Store(l.seq.Add(1)<<2 | connIdle)
		if l.waiting.Load() > 0 {
			l.signal()
		}
	case http.StateActive, http.StateHijacked:
		lc.state.Store(connBusy)
	}
}

// closeSilent closes every new connection that has not sent a byte yet. At
// shutdown such a connection (one a client dialed and never used: HTTP
// clients keep spares) holds no request, but net/http counts it as busy for
// its first 5 s, longer than a short shutdown timeout.
func (l *limitListener) closeSilent() {
	l.mu.Lock()
	var silent []*limitedConn
	for c := range l.conns {
		if c.state.Load()&3 == connFresh && !c.sent.Load() {
			silent = append(silent, c)
		}
	}
	l.mu.Unlock()
	for _, c := range silent {
		c.Close()
	}
}

func (l *limitListener) release(c *limitedConn) {
	l.mu.Lock()
	delete(l.conns, c)
	l.mu.Unlock()
	l.signal()
}

func (l *limitListener) signal() {
	select {
	case l.wake <- struct{}{}:
	default:
	}
}

// limitedConn gives its slot back when it is first closed, notes when a
// byte first arrived on it and whether a write is under way. It hides
// nothing of the connection it wraps that net/http uses: deadlines are the
// connection's own, and CloseWrite is passed on.
type limitedConn struct {
	net.Conn
	l        *limitListener
	admitted time.Time     // when it got its slot; guarded by l.mu
	state    atomic.Uint64 // seq<<2 | connBusy, connIdle or connFresh
	writing  atomic.Int64  // when the write under way began, as time since l.epoch plus 1; 0: none
	once     sync.Once
	sent     atomic.Bool // a byte was read from the client

	// What the client had acknowledged when reserve last looked; guarded
	// by l.mu.
	ackedAt int64 // as time since l.epoch; 0: never looked
	acked   uint64
	stalled bool // nothing acknowledged for writeGrace
}

func (c *limitedConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	if n > 0 && !c.sent.Load() {
		c.sent.Store(true)
	}
	return n, err
}

// Write writes p, noting that it is under way.
func (c *limitedConn) Write(p []byte) (int, error) {
	c.writing.Store(int64(time.Since(c.l.epoch)) + 1)
	n, err := c.Conn.Write(p)
	c.writing.Store(0)
	return n, err
}

// untaken reports whether the client has acknowledged none of what was sent
// to it since reserve first saw it with a write under way, grace ago or more
// (now is time since l.epoch); else it reports false with when to look
// again. The kernel is asked once a grace, and once more by recheck before
// the connection is closed. Where it does not tell what was acknowledged,
// the write under way is untaken once it waited grace. l.mu is held.
func (c *limitedConn) untaken(now int64, grace time.Duration) (bool, time.Duration) {
	if c.ackedAt != 0 {
		if since := time.Duration(now - c.ackedAt); since < grace {
			return false, grace - since
		}
		if c.stalled {
			return true, 0
		}
	}
	acked := c.ackedBytes()
	if c.ackedAt == 0 || acked != c.acked {
		c.ackedAt, c.acked = now, acked
		return false, grace
	}
	c.stalled = true
	return true, 0
}

// recheck reports whether the client still has acknowledged nothing more
// than when untaken said so. l.mu is held.
func (c *limitedConn) recheck(now int64) bool {
	if acked := c.ackedBytes(); acked != c.acked {
		c.ackedAt, c.acked, c.stalled = now, acked, false
		return false
	}
	return true
}

// ackedBytes returns what the client acknowledged, or, where the kernel
// does not tell, when the write under way began.
func (c *limitedConn) ackedBytes() uint64 {
	if acked, ok := ackedBytes(c.Conn); ok {
		return acked
	}
	return uint64(c.writing.Load())
}

// CloseWrite shuts down the writing side of the connection, when it can
// (a TCP connection can): net/http does so before closing a connection it
// answered with an error, such as a 431 or a 400, so that the client reads
// the answer, then the end of the stream, rather than a reset.
func (c *limitedConn) CloseWrite() error {
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return errors.ErrUnsupported
}

func (c *limitedConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(func() { c.l.release(c) })
	return err
}
