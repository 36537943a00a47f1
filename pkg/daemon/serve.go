package daemon

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"

	"go.uber.org/zap"
)

// The public port's timeouts, as http.Server applies them
// (docs/operations.md, "Which port is public").
const (
	// ReadHeaderTimeout bounds a request's headers, from the connection's
	// first byte or the end of the request before. Headers come at once
	// from a proxy, and at the cap a connection without them is closed for
	// another after headerGrace anyway.
	ReadHeaderTimeout = 2 * time.Second
	// ReadTimeout bounds a whole request, body included.
	ReadTimeout = 10 * time.Second
	// WriteTimeout bounds an answer, from the end of its request's headers.
	WriteTimeout = 30 * time.Second
	// IdleTimeout is how long a keep-alive connection may stay idle: just
	// over Cloudflare's proxy idle timeout to origins (900 s), so that the
	// proxy, not the origin, closes an idle keep-alive connection and never
	// sends a request on one the origin just closed. The connection cap
	// bounds what idle connections can cost meanwhile.
	IdleTimeout = 930 * time.Second
)

// Listening is a handler and the listener it is served on.
type Listening struct {
	Handler  http.Handler
	Listener net.Listener
	// MaxConnections caps the connections held open (DefaultMaxConnections
	// when it is 0 or less).
	MaxConnections int
}

// Serve answers HTTP requests on l until ctx is done, then shuts down
// gracefully: it stops accepting, closes idle connections, and waits at most
// shutdownTimeout for the requests in flight before closing what is left.
// It is a plain http.Server with the timeouts above, behind a connection
// cap: it holds at most l.MaxConnections open, and at the cap closes the
// connection that has done nothing for longest (idle, or without its headers
// after headerGrace) for a new one, which waits only when there is none.
// It closes the listener. It returns nil after a graceful shutdown, and an
// error when serving failed or requests were still running at the deadline.
// Callers behind a load balancer close the readiness Gate a moment before
// ctx ends, so that the balancer sees the 503 and stops sending traffic (Run
// does).
func Serve(ctx context.Context, l Listening, shutdownTimeout time.Duration, log *zap.Logger) error {
	return serve(ctx, l, serverTimeouts, shutdownTimeout, log)
}

// timeouts bound each step of a connection's life: http.Server's
// ReadHeaderTimeout, ReadTimeout, WriteTimeout and IdleTimeout, and the
// connection cap's grace.
type timeouts struct {
	header, read, write, idle time.Duration
	headerGrace               time.Duration
}

var serverTimeouts = timeouts{
	header: ReadHeaderTimeout, read: ReadTimeout, write: WriteTimeout, idle: IdleTimeout,
	headerGrace: headerGrace,
}

// serve is Serve with the timeouts to; tests shorten them.
func serve(ctx context.Context, l Listening, to timeouts, shutdownTimeout time.Duration, log *zap.Logger) error {
	limit := l.MaxConnections
	if limit <= 0 {
		limit = DefaultMaxConnections
	}
	ln := l.Listener
	limited := newLimitListener(ln, limit, to.headerGrace)
	srv := &http.Server{
		Handler:           l.Handler,
		ConnState:         limited.state,
		ReadHeaderTimeout: to.header,
		ReadTimeout:       to.read,
		WriteTimeout:      to.write,
		IdleTimeout:       to.idle,
		MaxHeaderBytes:    64 << 10,
		ErrorLog:          zap.NewStdLog(log.With(zap.String("addr", ln.Addr().String()))),
	}
	// Shutdown runs this once the listener is closed.
	srv.RegisterOnShutdown(limited.closeSilent)
	served := make(chan error, 1)
	go func() { served <- srv.Serve(limited) }()

	select {
	case err := <-served:
		return fmt.Errorf("serve %s: %w", ln.Addr(), err)
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), shutdownTimeout)
	defer cancel()
	err := srv.Shutdown(sctx)
	if err != nil {
		_ = srv.Close()
	}
	if serr := <-served; !errors.Is(serr, http.ErrServerClosed) {
		return fmt.Errorf("serve %s: %w", ln.Addr(), serr)
	}
	if err != nil {
		return fmt.Errorf("shut down %s: %w", ln.Addr(), err)
	}
	return nil
}
