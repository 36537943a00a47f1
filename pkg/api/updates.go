package api

import (
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/storytold/craft-releases/pkg/snapshot"
	"github.com/storytold/craft-releases/pkg/updates/electron"
	"github.com/storytold/craft-releases/pkg/updates/velopack"
)

// The Squirrel and Velopack feeds, as a FeedObserver is told of them.
const (
	FeedSquirrelMac     = "squirrel_mac"
	FeedSquirrelWindows = "squirrel_windows"
	FeedVelopack        = "velopack"
	FeedElectron        = "electron"
)

// squirrelMac answers Squirrel.Mac (Electron's autoUpdater on macOS), whose
// feed URL names the arch and the version it runs: 200 with the release's
// zip for that arch ({url, name, notes, pub_date}), 204 when the version is
// not older, 400 when it is no version (Squirrel.Mac installs whatever it
// gets, even the same version), 404 saying what is missing
// (docs/updates.md, "Squirrel.Mac").
func squirrelMac(r Renderer, obs FeedObserver) echo.HandlerFunc {
	return updatesHandler(r, obs, FeedSquirrelMac, false, func(c echo.Context) string { return c.Param("version") }, func(c echo.Context, u *snapshot.Updates, cacheControl []string) error {
		o := u.Mac(c.Param("arch"))
		if o.Err != "" {
			return writeError(c, http.StatusNotFound, errorBody{Error: o.Err})
		}
		if cacheControl == nil {
			cacheControl = o.Values.CacheControl
		}
		newer, err := o.Newer(c.Param("version"))
		switch {
		case err != nil:
			return writeError(c, http.StatusBadRequest, errorBody{Error: err.Error()})
		case !newer:
			return noContent(c, cacheControl)
		}
		return serveDocAs(c, &o.Doc, jsonType, cacheControl)
	})
}

// squirrelWindows answers Squirrel.Windows' request for {feed}/RELEASES
// (with arch, for the path whose feed names one): the release's RELEASES
// file, every package as its absolute GitHub URL, the hashes the
// publisher's; 404 saying what is missing. The query Squirrel adds changes
// nothing (docs/updates.md, "Squirrel.Windows").
func squirrelWindows(r Renderer, obs FeedObserver) echo.HandlerFunc {
	return updatesHandler(r, obs, FeedSquirrelWindows, true, func(c echo.Context) string { return queryValue(c.Request().URL.RawQuery, "localVersion") }, func(c echo.Context, u *snapshot.Updates, cacheControl []string) error {
		return serveFile(c, u.Releases(c.Param("arch")), cacheControl)
	})
}

// updatesHandler serves what answer makes of the Updates the updater gets
// (choice.updates; clientSide for an updater that stages rollouts itself;
// current reads the version the updater runs from the request, nil when it
// does not say).
func updatesHandler(r Renderer, obs FeedObserver, feed string, clientSide bool, current func(echo.Context) string,
	answer func(echo.Context, *snapshot.Updates, []string) error) echo.HandlerFunc {
	return feedHandler(r, obs, feed, clientSide, func(c echo.Context, ch *choice) error {
		running := ""
		if current != nil {
			running = current(c)
		}
		return answer(c, ch.updates(clientSide, running), ch.cacheControl)
	})
}

// velopackFeed answers Velopack's request for {base}/releases.{channel}.json
// with the release's feed of that name, every FileName an absolute GitHub
// URL; 404 saying what is missing, also for a name that is no Velopack
// feed. The query Velopack adds changes nothing (docs/updates.md,
// "Velopack").
func velopackFeed(r Renderer, obs FeedObserver) echo.HandlerFunc {
	return updatesHandler(r, obs, FeedVelopack, false, func(c echo.Context) string { return queryValue(c.Request().URL.RawQuery, "localVersion") }, func(c echo.Context, u *snapshot.Updates, cacheControl []string) error {
		name := c.Param("file")
		if _, ok := velopack.IsFeed(name); !ok {
			return writeError(c, http.StatusNotFound, errorBody{Error: "unknown file: want releases.{channel}.json"})
		}
		return serveFile(c, u.File(name), cacheControl)
	})
}

// electronFeed answers electron-updater's request for {base}/{channel file}
// with the release's file of that name, every relative download its
// asset's GitHub URL, nothing else changed; 404 saying what is missing,
// also for a name that is no channel file. The query the updater adds
// (noCache) changes nothing (docs/updates.md, "electron-updater").
func electronFeed(r Renderer, obs FeedObserver) echo.HandlerFunc {
	return updatesHandler(r, obs, FeedElectron, true, nil, func(c echo.Context, u *snapshot.Updates, cacheControl []string) error {
		name := c.Param("file")
		if !electron.IsChannelFile(name) {
			return writeError(c, http.StatusNotFound, errorBody{Error: "unknown file: want a channel file such as latest.yml"})
		}
		return serveFile(c, u.File(name), cacheControl)
	})
}

// serveFile answers with f, a companion file, or its 404.
func serveFile(c echo.Context, f *snapshot.File, cacheControl []string) error {
	if f.Err != "" {
		return writeError(c, http.StatusNotFound, errorBody{Error: f.Err})
	}
	if cacheControl == nil || f.CacheControl == snapshot.CacheControlUnfetched {
		cacheControl = f.Values.CacheControl
	}
	return serveDocAs(c, &f.Doc, f.ContentType, cacheControl)
}
