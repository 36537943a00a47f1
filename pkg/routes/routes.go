// Package routes is the URL layout of the API's public port: the paths its
// server answers, and which of their answers an app's release changes (what
// a CDN purges). The poller links it without the server.
package routes

import (
	"net/url"
	"slices"

	"github.com/storytold/craft-releases/pkg/download"
	"github.com/storytold/craft-releases/pkg/release"
)

// The public paths (docs/wire.md, "Other endpoints"); the health endpoints are
// pkg/daemon's.
const (
	ReleaseInfoPath    = "/v1/craft_apps/release_info"   // the endpoint launchers call
	ReleaseInfoAppPath = ReleaseInfoPath + "/:app"       // one app's part of it
	DownloadPath       = download.PathPrefix + ":app"    // 302 to one asset of an app's release
	PagePath           = "/"                             // the release page, HTML
	OpenAPIPath        = "/openapi.json"                 // the OpenAPI document
	WebhookPath        = "/v1/craft_apps/github_webhook" // GitHub's signed deliveries (POST)

	// The Tauri updater feed (docs/updates.md): an app's update for one
	// target, arch and bundle type; the same without the bundle type, read
	// as unknown; and the static latest.json.
	TauriPath         = "/v1/craft_apps/updates/:app/tauri/:target/:arch/:bundle_type"
	TauriAnyPath      = "/v1/craft_apps/updates/:app/tauri/:target/:arch"
	TauriManifestPath = "/v1/craft_apps/updates/:app/tauri/latest.json"
)

// PurgePaths returns the paths of the cacheable answers that change when
// the release of the entry key (an app's, or its pre-release entry's:
// release.Entries) goes from old to new (either may be nil): the full answer,
// the app's own answer, the release page, and, for an app's own release,
// the explicit download link (download.Link, those of the page's buttons)
// of every platform either release has assets for, since a link of a
// platform the new release lacks now answers 404. Inferred download links,
// and those of a channel, are private, so no shared cache holds them. Each
// path is listed once.
func PurgePaths(key string, old, new *release.Release) []string {
	app, ch := release.AppOf(key)
	paths := []string{ReleaseInfoPath, ReleaseInfoPath + "/" + url.PathEscape(app), PagePath}
	if ch != release.Stable {
		return paths
	}
	for _, r := range []*release.Release{old, new} {
		if r == nil {
			continue
		}
		for _, p := range download.Platforms(r.Assets) {
			if l := download.Link(app, p); !slices.Contains(paths, l) {
				paths = append(paths, l)
			}
		}
	}
	return paths
}
