package api

import (
	"github.com/labstack/echo/v4"

	"github.com/storytold/craft-releases/pkg/page"
)

// releasePage serves the current rendering's release page like the full
// answer (ETag, gzip, 304, HEAD), with a Content-Security-Policy that allows
// no script and a Referrer-Policy that sends no referrer: the page's <meta>
// says so too, but a header holds before any byte of the page is read.
func releasePage(r Renderer) echo.HandlerFunc {
	htmlType := []string{"text/html; charset=utf-8"}
	csp := []string{page.ContentSecurityPolicy()}
	noReferrer := []string{page.ReferrerPolicy}
	return func(c echo.Context) error {
		h := c.Response().Header()
		h[hdrCSP] = csp
		h[hdrReferrerPolicy] = noReferrer
		return serveDoc(c, &r.Current().Page, htmlType)
	}
}

// The page's policy headers, in canonical form.
const (
	hdrCSP            = "Content-Security-Policy"
	hdrReferrerPolicy = "Referrer-Policy"
)
