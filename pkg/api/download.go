package api

import (
	"net/http"
	"net/url"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/storytold/craft-releases/pkg/download"
	"github.com/storytold/craft-releases/pkg/snapshot"
)

// downloadRedirect answers 302 to the download_url of the asset of app's
// current release that the query's os, arch and package ask for, inferring
// what is missing from the User-Agent (package download); with
// channel=prerelease, of its pre-release when it has one. A link that gives
// all it needs and no channel is the same for everyone and cached publicly
// (and purged with its release); one that needed the User-Agent says Vary:
// User-Agent and private, and so does one with a channel, which follows two
// releases. Errors are JSON, not cached: 404 for an unknown app, no release
// or no such asset (listing the platforms there are), 400 for a bad value or
// an os that cannot be told. Only the snapshot's trusted download URLs are
// ever a Location.
func downloadRedirect(r Renderer) echo.HandlerFunc {
	// The same lifetimes as the answers the links are on (publicCache): a
	// redirect to the new release's asset replaces it within a minute, or
	// at once with a purge. An inferred one stays private: shared caches
	// such as Cloudflare ignore Vary: User-Agent.
	varyAgent := []string{"User-Agent"}

	return func(c echo.Context) error {
		req, h := c.Request(), c.Response().Header()
		key := c.Param("app")
		app := r.Current().Apps[key]
		if app == nil {
			return writeError(c, http.StatusNotFound, unknownApp(key))
		}
		want := parseWant(req.URL.RawQuery)
		if err := download.Check(want); err != nil {
			return writeError(c, http.StatusBadRequest, errorBody{Error: err.Error()})
		}
		t, missing := trackOf(app, key, want.Prerelease())
		if t == nil {
			return writeError(c, http.StatusNotFound, missing)
		}
		w, usedAgent, err := download.Resolve(want, req.Header.Get("User-Agent"))
		if usedAgent {
			h[hdrVary] = varyAgent
		}
		if err != nil {
			return writeError(c, http.StatusBadRequest, newPlatformsError(err.Error(), t.Downloads))
		}
		i, ok := download.Pick(t.Downloads, w)
		if !ok {
			return writeError(c, http.StatusNotFound, newPlatformsError(noAsset(key, t.Release.Tag, w), t.Downloads))
		}
		h[hdrCacheControl] = publicCache
		if usedAgent || want.Channel != "" {
			h[hdrCacheControl] = privateCache
		}
		h[hdrLocation] = t.Locations[i]
		c.Response().WriteHeader(http.StatusFound)
		return nil
	}
}

// trackOf returns the release of app (configured as key) that a link
// serves, its pre-release when prerelease and it has one; or nil and the
// 404's error when there is no release.
func trackOf(app *snapshot.App, key string, prerelease bool) (*snapshot.Track, errorBody) {
	t := &app.Track
	if prerelease && app.Prerelease.Release != nil {
		t = &app.Prerelease
	}
	switch {
	case t.Release != nil:
		return t, errorBody{}
	case !app.Fetched:
		return nil, errorBody{Error: key + " has no release yet: it was not fetched from GitHub yet"}
	}
	return nil, errorBody{Error: key + " has no release on GitHub"}
}

// parseWant reads os, arch, package and channel from a raw query, without
// allocating for the wire's plain values: the first of each counts, an empty
// one is not given, other parameters are ignored.
func parseWant(rawQuery string) download.Want {
	var w download.Want
	for rawQuery != "" {
		var pair string
		pair, rawQuery, _ = strings.Cut(rawQuery, "&")
		name, value, _ := strings.Cut(pair, "=")
		var dst *string
		switch name {
		case "os":
			dst = &w.OS
		case "arch":
			dst = &w.Arch
		case "package":
			dst = &w.Package
		case "channel":
			dst = &w.Channel
		default:
			continue
		}
		if *dst != "" {
			continue
		}
		if strings.ContainsAny(value, "%+") {
			if v, err := url.QueryUnescape(value); err == nil {
				value = v
			}
		}
		*dst = value
	}
	return w
}

// noAsset says which platform the release has no asset for.
func noAsset(key, tag string, w download.Want) string {
	p := w.OS
	if w.Arch != "" {
		p += "/" + w.Arch
	}
	if w.Package != "" {
		p += "/" + w.Package
	} else {
		p += " (" + strings.Join(download.Preferred(w.OS), ", ") + ")"
	}
	return key + " " + tag + " has no asset for " + p + "; see platforms"
}

// hdrLocation is the redirect's header, in canonical form.
const hdrLocation = "Location"
