package daemon

import (
	"sync"
	"sync/atomic"
	"time"
)

// writeGrid is the step write deadlines are rounded up to: a write deadline
// holds at most this much longer than asked.
const writeGrid = time.Second

// deadlines are a connection's read and write deadlines, applied to it only
// when they can matter. net/http sets the read deadline six times a request
// (for the headers, the body, around its background read twice, for the
// idle wait) and the write deadline twice (for the answer, then none), and
// each setting moves a runtime timer after reading the clock: more CPU than
// the rest of the server's bookkeeping of a request. So a deadline set while
// no Read (or Write) is under way is applied when the next one starts, the
// last one set winning, which is the same for that call and every call after
// it; one set during a call is applied at once, to cut it short. A write
// deadline is rounded up to writeGrid, so that a connection's answers within
// a second of each other leave it as it is. A call that finds the deadline
// applied takes no lock.
type deadlines struct {
	mu          sync.Mutex // held to apply a deadline
	read, write side
}

// side is one of the two deadlines, each as Unix nanoseconds, 0 for none.
type side struct {
	calls atomic.Int32 // Reads, or Writes, under way
	want  atomic.Int64 // the deadline last set
	set   atomic.Int64 // the deadline applied; stored under mu
}

// unixNano returns t as a side holds it: a deadline long past is 1, one
// too far off to matter (past 2200) is 2200.
func unixNano(t time.Time) int64 {
	const last = 7_258_118_400 // 2200-01-01, in Unix seconds
	switch sec := t.Unix(); {
	case t.IsZero():
		return 0
	case sec < 0 || sec == 0 && t.Nanosecond() == 0:
		return 1
	case sec >= last:
		return last * int64(time.Second)
	default:
		return sec*int64(time.Second) + int64(t.Nanosecond())
	}
}

// SetReadDeadline sets the deadline of the Read under way, if any, and of
// the Reads after it. It fails only when the deadline is applied at once.
func (c *limitedConn) SetReadDeadline(t time.Time) error { return c.setDeadline(false, unixNano(t)) }

// SetWriteDeadline sets the deadline of the Writes as SetReadDeadline does
// for Reads, rounded up to writeGrid.
func (c *limitedConn) SetWriteDeadline(t time.Time) error {
	n := unixNano(t)
	if n > 0 {
		n = (n + int64(writeGrid) - 1) / int64(writeGrid) * int64(writeGrid)
	}
	return c.setDeadline(true, n)
}

// SetDeadline sets both deadlines, as each of the two does.
func (c *limitedConn) SetDeadline(t time.Time) error {
	if err := c.SetReadDeadline(t); err != nil {
		return err
	}
	return c.SetWriteDeadline(t)
}

// setDeadline sets the deadline of one side to n. It stores before it reads
// the count of calls, and begin counts before it reads the deadline, so a
// call under way is sure to have it applied by one of the two.
func (c *limitedConn) setDeadline(write bool, n int64) error {
	s := c.dl.side(write)
	s.want.Store(n)
	if s.calls.Load() == 0 {
		return nil
	}
	c.dl.mu.Lock()
	err := c.apply(write, s)
	c.dl.mu.Unlock()
	return err
}

// begin counts a call under way, after applying the deadline last set.
func (c *limitedConn) begin(write bool) error {
	s := c.dl.side(write)
	s.calls.Add(1)
	if s.want.Load() == s.set.Load() {
		return nil
	}
	c.dl.mu.Lock()
	err := c.apply(write, s)
	c.dl.mu.Unlock()
	if err != nil {
		s.calls.Add(-1)
	}
	return err
}

func (d *deadlines) side(write bool) *side {
	if write {
		return &d.write
	}
	return &d.read
}

// apply applies s's deadline last set, unless it is; c.dl.mu is held.
func (c *limitedConn) apply(write bool, s *side) error {
	n := s.want.Load()
	if n == s.set.Load() {
		return nil
	}
	var t time.Time
	if n != 0 {
		t = time.Unix(0, n)
	}
	var err error
	if write {
		err = c.Conn.SetWriteDeadline(t)
	} else {
		err = c.Conn.SetReadDeadline(t)
	}
	if err != nil {
		return err
	}
	s.set.Store(n)
	return nil
}
