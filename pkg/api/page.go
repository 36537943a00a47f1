package api

import (
	"github.com/labstack/echo/v4"

	"github.com/storytold/craft-releases/pkg/page"
)

// releasePage serves the current rendering's release page like the full
// answer (ETag, gzip, 304, HEAD), with a Content-Security-Policy that allows
// no script.
func releasePage(r Renderer) echo.HandlerFunc {
	htmlType := []string{"text/html; charset=utf-8"}
	csp := []string{page.ContentSecurityPolicy()}
	return func(c echo.Context) error {
		c.Response().Header()[hdrCSP] = csp
		return serveDoc(c, &r.Current().Page, htmlType)
	}
}

// hdrCSP is the page's policy header, in canonical form.
const hdrCSP = "Content-Security-Policy"
