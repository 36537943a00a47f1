package daemon

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"
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

// Endpoint is a handler and the listener it is served on.
type Endpoint struct {
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
// connection that has done nothing for longest (idle, without its headers
// after headerGrace, or with a write waiting writeGrace) for a new one,
// which waits only when there is none. An answer that says Connection: close
// is not followed by reading the rest of its request's body.
// It closes the listener. It returns nil after a graceful shutdown, and an
// error when serving failed or requests were still running at the deadline.
// Callers behind a load balancer close the readiness Gate a moment before
// ctx ends, so that the balancer sees the 503 and stops sending traffic (Run
// does).
func Serve(ctx context.Context, l Endpoint, shutdownTimeout time.Duration, log *zap.Logger) error {
	return serve(ctx, l, serverTimeouts, shutdownTimeout, log)
}

// timeouts bound each step of a connection's life: http.Server's
// ReadHeaderTimeout, ReadTimeout, WriteTimeout and IdleTimeout, and the
// connection cap's graces.
type timeouts struct {
	header, read, write, idle time.Duration
	headerGrace, writeGrace   time.Duration
}

var serverTimeouts = timeouts{
	header: ReadHeaderTimeout, read: ReadTimeout, write: WriteTimeout, idle: IdleTimeout,
	headerGrace: headerGrace, writeGrace: writeGrace,
}

// serve is Serve with the timeouts to; tests shorten them.
func serve(ctx context.Context, l Endpoint, to timeouts, shutdownTimeout time.Duration, log *zap.Logger) error {
	limit := l.MaxConnections
	if limit <= 0 {
		limit = DefaultMaxConnections
	}
	ln := l.Listener
	limited := newLimitListener(ln, limit, to.headerGrace, to.writeGrace)
	srv := &http.Server{
		Handler:           undrained(l.Handler),
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

// undrained returns next, but for a request with a body whose answer says
// Connection: close: the rest of that body is not read. net/http otherwise
// reads up to 256 KiB of it after the handler, within ReadTimeout, although
// it will not read another request from the connection: so a handler that
// takes no body answers and closes at once.
func undrained(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		next.ServeHTTP(w, r)
		if r.ContentLength != 0 && closes(w.Header()) {
			// A deadline in the past ends the read net/http would start.
			_ = http.NewResponseController(w).SetReadDeadline(time.Unix(1, 0))
		}
	})
}

// closes reports whether h has Connection: close.
func closes(h http.Header) bool {
	for _, v := range h["Connection"] {
		if strings.EqualFold(strings.TrimSpace(v), "close") {
			return true
		}
	}
	return false
}
