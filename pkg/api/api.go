// Package api serves HTTP: GET /v1/craft_apps/release_info, each app's part
// of it, the download redirects and the release page from the current
// snapshot rendering, and the health endpoints of both binaries. It is the
// only package that knows echo.
package api

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/labstack/echo/v4"
	"go.uber.org/zap"

	"github.com/storytold/craft-releases/pkg/snapshot"
)

// IdleTimeout is how long a keep-alive connection may stay idle: just over
// Cloudflare's proxy idle timeout to origins (900 s).
const IdleTimeout = 930 * time.Second

// Renderer gives the rendering to serve. Current is called once per request,
// concurrently, and must neither block nor return nil.
type Renderer interface {
	Current() *snapshot.Rendering
}

// Gate is a readiness flag that /readyz reports. Its zero value is closed
// (not ready). Closing is final, so a late Open during shutdown cannot make a
// stopping process ready again. It is safe for concurrent use.
type Gate struct{ state atomic.Int32 }

const (
	gateNew int32 = iota
	gateOpen
	gateClosed
)

// Open makes /readyz answer 200, unless the gate was closed.
func (g *Gate) Open() { g.state.CompareAndSwap(gateNew, gateOpen) }

// Close makes /readyz answer 503 from now on, as when shutdown begins.
func (g *Gate) Close() { g.state.Store(gateClosed) }

// Ready reports whether the gate is open.
func (g *Gate) Ready() bool { return g.state.Load() == gateOpen }

// Options are the optional parts of a Server.
type Options struct {
	// Metrics, when not nil, serves GET /metrics.
	Metrics http.Handler
	// Observer, when not nil, is told about every answered request.
	Observer Observer
	// MaxConnections caps the connections Serve holds open (see
	// DefaultMaxConnections, the cap when it is 0 or less).
	MaxConnections int
	// Webhook, when not nil, serves POST /v1/craft_apps/github_webhook
	// (the API's server only).
	Webhook http.Handler
}

// UnmatchedRoute is the route under which an Observer is told about the
// requests whose path no route has (404), so that random paths make one
// label value.
const UnmatchedRoute = "unmatched"

// Observer records answered requests, for metrics.
type Observer interface {
	// Route is called once for each registered route path, and once with
	// UnmatchedRoute, when the server is built. The function it returns is
	// called concurrently, once per answered request of that route, with the
	// status code sent and the time taken; it must neither block nor, for a
	// request path that allocates nothing itself, allocate.
	Route(path string) func(code int, took time.Duration)
}

// Server is an http.Handler for the service's routes, safe for concurrent use.
// A handler's panic is logged and answered with 500.
type Server struct {
	echo *echo.Echo
	log  *zap.Logger
	obs  Observer // nil: none

	// observed holds each registered route path's recorder; nil without an
	// Observer. Filled while the server is built, read-only afterwards.
	observed  map[string]func(code int, took time.Duration)
	unmatched func(code int, took time.Duration)

	maxConns int
	nosniff  []string // the X-Content-Type-Options value, built once
}

// New returns the API's server: GET and HEAD /v1/craft_apps/release_info,
// /v1/craft_apps/release_info/{app}, /v1/craft_apps/download/{app} and / from
// r, /healthz, /readyz reporting ready, and /metrics and the webhook if opts
// has them.
func New(r Renderer, ready *Gate, log *zap.Logger, opts Options) *Server {
	s := newServer(log, opts)
	s.routes(r, ready, opts.Metrics, opts.Webhook)
	return s
}

// NewHealth returns the server of the ports that are not public (the
// poller's, the API's metrics port): /healthz, /readyz reporting ready, and
// /metrics if opts has it.
func NewHealth(ready *Gate, log *zap.Logger, opts Options) *Server {
	s := newServer(log, opts)
	s.routes(nil, ready, opts.Metrics, nil)
	return s
}

func newServer(log *zap.Logger, opts Options) *Server {
	e := echo.New()
	e.HideBanner, e.HidePort = true, true
	// zap is the only log: echo's own logger would write a second format.
	e.Logger.SetOutput(io.Discard)
	obs := opts.Observer
	s := &Server{echo: e, log: log, obs: obs, maxConns: opts.MaxConnections, nosniff: []string{"nosniff"}}
	if s.maxConns <= 0 {
		s.maxConns = DefaultMaxConnections
	}
	if obs != nil {
		s.observed = make(map[string]func(int, time.Duration))
		s.unmatched = obs.Route(UnmatchedRoute)
	}
	e.HTTPErrorHandler = s.unrouted
	return s
}

// ServeHTTP answers one request. Every answer carries
// X-Content-Type-Options: nosniff, so that no browser reads one as anything
// but its Content-Type.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	w.Header()[hdrContentTypeOptions] = s.nosniff
	s.echo.ServeHTTP(w, r)
}

// Serve answers HTTP requests on ln until ctx is done, then shuts down
// gracefully: it stops accepting, closes idle connections, and waits at most
// shutdownTimeout for the requests in flight before closing what is left.
// It holds at most the server's MaxConnections open: at the cap, the
// connection that has done nothing for longest (an idle keep-alive one, or a
// new one silent for a second) is closed for a new one, which waits only when
// there is none.
// It closes ln. It returns nil after a graceful shutdown, and an error when
// serving failed or requests were still running at the deadline. Callers
// behind a load balancer close the readiness Gate a moment before ctx ends,
// so that the balancer sees the 503 and stops sending traffic.
func (s *Server) Serve(ctx context.Context, ln net.Listener, shutdownTimeout time.Duration) error {
	limited := newLimitListener(ln, s.maxConns)
	srv := &http.Server{
		Handler:   s,
		ConnState: limited.state,
		// Headers come at once from a proxy, and at the cap a connection
		// without them is closed for another after headerGrace anyway.
		ReadHeaderTimeout: 2 * time.Second,
		ReadTimeout:       10 * time.Second,
		WriteTimeout:      30 * time.Second,
		// Longer than Cloudflare's 900 s proxy idle timeout, so that the
		// proxy, not the origin, closes an idle keep-alive connection and
		// never sends a request on one the origin just closed. The
		// connection cap bounds what idle connections can cost meanwhile.
		IdleTimeout:    IdleTimeout,
		MaxHeaderBytes: 64 << 10,
		ErrorLog:       zap.NewStdLog(s.log.With(zap.String("addr", ln.Addr().String()))),
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
