package api

import (
	"net/http"
	"net/url"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/storytold/craft-releases/pkg/snapshot"
	"github.com/storytold/craft-releases/pkg/updates/tauri"
)

// The feeds a FeedObserver is told of.
const (
	FeedTauri       = "tauri"        // the dynamic endpoint
	FeedTauriStatic = "tauri_static" // latest.json
	// UnknownApp is the app a FeedObserver is told of for a key that is not
	// configured, so that no request adds a series.
	UnknownApp = "(unknown)"
)

// FeedObserver is told of every answer of an updater feed.
type FeedObserver interface {
	// Feed reports an answer of feed (FeedTauri, FeedTauriStatic…) about
	// app (a configured key, or UnknownApp), the decision it came from
	// (DecisionNone, DecisionStaged…) and its status code.
	Feed(app, feed, decision string, code int)
}

// tauriUpdate answers an updater of app with the update its target, arch
// and bundle type get (bundle type unknown on the route without one): 200
// with the update, 204 when the query's current_version is not older, 404
// saying what is missing; with channel=prerelease, about the app's
// pre-release when it has one, and private (docs/updates.md).
func tauriUpdate(r Renderer, obs FeedObserver) echo.HandlerFunc {
	return tauriHandler(r, obs, FeedTauri, func(c echo.Context, f *snapshot.Feed) *snapshot.Offer {
		return f.Offer(tauri.Request{Target: c.Param("target"), Arch: c.Param("arch"), BundleType: c.Param("bundle_type")})
	})
}

// tauriManifest answers with the static latest.json of app's release, or
// the 404 when it has no signed bundle; channel as tauriUpdate.
func tauriManifest(r Renderer, obs FeedObserver) echo.HandlerFunc {
	return tauriHandler(r, obs, FeedTauriStatic, func(_ echo.Context, f *snapshot.Feed) *snapshot.Offer { return f.Manifest })
}

// tauriHandler serves the offer that pick chooses of the Tauri feed the
// updater gets (choice.tauri).
func tauriHandler(r Renderer, obs FeedObserver, feed string, pick func(echo.Context, *snapshot.Feed) *snapshot.Offer) echo.HandlerFunc {
	return feedHandler(r, obs, feed, false, func(c echo.Context, ch *choice) error {
		current := queryValue(c.Request().URL.RawQuery, "current_version")
		o := pick(c, ch.tauri(current))
		if o.Err != "" {
			return writeError(c, http.StatusNotFound, errorBody{Error: o.Err})
		}
		cacheControl := ch.cacheControl
		if cacheControl == nil || o.CacheControl == snapshot.CacheControlUnfetched {
			cacheControl = o.Values.CacheControl
		}
		if !o.Newer(current) {
			return noContent(c, cacheControl)
		}
		return serveDocAs(c, &o.Doc, jsonType, cacheControl)
	})
}

// queryValue returns the first non-empty value of name in a raw query,
// unescaped ("1.0.0%2Bb5" is "1.0.0+b5"; a raw "+" is a space), without
// allocating for a plain one; "" when there is none.
func queryValue(rawQuery, name string) string {
	for rawQuery != "" {
		var pair string
		pair, rawQuery, _ = strings.Cut(rawQuery, "&")
		n, value, _ := strings.Cut(pair, "=")
		if n != name || value == "" {
			continue
		}
		if strings.ContainsAny(value, "%+") {
			if v, err := url.QueryUnescape(value); err == nil {
				value = v
			}
		}
		return value
	}
	return ""
}
