package tauri

import (
	"slices"

	"github.com/storytold/craft-releases/pkg/release"
)

// Requests lists the requests that rel has an updater bundle for, whether
// signed or not: each target, arch and concrete bundle type (never
// BundleUnknown) that a bundle of rel serves, a universal macOS build both
// Mac arches. They are the requests whose answer may change with rel's
// bundles or signatures, the ones a cache must forget (docs/updates.md,
// "Which bundle an updater gets"). Each is listed once, by target, arch and
// bundle type in a fixed order; a nil rel, or one without bundles, has
// none.
func Requests(rel *release.Release) []Request {
	if rel == nil {
		return nil
	}
	var bundles []bundle
	for _, a := range rel.Assets {
		if b, ok := parseBundle(a.Name); ok {
			bundles = append(bundles, b)
		}
	}
	var reqs []Request
	for _, target := range targets {
		for _, arch := range arches {
			for _, bundleType := range bundlesOf[target] {
				if slices.ContainsFunc(bundles, func(b bundle) bool { return b.serves(target, arch, bundleType) }) {
					reqs = append(reqs, Request{target, arch, bundleType})
				}
			}
		}
	}
	return reqs
}

// DefaultBundleType returns the bundle type that BundleUnknown reads as on
// target: BundleNSIS on Windows, BundleAppImage on Linux, BundleApp on
// macOS; "" for a target the updater never sends.
func DefaultBundleType(target string) string {
	if types := bundlesOf[target]; len(types) > 0 {
		return types[0]
	}
	return ""
}
