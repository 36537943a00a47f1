package api

import (
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/storytold/craft-releases/pkg/download"
)

// The paths the servers answer (wire.md, "Other endpoints"). deploy/check
// imports them to check the Kubernetes manifests' probes, scrape
// annotations and PodMonitors.
const (
	ReleaseInfoPath    = "/v1/craft_apps/release_info"   // the endpoint launchers call
	ReleaseInfoAppPath = ReleaseInfoPath + "/:app"       // one app's part of it
	DownloadPath       = download.PathPrefix + ":app"    // 302 to one asset of an app's release
	PagePath           = "/"                             // the release page, HTML
	HealthzPath        = "/healthz"                      // 200 while the process runs
	ReadyzPath         = "/readyz"                       // 200 while the Gate is open
	MetricsPath        = "/metrics"                      // Prometheus text
	OpenAPIPath        = "/openapi.json"                 // the OpenAPI document, on the API only
	WebhookPath        = "/v1/craft_apps/github_webhook" // GitHub's signed deliveries (POST)
)

// routes lists every route of both servers. A nil r leaves out the endpoint,
// as on the poller's port; a nil metrics leaves out /metrics, a nil webhook
// the webhook. Every route but the webhook (POST, and the router's own
// OPTIONS) answers GET, HEAD and OPTIONS (204 with Allow, through the same
// middleware, so it is counted).
// Paths that are not listed answer 404, listed paths asked with another
// method 405.
func (s *Server) routes(r Renderer, ready *Gate, metrics, webhook http.Handler) {
	if r != nil {
		s.get(ReleaseInfoPath, releaseInfo(r))
		s.get(ReleaseInfoAppPath, releaseInfoApp(r))
		s.get(DownloadPath, downloadRedirect(r))
		s.get(PagePath, releasePage(r))
		s.get(OpenAPIPath, openAPI())
	}
	s.get(HealthzPath, healthz())
	s.get(ReadyzPath, readyz(ready))
	if metrics != nil {
		s.get(MetricsPath, echo.WrapHandler(metrics))
	}
	if webhook != nil {
		s.echo.POST(WebhookPath, s.observe(WebhookPath)(echo.WrapHandler(webhook)))
	}
}

// get registers h for GET and HEAD of path, and OPTIONS. The middleware is
// applied to each handler once, here, rather than with echo's Use, which
// rebuilds the chain and allocates on every request.
func (s *Server) get(path string, h echo.HandlerFunc) {
	mw := s.observe(path)
	s.echo.Match([]string{http.MethodGet, http.MethodHead}, path, mw(h))
	s.echo.OPTIONS(path, mw(options(path)))
}
