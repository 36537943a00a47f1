package api

import (
	"net/url"
	"slices"

	"github.com/storytold/craft-releases/pkg/download"
	"github.com/storytold/craft-releases/pkg/release"
)

// PurgePaths returns the paths of the cacheable answers that change when
// app's release goes from old to new (either may be nil): the full answer,
// the app's own answer, the release page, and the explicit download link
// (download.Link, those of the page's buttons) of every platform either
// release has assets for, since a link of a platform the new release lacks
// now answers 404. Inferred download links are private, so no shared cache
// holds them. Each path is listed once.
func PurgePaths(app string, old, new *release.Release) []string {
	paths := []string{ReleaseInfoPath, ReleaseInfoPath + "/" + url.PathEscape(app), PagePath}
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
