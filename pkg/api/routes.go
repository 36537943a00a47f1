package api

import (
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/storytold/craft-releases/pkg/download"
)

// The paths the servers answer (wire.md, "Other endpoints"). The Kubernetes
// manifests' probes and scrape settings are checked against them.
const (
	ReleaseInfoPath    = "/v1/craft_apps/release_info" // the endpoint launchers call
	ReleaseInfoAppPath = ReleaseInfoPath + "/:app"     // one app's part of it
	DownloadPath       = download.PathPrefix + ":app"  // 302 to one asset of an app's release
	PagePath           = "/"                           // the release page, HTML
	HealthzPath        = "/healthz"                    // 200 while the process runs
	ReadyzPath         = "/readyz"                     // 200 while the Gate is open
	MetricsPath        = "/metrics"                    // Prometheus text
)

// routes lists every route of both servers. A nil r leaves out the endpoint,
// as on the poller's port; a nil metrics leaves out /metrics. Paths that are
// not listed answer 404, listed paths asked with another method 405.
func (s *Server) routes(r Renderer, ready *Gate, metrics http.Handler) {
	// The middleware is applied to each handler once, here, rather than
	// with echo's Use, which rebuilds the chain and allocates on every request.
	getOrHead := []string{http.MethodGet, http.MethodHead}

	if r != nil {
		s.echo.Match(getOrHead, ReleaseInfoPath, s.observe(ReleaseInfoPath)(releaseInfo(r)))
		s.echo.Match(getOrHead, ReleaseInfoAppPath, s.observe(ReleaseInfoAppPath)(releaseInfoApp(r)))
		s.echo.Match(getOrHead, DownloadPath, s.observe(DownloadPath)(downloadRedirect(r)))
		s.echo.Match(getOrHead, PagePath, s.observe(PagePath)(releasePage(r)))
	}
	s.echo.Match(getOrHead, HealthzPath, s.observe(HealthzPath)(healthz()))
	s.echo.Match(getOrHead, ReadyzPath, s.observe(ReadyzPath)(readyz(ready)))
	if metrics != nil {
		s.echo.GET(MetricsPath, s.observe(MetricsPath)(echo.WrapHandler(metrics)))
	}
}
