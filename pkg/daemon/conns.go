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
// when Listening.MaxConnections is 0 or less. An idle keep-alive connection costs a pod about
// 17 KB (5,000 took one from 28 MB to 112 MB), so 1,024 of them stay near
// 17 MB, well inside a 128 Mi limit; Cloudflare, an ingress controller or a
// tunnel reaches a pod through far fewer.
const DefaultMaxConnections = 1024

// headerGrace is how long a new connection may take to send its request's
// headers before it can be closed for another: a client's bytes can wait a
// moment in the kernel before the server reads them, and a proxy sends the
// headers within a millisecond. A connection that has sent nothing, or one
// byte, for longer holds no request worth a real client's place.
const headerGrace = 250 * time.Millisecond

// limitListener caps the connections accepted from a listener and still
// open. A connection over the cap is accepted, then the one that has done
// nothing for longest is closed to make room: an idle keep-alive connection,
// or a new one whose request headers are not complete after headerGrace
// (silent, or a byte at a time); when there is none the new connection waits
// (and the ones after it wait in the kernel's backlog) until one closes,
// turns idle or comes of age. So a flood of idle, silent or half-sent
// connections cannot lock real clients out, a client whose request is being
// served (its body still arriving, or its answer) is never cut off for one,
// and at most max+1 connections are ever open.
//
// Each connection keeps its own state in an atomic word, so that the two
// state changes of every request take no lock; only a connection over the cap
// looks through them all. The server must report every connection's state
// to state (http.Server's ConnState). It is safe for concurrent use.
type limitListener struct {
	net.Listener
	max         int
	headerGrace time.Duration

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

func newLimitListener(ln net.Listener, max int, headerGrace time.Duration) *limitListener {
	return &limitListener{
		Listener:    ln,
		max:         max,
		headerGrace: headerGrace,
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
	lc := &limitedConn{Conn: c, l: l, arrived: time.Now()}
	lc.state.Store(l.seq.Add(1)<<2 | connFresh)
	l.waiting.Add(1)
	defer l.waiting.Add(-1)
	for {
		wait, ok := l.reserve(lc)
		if ok {
			return lc, nil
		}
		select {
		case <-l.wake:
		case <-time.After(wait): // a new one comes of age
		case <-l.done:
			c.Close()
			return nil, net.ErrClosed
		}
	}
}

// reserve takes a slot for c. At the cap it closes the connection that has
// done nothing for longest (idle, or new and without its headers for
// headerGrace), whose Close frees a slot and wakes the caller, and reports
// false with how long to wait at most before trying again: until the oldest
// new connection comes of age.
func (l *limitListener) reserve(c *limitedConn) (wait time.Duration, ok bool) {
	l.mu.Lock()
	now := time.Now()
	if len(l.conns) < l.max {
		l.conns[c] = struct{}{}
		l.mu.Unlock()
		return 0, true
	}
	var oldest *limitedConn
	var word uint64
	wait = l.headerGrace
	for o := range l.conns {
		w := o.state.Load()
		switch w & 3 {
		case connBusy:
			continue
		case connFresh:
			if age := now.Sub(o.arrived); age < l.headerGrace {
				wait = min(wait, l.headerGrace-age)
				continue
			}
		}
		if oldest == nil || w>>2 < word>>2 {
			oldest, word = o, w
		}
	}
	l.mu.Unlock()
	switch {
	// Marked busy, it is closed once: unless it turned busy or idle again
	// meanwhile, and then the caller looks again.
	case oldest != nil && oldest.state.CompareAndSwap(word, connBusy):
		oldest.Close()
	case oldest != nil:
		wait = 0
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

// limitedConn gives its slot back when it is first closed and notes when a
// byte first arrived on it. It hides nothing of the connection it wraps that
// net/http uses: deadlines are the connection's own, and CloseWrite is
// passed on.
type limitedConn struct {
	net.Conn
	l       *limitListener
	arrived time.Time     // when it was accepted
	state   atomic.Uint64 // seq<<2 | connBusy, connIdle or connFresh
	once    sync.Once
	sent    atomic.Bool // a byte was read from the client
}

func (c *limitedConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	if n > 0 && !c.sent.Load() {
		c.sent.Store(true)
	}
	return n, err
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
