package api

import (
	_ "embed"

	"github.com/labstack/echo/v4"

	"github.com/storytold/craft-releases/pkg/snapshot"
)

// openAPIDoc is the OpenAPI 3.1 document of every endpoint of both binaries,
// which the API serves at routes.OpenAPIPath. Tests check it against the routes and
// the answers of the running binaries.
//
//go:embed openapi.json
var openAPIDoc []byte

// openAPICache is the OpenAPI document's Cache-Control: it changes only with
// a release of the service, and may be served stale as the answers are.
const openAPICache = "public, max-age=300, stale-while-revalidate=30, stale-if-error=86400"

// openAPI serves the embedded OpenAPI document as the answers are served
// (serveDoc): rendered once, with a gzip copy, strong ETags and 304s.
func openAPI() echo.HandlerFunc {
	doc := snapshot.NewDoc(openAPIDoc, openAPICache)
	return func(c echo.Context) error { return serveDoc(c, &doc, jsonType) }
}
