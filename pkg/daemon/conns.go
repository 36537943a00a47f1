package daemon

import (
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
// byte, for longer holds no request worth a real client's place. At the cap,
// a flood of such connections renewed as they close makes a launcher wait
// about (flood − cap) / cap × headerGrace (BenchmarkLauncherDuringOneByteFlood).
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
// The server must report every connection's state to state (http.Server's
// ConnState). It is safe for concurrent use.
type limitListener struct {
	net.Listener
	max int

	wake chan struct{} // a slot freed or a connection turned idle; buffered 1
	done chan struct{} // closed by Close
	once sync.Once

	mu    sync.Mutex
	open  int
	seq   uint64                   // counts connections turning new or idle
	idle  map[*limitedConn]uint64  // idle connections, by when they turned idle
	fresh map[*limitedConn]arrival // new connections before their first request
}

// arrival is when a new connection came: in the order of seq, and in time.
type arrival struct {
	seq uint64
	at  time.Time
}

func newLimitListener(ln net.Listener, max int) *limitListener {
	return &limitListener{
		Listener: ln,
		max:      max,
		wake:     make(chan struct{}, 1),
		done:     make(chan struct{}),
		idle:     make(map[*limitedConn]uint64),
		fresh:    make(map[*limitedConn]arrival),
	}
}

// Accept waits for the next connection and, at the cap, for room for it.
func (l *limitListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	for {
		wait, ok := l.reserve()
		if ok {
			break
		}
		select {
		case <-l.wake:
		case <-time.After(wait): // a new one comes of age
		case <-l.done:
			c.Close()
			return nil, net.ErrClosed
		}
	}
	return &limitedConn{Conn: c, l: l}, nil
}

// reserve takes a slot for a new connection. At the cap it closes the
// connection that has done nothing for longest (idle, or new and without
// its headers for headerGrace), whose Close frees a slot and wakes the
// caller, and reports false with how long to wait at most before trying
// again: until the oldest new connection comes of age.
func (l *limitListener) reserve() (wait time.Duration, ok bool) {
	l.mu.Lock()
	if l.open < l.max {
		l.open++
		l.mu.Unlock()
		return 0, true
	}
	var oldest *limitedConn
	var since uint64
	pick := func(c *limitedConn, seq uint64) {
		if oldest == nil || seq < since {
			oldest, since = c, seq
		}
	}
	for c, seq := range l.idle {
		pick(c, seq)
	}
	now := time.Now()
	wait = headerGrace
	for c, a := range l.fresh {
		if age := now.Sub(a.at); age >= headerGrace {
			pick(c, a.seq)
		} else {
			wait = min(wait, headerGrace-age)
		}
	}
	delete(l.idle, oldest)
	delete(l.fresh, oldest)
	l.mu.Unlock()
	if oldest != nil {
		oldest.Close()
	}
	return wait, false
}

// Close closes the listener and gives up any connection waiting for room.
func (l *limitListener) Close() error {
	l.once.Do(func() { close(l.done) })
	return l.Listener.Close()
}

// state is the server's ConnState hook: it keeps the sets of idle and of new
// connections.
func (l *limitListener) state(c net.Conn, s http.ConnState) {
	lc, ok := c.(*limitedConn)
	if !ok {
		return
	}
	l.mu.Lock()
	delete(l.idle, lc)
	delete(l.fresh, lc)
	if !lc.closed {
		switch s {
		case http.StateIdle:
			l.seq++
			l.idle[lc] = l.seq
		case http.StateNew:
			l.seq++
			l.fresh[lc] = arrival{l.seq, time.Now()}
		}
	}
	l.mu.Unlock()
	if s == http.StateIdle {
		l.signal()
	}
}

// closeSilent closes every new connection that has not sent a byte yet. At
// shutdown such a connection (one a client dialed and never used: HTTP
// clients keep spares) holds no request, but net/http counts it as busy for
// its first 5 s, longer than a short shutdown timeout.
func (l *limitListener) closeSilent() {
	l.mu.Lock()
	var silent []*limitedConn
	for c := range l.fresh {
		if !c.sent.Load() {
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
	c.closed = true
	delete(l.idle, c)
	delete(l.fresh, c)
	l.open--
	l.mu.Unlock()
	l.signal()
}

func (l *limitListener) signal() {
	select {
	case l.wake <- struct{}{}:
	default:
	}
}

// limitedConn gives its slot back when it is first closed, and notes when a
// byte first arrived on it.
type limitedConn struct {
	net.Conn
	l      *limitListener
	once   sync.Once
	closed bool        // guarded by l.mu
	sent   atomic.Bool // a byte was read from the client
}

func (c *limitedConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	if n > 0 && !c.sent.Load() {
		c.sent.Store(true)
	}
	return n, err
}

func (c *limitedConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(func() { c.l.release(c) })
	return err
}
