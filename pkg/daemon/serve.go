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

// IdleTimeout is how long a keep-alive connection may stay idle: just over
// Cloudflare's proxy idle timeout to origins (900 s).
const IdleTimeout = 930 * time.Second

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
// It holds at most l.MaxConnections open: at the cap, the connection that
// has done nothing for longest (an idle keep-alive one, or a new one without
// its headers after headerGrace) is closed for a new one, which waits only
// when there is none. Every answer's Date is the second it was made in,
// formatted once a second (dateClock). A handler that writes an answer's
// body with WriteBody has it sent with the headers in one write.
// It closes the listener. It returns nil after a graceful shutdown, and an
// error when serving failed or requests were still running at the deadline.
// Callers behind a load balancer close the readiness Gate a moment before
// ctx ends, so that the balancer sees the 503 and stops sending traffic (Run
// does).
func Serve(ctx context.Context, l Listening, shutdownTimeout time.Duration, log *zap.Logger) error {
	return serve(ctx, l, serverTimeouts, shutdownTimeout, log)
}

// timeouts bound each step of a connection's life: http.Server's
// ReadHeaderTimeout, ReadTimeout, WriteTimeout and IdleTimeout.
type timeouts struct {
	header, read, write, idle time.Duration
}

var serverTimeouts = timeouts{
	// Headers come at once from a proxy, and at the cap a connection
	// without them is closed for another after headerGrace anyway.
	header: 2 * time.Second,
	read:   10 * time.Second,
	// Applied a second late at most (writeGrid).
	write: 30 * time.Second,
	// Longer than Cloudflare's 900 s proxy idle timeout, so that the
	// proxy, not the origin, closes an idle keep-alive connection and
	// never sends a request on one the origin just closed. The
	// connection cap bounds what idle connections can cost meanwhile.
	idle: IdleTimeout,
}

// serve is Serve with the timeouts to; tests shorten them.
func serve(ctx context.Context, l Listening, to timeouts, shutdownTimeout time.Duration, log *zap.Logger) error {
	limit := l.MaxConnections
	if limit <= 0 {
		limit = DefaultMaxConnections
	}
	ln := l.Listener
	limited := newLimitListener(ln, limit)
	date := newDateClock()
	// The clock runs until serve returns: the requests a shutdown waits
	// for are answered after ctx is done.
	clockCtx, stopClock := context.WithCancel(context.WithoutCancel(ctx))
	defer stopClock()
	go date.run(clockCtx)
	srv := &http.Server{
		Handler:           date.dated(l.Handler),
		ConnState:         limited.state,
		ConnContext:       connContext,
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
