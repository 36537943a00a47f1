package api

import (
	"net/http"
	"strconv"

	"github.com/labstack/echo/v4"
)

// healthz answers 200 for as long as the process serves HTTP.
func healthz() echo.HandlerFunc {
	ok := newText("ok\n")
	return func(c echo.Context) error { return ok.write(c, http.StatusOK) }
}

// readyz answers 200 while ready is open and 503 while it is closed.
func readyz(ready *Gate) echo.HandlerFunc {
	yes, no := newText("ready\n"), newText("not ready\n")
	return func(c echo.Context) error {
		if ready.Ready() {
			return yes.write(c, http.StatusOK)
		}
		return no.write(c, http.StatusServiceUnavailable)
	}
}

// text is a small plain-text answer with its header values built once.
type text struct {
	body                              []byte
	contentType, cacheControl, length []string
}

func newText(body string) text {
	return text{
		body:         []byte(body),
		contentType:  []string{"text/plain; charset=utf-8"},
		cacheControl: []string{"no-store"},
		length:       []string{strconv.Itoa(len(body))},
	}
}

// write answers the request with status and t, without a body for HEAD.
func (t text) write(c echo.Context, status int) error {
	h := c.Response().Header()
	h[hdrContentType] = t.contentType
	h[hdrCacheControl] = t.cacheControl
	h[hdrContentLength] = t.length
	c.Response().WriteHeader(status)
	if c.Request().Method != http.MethodHead {
		// A failed write means the client has gone: no one is left to tell.
		_, _ = c.Response().Write(t.body)
	}
	return nil
}

// options answers OPTIONS of a route with 204 and the methods it allows,
// and the Vary that the route's other answers carry: Accept-Encoding where
// they may be gzipped (wire.md), User-Agent for a download link.
func options(path string) echo.HandlerFunc {
	allow := []string{"GET, HEAD, OPTIONS"}
	var vary []string
	switch path {
	case ReleaseInfoPath, ReleaseInfoAppPath, PagePath, OpenAPIPath:
		vary = varyEncoding
	case DownloadPath:
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
