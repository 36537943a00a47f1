package redis

import (
	"context"
	"crypto/tls"
	"errors"
	"net"
	"time"

	"github.com/redis/rueidis"
)

// NewClient connects a client of o as the API's hydrator holds one: with
// client-side caching, its invalidations sent to invalidated, or without
// any when invalidated is nil (for a server that refuses CLIENT TRACKING).
// Every connection it makes is closed when done ends, and a read is retried
// at most three times, 10 ms apart. It dials at once, and reports a refused
// CLIENT TRACKING (or a server without RESP3) as rueidis.ErrNoCache.
func NewClient(done context.Context, o Options, invalidated func([]rueidis.RedisMessage)) (rueidis.Client, error) {
	opt := o.clientOption()
	opt.DialCtxFn = closingDial(done, opt.DialCtxFn)
	opt.RetryDelay = cachedRetryDelay
	// A hash is a few KiB: buffers of 64 KiB, not rueidis's 0.5 MiB, per
	// connection, since every pod holds them for as long as it runs.
	opt.ReadBufferEachConn, opt.WriteBufferEachConn = 64<<10, 64<<10
	if invalidated == nil {
		opt.DisableCache = true
	} else {
		opt.OnInvalidations = invalidated
	}
	return rueidis.NewClient(opt)
}

// cachedRetryDelay lets rueidis retry a read a few times at once, which hides a
// dropped connection; anything longer, and a refused CLIENT TRACKING, comes
// back to the caller (the hydrator logs it and backs off).
func cachedRetryDelay(attempts int, _ rueidis.Completed, err error) time.Duration {
	if attempts > 3 || errors.Is(err, rueidis.ErrNoCache) {
		return -1
	}
	return time.Duration(attempts) * 10 * time.Millisecond
}

// closingDial wraps dial so that every connection it makes is closed when
// done is: rueidis runs the handshake of its first connection and the PING of
// its Close without any context, so on a silent server only this lets a
// shutdown end them at once.
func closingDial(done context.Context, dial func(context.Context, string, *net.Dialer, *tls.Config) (net.Conn, error)) func(context.Context, string, *net.Dialer, *tls.Config) (net.Conn, error) {
	if dial == nil {
		dial = func(ctx context.Context, addr string, d *net.Dialer, cfg *tls.Config) (net.Conn, error) {
			if cfg != nil {
				return (&tls.Dialer{NetDialer: d, Config: cfg}).DialContext(ctx, "tcp", addr)
			}
			return d.DialContext(ctx, "tcp", addr)
		}
	}
	return func(ctx context.Context, addr string, d *net.Dialer, cfg *tls.Config) (net.Conn, error) {
		ctx, cancel := context.WithCancel(ctx)
		defer cancel()
		defer context.AfterFunc(done, cancel)()
		conn, err := dial(ctx, addr, d, cfg)
		if err != nil {
			return nil, err
		}
		return &closingConn{Conn: conn, stop: context.AfterFunc(done, func() { conn.Close() })}, nil
	}
}

// closingConn forgets its close-on-shutdown hook once closed, so reconnects do
// not pile hooks up.
type closingConn struct {
	net.Conn
	stop func() bool
}

func (c *closingConn) Close() error {
	c.stop()
	return c.Conn.Close()
}
