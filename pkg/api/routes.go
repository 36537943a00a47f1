package api

import (
	"net/http"

	"github.com/labstack/echo/v4"
)

// ReleaseInfoPath is the path of the endpoint launchers call.
const ReleaseInfoPath = "/v1/craft_apps/release_info"

// routes lists every route of both servers. A nil r leaves out the endpoint,
// as on the poller's port; a nil metrics leaves out /metrics. Paths that are
// not listed answer 404, listed paths asked with another method 405.
func (s *Server) routes(r Renderer, ready *Gate, metrics http.Handler) {
	// The middleware is applied to each handler once, here, rather than
	// with echo's Use, which rebuilds the chain and allocates on every request.
	getOrHead := []string{http.MethodGet, http.MethodHead}

	if r != nil {
		s.echo.Match(getOrHead, ReleaseInfoPath, s.observe(ReleaseInfoPath)(releaseInfo(r)))
	}
	s.echo.Match(getOrHead, "/healthz", s.observe("/healthz")(healthz()))
	s.echo.Match(getOrHead, "/readyz", s.observe("/readyz")(readyz(ready)))
	if metrics != nil {
		s.echo.GET("/metrics", s.observe("/metrics")(echo.WrapHandler(metrics)))
	}
}
