package api

import (
	"net/http"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/storytold/craft-releases/pkg/download"
	"github.com/storytold/craft-releases/pkg/release"
	"github.com/storytold/craft-releases/pkg/routes"
)

// FeedAppImage is the AppImage update feed, as a FeedObserver is told of it.
const FeedAppImage = "appimage"

// appImageZsync answers an AppImage's update check (its update information
// "zsync|<this URL>") with a 302 to the .AppImage.zsync file of app's
// release for the arch the path names ("x86_64.zsync"), as the download
// link with os=linux and package=app_image_zsync picks it; with
// channel=prerelease, of the pre-release when the app has one, private.
// Errors are JSON and not cached: 404 for an unknown app or arch, no release
// or no zsync file, 400 for a bad channel (docs/updates.md, "AppImage").
func appImageZsync(r Renderer, obs FeedObserver) echo.HandlerFunc {
	return feedHandler(r, obs, FeedAppImage, false, func(c echo.Context, ch *choice) error {
		key, file := c.Param("app"), c.Param("file")
		arch, ok := routes.AppImageArch(file)
		if !ok {
			return writeError(c, http.StatusNotFound, errorBody{Error: "unknown file: want x86_64.zsync, i686.zsync or aarch64.zsync"})
		}
		t, missing := ch.track()
		if t == nil {
			return writeError(c, http.StatusNotFound, missing)
		}
		i, ok := download.Pick(t.Downloads, download.Want{OS: release.OSLinux, Arch: arch, Package: release.PackageAppImageZsync})
		if !ok {
			return writeError(c, http.StatusNotFound, errorBody{Error: key + " " + t.Release.Tag + " has no AppImage zsync file for " + strings.TrimSuffix(file, ".zsync")})
		}
		cacheControl := ch.cacheControl
		if cacheControl == nil {
			cacheControl = publicCache
		}
		h := c.Response().Header()
		h[hdrCacheControl] = cacheControl
		h[hdrLocation] = t.Locations[i]
		c.Response().WriteHeader(http.StatusFound)
		return nil
	})
}
