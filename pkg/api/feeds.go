package api

import (
	"errors"
	"net/http"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/storytold/craft-releases/pkg/download"
	"github.com/storytold/craft-releases/pkg/release"
	"github.com/storytold/craft-releases/pkg/snapshot"
)

// feedHandler makes the checks every updater feed makes before answer
// answers about the path's app (docs/updates.md): 404 for an app that is
// not configured, or never fetched since the pod started; 400 for a channel
// that is not stable or prerelease, or, but for a feed whose updater stages
// rollouts itself (clientSide), a malformed install id. answer is told what
// the request gets (a choice). Every answer says Vary: Accept-Encoding (and
// X-Install-Id while a rollout is under way and the id counts), and obs,
// if any, is told of it as feed.
func feedHandler(r Renderer, obs FeedObserver, feed string, clientSide bool, answer func(c echo.Context, ch *choice) error) echo.HandlerFunc {
	return func(c echo.Context) error {
		key := c.Param("app")
		app := r.Current().Apps[key]
		h := c.Response().Header()
		h[hdrVary] = varyEncoding
		ch := choice{key: key, app: app, decision: DecisionNone}
		if obs != nil {
			counted := key
			if app == nil {
				counted = UnknownApp
			}
			defer func() { obs.Feed(counted, feed, ch.decision, c.Response().Status) }()
		}
		if app == nil {
			return writeError(c, http.StatusNotFound, unknownApp(key))
		}
		rawQuery := c.Request().URL.RawQuery
		want := download.Want{Channel: queryValue(rawQuery, "channel")}
		if err := download.Check(want); err != nil {
			return writeError(c, http.StatusBadRequest, errorBody{Error: err.Error()})
		}
		if !app.Fetched {
			return writeError(c, http.StatusNotFound, errorBody{Error: key + " has no release yet: it was not fetched from GitHub yet"})
		}
		ch.prerelease = want.Prerelease()
		if want.Channel != "" {
			ch.cacheControl = privateCache
		}
		if app.Withdrawn && !ch.prerelease {
			ch.decision = DecisionWithdrawnSkipped
		}
		if clientSide {
			return answer(c, &ch)
		}
		staging := app.Rollout != nil && !ch.prerelease
		if staging {
			h[hdrVary] = varyEncodingInstall
		}
		// An id is checked whether or not a rollout is under way, so that
		// an app that sends a bad one learns it at once, not when its first
		// rollout starts.
		id, err := installID(c.Request().Header, rawQuery)
		if err != nil {
			return writeError(c, http.StatusBadRequest, errorBody{Error: err.Error()})
		}
		if staging {
			ch.decision = DecisionPrevious
			if id != "" {
				// The answer depends on the id: no shared cache may keep it.
				ch.cacheControl = privateCache
				if release.Bucket(key, app.Rollout.Tag, id) < app.Rollout.Percent {
					ch.staged, ch.decision = true, DecisionStaged
				}
			}
		}
		return answer(c, &ch)
	}
}

// choice is what a feed request gets of its app: the pre-release when it
// asked for the channel, the staged release when its install id is in the
// rollout, and the Cache-Control of an answer that depends on either (nil:
// the answer's own).
type choice struct {
	key          string
	app          *snapshot.App
	prerelease   bool
	staged       bool
	cacheControl []string
	decision     string // for the FeedObserver: DecisionNone, DecisionStaged…
}

// tauri returns the Tauri feed the request gets, for an updater running
// current: below the app's minimum version, the critical feed of its
// newest release.
func (ch *choice) tauri(current string) *snapshot.Feed {
	switch {
	case ch.prerelease && ch.app.PrereleaseTauri != nil:
		return ch.app.PrereleaseTauri
	case !ch.prerelease && ch.app.Critical != nil && ch.app.Below(current):
		ch.decision = DecisionBelowMinimum
		return ch.app.Critical
	case ch.staged:
		return ch.app.Rollout.Tauri
	}
	return ch.app.Tauri
}

// updates returns the other updaters' answers the request gets, for an
// updater running current ("" when it does not say): below the app's
// minimum version, the staged release's (unless halted), unstaged;
// clientSide for an updater that stages a rollout itself (the staged
// release's files, with the share written in them, for everyone else).
func (ch *choice) updates(clientSide bool, current string) *snapshot.Updates {
	switch {
	case ch.prerelease && ch.app.PrereleaseUpdates != nil:
		return ch.app.PrereleaseUpdates
	case ch.prerelease || ch.app.Rollout == nil:
		return ch.app.Updates
	case ch.app.Rollout.Percent > 0 && ch.app.Below(current):
		// The staged release's files as they are: a client below the
		// minimum takes it whatever its own bucket.
		ch.decision = DecisionBelowMinimum
		return ch.app.Rollout.Unstaged
	case clientSide:
		ch.decision = DecisionClientSide
		return ch.app.Rollout.Updates
	case ch.staged:
		return ch.app.Rollout.Updates
	}
	return ch.app.Updates
}

// track returns the release and downloads the request gets, or the 404 of
// none.
func (ch *choice) track() (*snapshot.Track, errorBody) {
	if ch.staged {
		return &ch.app.Rollout.Track, errorBody{}
	}
	return trackOf(ch.app, ch.key, ch.prerelease)
}

// The decisions a FeedObserver is told of: which release a feed answer
// came from (docs/metrics.md).
const (
	DecisionNone         = "none"          // the app has no rollout under way
	DecisionStaged       = "staged"        // the install is in the rollout
	DecisionPrevious     = "previous"      // the install is outside the rollout, or sent no id
	DecisionClientSide   = "client_side"   // the staged release's file, the share written in it
	DecisionBelowMinimum = "below_minimum" // the install runs a version below the minimum
	// DecisionWithdrawnSkipped: the app's latest release is withdrawn, and
	// the answer is the newest one that is not.
	DecisionWithdrawnSkipped = "withdrawn_skipped"
)

// maxInstallID bounds an install id's length.
const maxInstallID = 128

// installID returns the install id a request carries: its X-Install-Id
// header, else its install_id or stagingId (Velopack's) query parameter;
// "" for none. An id must be 1 to 128 visible ASCII characters.
func installID(h http.Header, rawQuery string) (string, error) {
	id := ""
	if v := h[hdrInstallID]; len(v) > 0 && v[0] != "" {
		id = v[0]
	} else if id = queryValue(rawQuery, "install_id"); id == "" {
		id = queryValue(rawQuery, "stagingId")
	}
	if len(id) > maxInstallID || strings.IndexFunc(id, func(r rune) bool { return r <= ' ' || r > '~' }) >= 0 {
		return "", errors.New("bad install id: want 1 to 128 visible ASCII characters")
	}
	return id, nil
}

// noContent answers 204, the update check's "none", with cacheControl.
func noContent(c echo.Context, cacheControl []string) error {
	c.Response().Header()[hdrCacheControl] = cacheControl
	c.Response().WriteHeader(http.StatusNoContent)
	return nil
}
