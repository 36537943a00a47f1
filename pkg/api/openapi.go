package api

import (
	_ "embed"
	"net/http"
	"strconv"

	"github.com/labstack/echo/v4"
)

// openAPIDoc is the OpenAPI 3.1 document of every endpoint of both binaries,
// which the API serves at OpenAPIPath. Tests check it against the routes and
// the answers of the running binaries.
//
//go:embed openapi.json
var openAPIDoc []byte

// openAPI serves the embedded OpenAPI document.
func openAPI() echo.HandlerFunc {
	contentType := []string{"application/json"}
	cacheControl := []string{"public, max-age=300"}
	length := []string{strconv.Itoa(len(openAPIDoc))}
	return func(c echo.Context) error {
		h := c.Response().Header()
		h[hdrContentType] = contentType
		h[hdrCacheControl] = cacheControl
		h[hdrContentLength] = length
		c.Response().WriteHeader(http.StatusOK)
		if c.Request().Method != http.MethodHead {
			// A failed write means the client has gone: no one is left to tell.
			_, _ = c.Response().Write(openAPIDoc)
		}
		return nil
	}
}
