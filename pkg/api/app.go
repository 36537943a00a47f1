package api

import (
	"net/http"
	"strconv"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/storytold/craft-releases/pkg/download"
	"github.com/storytold/craft-releases/pkg/release"
	"github.com/storytold/craft-releases/pkg/snapshot"
)

// releaseInfoApp serves one app's answer, {"success":true,"app":AppInfo},
// with the same rules as the full answer for that app alone; an app that is
// not configured answers 404 naming the key.
func releaseInfoApp(r Renderer) echo.HandlerFunc {
	return func(c echo.Context) error {
		key := c.Param("app")
		app := r.Current().Apps[key]
		if app == nil {
			c.Response().Header()[hdrVary] = varyEncoding
			return writeError(c, http.StatusNotFound, unknownApp(key))
		}
		return serveDoc(c, &app.Doc, jsonType)
	}
}

// errorBody is the JSON of the error answers of the app and download
// endpoints: success false and what went wrong.
type errorBody struct {
	Success bool   `json:"success"`
	Error   string `json:"error"`
}

// platformsError is a download's error answer that lists the platforms the
// release has assets for ([] when none).
type platformsError struct {
	Success   bool               `json:"success"`
	Error     string             `json:"error"`
	Platforms []release.Platform `json:"platforms"`
}

func newPlatformsError(msg string, assets []release.Asset) platformsError {
	ps := download.Platforms(assets)
	if ps == nil {
		ps = []release.Platform{}
	}
	return platformsError{Error: msg, Platforms: ps}
}

// noStore keeps an error from being cached: the next release may fix it.
var noStore = []string{"no-store"}

// The Cache-Control of a redirect and a feed's answer: publicCache as the
// answers (snapshot.CacheControlFetched), privateCache for one that a
// User-Agent decided or that has a channel, which follows two releases, so
// that no shared cache keeps it (docs/downloads.md, docs/updates.md).
var (
	publicCache  = []string{snapshot.CacheControlFetched}
	privateCache = []string{"private, max-age=60"}
)

// writeError answers status with body (an errorBody or a platformsError),
// not cached, without a body for HEAD.
func writeError(c echo.Context, status int, body any) error {
	b, err := release.Marshal(body)
	if err != nil {
		return err
	}
	h := c.Response().Header()
	h[hdrContentType] = jsonType
	h[hdrCacheControl] = noStore
	h[hdrContentLength] = []string{strconv.Itoa(len(b))}
	c.Response().WriteHeader(status)
	if c.Request().Method != http.MethodHead {
		// A failed write means the client has gone: no one is left to tell.
		_, _ = c.Response().Write(b)
	}
	return nil
}

// unknownApp is the error of a key that is not configured, quoted and cut
// to 64 bytes since it comes from the request.
func unknownApp(key string) errorBody {
	const limit = 64
	if len(key) > limit {
		key = strings.ToValidUTF8(key[:limit], "") + "…"
	}
	return errorBody{Error: "unknown app " + strconv.Quote(key)}
}
