// Package api serves HTTP: GET /v1/craft_apps/release_info, each app's part
// of it, the download redirects and the release page from the current
// snapshot rendering, the OpenAPI document, the webhook's route, and the
// health endpoints of pkg/daemon on the public port. It is the only package
// that knows echo.
package api

import (
	"io"
	"net/http"
	"time"

	"github.com/labstack/echo/v4"
	"go.uber.org/zap"

	"github.com/storytold/craft-releases/pkg/daemon"
	"github.com/storytold/craft-releases/pkg/routes"
	"github.com/storytold/craft-releases/pkg/snapshot"
)

// Renderer gives the rendering to serve. Current is called once per request,
// concurrently, and must neither block nor return nil.
type Renderer interface {
	Current() *snapshot.Rendering
}

// Options are the optional parts of a Server.
type Options struct {
	// Metrics, when not nil, serves GET /metrics.
	Metrics http.Handler
	// Observer, when not nil, is told about every answered request.
	Observer daemon.Observer
	// Webhook, when not nil, serves POST /v1/craft_apps/github_webhook
	// (the API's server only).
	Webhook http.Handler
	// Feeds, when not nil, is told about every answer of an updater feed.
	Feeds FeedObserver
}

// Server is an http.Handler for the service's routes, safe for concurrent use.
// A handler's panic is logged and answered with 500.
type Server struct {
	echo *echo.Echo
	log  *zap.Logger
	obs  daemon.Observer // nil: none

	// observed holds each registered route path's recorder; nil without an
	// Observer. Filled while the server is built, read-only afterwards.
	observed  map[string]func(code int, took time.Duration)
	unmatched func(code int, took time.Duration)

	nosniff []string // the X-Content-Type-Options value, built once
	webhook bool     // the webhook's route is registered
}

// New returns the API's server: GET and HEAD /v1/craft_apps/release_info,
// /v1/craft_apps/release_info/{app}, /v1/craft_apps/download/{app}, the
// updater feeds under /v1/craft_apps/updates/{app}/ and / from r, /openapi.json, /healthz, /readyz reporting ready, and /metrics and the
// webhook if opts has them. daemon.Serve serves it.
func New(r Renderer, ready *daemon.Gate, log *zap.Logger, opts Options) *Server {
	s := newServer(log, opts)
	s.webhook = opts.Webhook != nil
	s.register(r, ready, opts)
	return s
}

func newServer(log *zap.Logger, opts Options) *Server {
	e := echo.New()
	e.HideBanner, e.HidePort = true, true
	// zap is the only log: echo's own logger would write a second format.
	e.Logger.SetOutput(io.Discard)
	obs := opts.Observer
	s := &Server{echo: e, log: log, obs: obs, nosniff: []string{"nosniff"}}
	if obs != nil {
		s.observed = make(map[string]func(int, time.Duration))
		s.unmatched = obs.Route(daemon.UnmatchedRoute)
	}
	e.HTTPErrorHandler = s.unrouted
	return s
}

// ServeHTTP answers one request. Every answer carries
// X-Content-Type-Options: nosniff, so that no browser reads one as anything
// but its Content-Type. Only the webhook takes a body: a request with one on
// another route is answered without reading it, with Connection: close, so
// that daemon.Serve closes the connection at once rather than wait for the
// body.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	h[hdrContentTypeOptions] = s.nosniff
	if r.ContentLength != 0 && !s.takesBody(r) {
		h[hdrConnection] = connClose
	}
	s.echo.ServeHTTP(w, r)
}

// takesBody reports whether r's route reads a request body: the webhook's.
func (s *Server) takesBody(r *http.Request) bool {
	return s.webhook && r.Method == http.MethodPost && r.URL.Path == routes.WebhookPath
}
