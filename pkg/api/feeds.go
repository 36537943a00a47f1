package api

import (
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/storytold/craft-releases/pkg/download"
	"github.com/storytold/craft-releases/pkg/snapshot"
)

// feedHandler makes the checks every updater feed makes before answer
// answers about the path's app (docs/updates.md): 404 for an app that is
// not configured, or never fetched since the pod started; 400 for a channel
// that is not stable or prerelease. answer is told whether the updater
// asks for the pre-release, and the Cache-Control of an answer with a
// channel (private: it follows two releases), nil without one. Every answer
// says Vary: Accept-Encoding, and obs, if any, is told of it as feed.
func feedHandler(r Renderer, obs FeedObserver, feed string,
	answer func(c echo.Context, app *snapshot.App, prerelease bool, cacheControl []string) error) echo.HandlerFunc {
	return func(c echo.Context) error {
		key := c.Param("app")
		app := r.Current().Apps[key]
		c.Response().Header()[hdrVary] = varyEncoding
		if obs != nil {
			counted := key
			if app == nil {
				counted = UnknownApp
			}
			defer func() { obs.Feed(counted, feed, c.Response().Status) }()
		}
		if app == nil {
			return writeError(c, http.StatusNotFound, unknownApp(key))
		}
		want := download.Want{Channel: queryValue(c.Request().URL.RawQuery, "channel")}
		if err := download.Check(want); err != nil {
			return writeError(c, http.StatusBadRequest, errorBody{Error: err.Error()})
		}
		if !app.Fetched {
			return writeError(c, http.StatusNotFound, errorBody{Error: key + " has no release yet: it was not fetched from GitHub yet"})
		}
		var cacheControl []string
		if want.Channel != "" {
			cacheControl = privateCache
		}
		return answer(c, app, want.Prerelease(), cacheControl)
	}
}

// noContent answers 204, the update check's "none", with cacheControl.
func noContent(c echo.Context, cacheControl []string) error {
	c.Response().Header()[hdrCacheControl] = cacheControl
	c.Response().WriteHeader(http.StatusNoContent)
	return nil
}
