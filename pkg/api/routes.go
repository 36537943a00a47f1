package api

import (
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/storytold/craft-releases/pkg/daemon"
	"github.com/storytold/craft-releases/pkg/routes"
)

// register lists every route of the public server. Without opts.Metrics
// there is no /metrics, without opts.Webhook no webhook. Every route but the webhook (POST, and the router's own
// OPTIONS) answers GET, HEAD and OPTIONS (204 with Allow, through the same
// middleware, so it is counted).
// Paths that are not listed answer 404, listed paths asked with another
// method 405.
func (s *Server) register(r Renderer, ready *daemon.Gate, opts Options) {
	metrics, webhook := opts.Metrics, opts.Webhook
	s.get(routes.ReleaseInfoPath, releaseInfo(r))
	s.get(routes.ReleaseInfoAppPath, releaseInfoApp(r))
	s.get(routes.DownloadPath, downloadRedirect(r))
	s.get(routes.TauriPath, tauriUpdate(r, opts.Feeds))
	s.get(routes.TauriAnyPath, tauriUpdate(r, opts.Feeds))
	s.get(routes.TauriManifestPath, tauriManifest(r, opts.Feeds))
	s.get(routes.AppImagePath, appImageZsync(r, opts.Feeds))
	s.get(routes.SquirrelMacPath, squirrelMac(r, opts.Feeds))
	s.get(routes.SquirrelWindowsPath, squirrelWindows(r, opts.Feeds))
	s.get(routes.SquirrelWindowsArchPath, squirrelWindows(r, opts.Feeds))
	s.get(routes.VelopackPath, velopackFeed(r, opts.Feeds))
	s.get(routes.ElectronPath, electronFeed(r, opts.Feeds))
	s.get(routes.PagePath, releasePage(r))
	s.get(routes.OpenAPIPath, openAPI())
	s.get(daemon.HealthzPath, echo.WrapHandler(daemon.Healthz()))
	s.get(daemon.ReadyzPath, echo.WrapHandler(daemon.Readyz(ready)))
	if metrics != nil {
		s.get(daemon.MetricsPath, echo.WrapHandler(metrics))
	}
	if webhook != nil {
		s.echo.POST(routes.WebhookPath, s.observe(routes.WebhookPath)(echo.WrapHandler(webhook)))
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
