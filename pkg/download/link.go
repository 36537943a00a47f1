package download

import (
	"net/url"

	"github.com/storytold/craft-releases/pkg/release"
)

// PathPrefix is the path of the download links without the app key:
// GET PathPrefix + key answers the redirect.
const PathPrefix = "/v1/craft_apps/download/"

// Link returns the explicit download link of app's asset of platform p, the
// one the release page offers: every parameter given, so that the answer is
// the same for every client and may be cached. The web build has no arch.
func Link(app string, p release.Platform) string {
	q := "?os=" + p.OS
	if p.Arch != nil {
		q += "&arch=" + *p.Arch
	}
	return PathPrefix + url.PathEscape(app) + q + "&package=" + p.PackageType
}

// ChannelLink is Link for channel ch of app: Link itself for Stable, with
// "&channel=prerelease" for Prerelease.
func ChannelLink(app string, ch release.Channel, p release.Platform) string {
	if ch == release.Stable {
		return Link(app, p)
	}
	return Link(app, p) + "&channel=" + string(ch)
}
