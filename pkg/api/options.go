package api

import (
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/storytold/craft-releases/pkg/routes"
)

// options answers OPTIONS of a route with 204 and the methods it allows,
// and the Vary that the route's other answers carry: Accept-Encoding where
// they may be gzipped (docs/wire.md, docs/updates.md), User-Agent for a
// download link.
func options(path string) echo.HandlerFunc {
	allow := []string{"GET, HEAD, OPTIONS"}
	var vary []string
	switch path {
	case routes.ReleaseInfoPath, routes.ReleaseInfoAppPath, routes.PagePath, routes.OpenAPIPath,
		routes.TauriPath, routes.TauriAnyPath, routes.TauriManifestPath, routes.AppImagePath, routes.SquirrelMacPath,
		routes.SquirrelWindowsPath, routes.SquirrelWindowsArchPath, routes.ElectronPath, routes.VelopackPath:
		vary = varyEncoding
	case routes.DownloadPath:
		vary = []string{"User-Agent"}
	}
	return func(c echo.Context) error {
		h := c.Response().Header()
		h[hdrAllow] = allow
		if vary != nil {
			h[hdrVary] = vary
		}
		return c.NoContent(http.StatusNoContent)
	}
}
