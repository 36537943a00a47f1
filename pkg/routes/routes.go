// Package routes is the URL layout of the API's public port: the paths its
// server answers, and which of their answers an app's release changes (what
// a CDN purges). The poller links it without the server.
package routes

import (
	"net/url"
	"slices"
	"strings"

	"github.com/storytold/craft-releases/pkg/download"
	"github.com/storytold/craft-releases/pkg/release"
	"github.com/storytold/craft-releases/pkg/updates/companion"
	"github.com/storytold/craft-releases/pkg/updates/electron"
	"github.com/storytold/craft-releases/pkg/updates/squirrel"
	"github.com/storytold/craft-releases/pkg/updates/tauri"
	"github.com/storytold/craft-releases/pkg/updates/velopack"
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
	// AppImagePath redirects an AppImage's update check to the release's
	// .AppImage.zsync for the arch its file names (AppImageFile).
	AppImagePath = "/v1/craft_apps/updates/:app/appimage/:file"
	// Squirrel.Mac's update of the path's arch for the version it runs;
	// Squirrel.Windows' RELEASES, and that of one arch; Velopack's feed
	// releases.{channel}.json.
	SquirrelMacPath         = "/v1/craft_apps/updates/:app/squirrel-mac/:arch/:version"
	SquirrelWindowsPath     = "/v1/craft_apps/updates/:app/squirrel-win/RELEASES"
	SquirrelWindowsArchPath = "/v1/craft_apps/updates/:app/squirrel-win/:arch/RELEASES"
	VelopackPath            = "/v1/craft_apps/updates/:app/velopack/:file"
	// electron-updater's channel files (latest.yml, latest-mac.yml…).
	ElectronPath = "/v1/craft_apps/updates/:app/electron/:file"
)

// appImageArches maps the arch AppImage writes in file names to the
// wire's, in this order.
var appImageArches = [...]struct{ appImage, wire string }{
	{"x86_64", release.ArchX64}, {"i686", release.ArchX86}, {"aarch64", release.ArchARM64},
}

// AppImageFile returns the last segment of AppImagePath for an arch of the
// wire ("x64" → "x86_64.zsync"); ok is false for an arch no AppImage has.
func AppImageFile(arch string) (file string, ok bool) {
	for _, a := range appImageArches {
		if a.wire == arch {
			return a.appImage + ".zsync", true
		}
	}
	return "", false
}

// AppImageArch returns the wire's arch of the last segment of AppImagePath
// ("x86_64.zsync" → "x64"); ok is false for any other segment.
func AppImageArch(file string) (arch string, ok bool) {
	for _, a := range appImageArches {
		if file == a.appImage+".zsync" {
			return a.wire, true
		}
	}
	return "", false
}

// PurgePaths returns the paths of the cacheable answers that change when
// the release of the entry key (an app's, its pre-release entry's or its
// history entry's: release.Entries) goes from old to new (either may be
// nil; the same release when only its signatures changed; for a history,
// the release before the latest and the latest, which a decision serves
// instead of each other): the full answer, the app's own answer, the
// release page, and, but for a pre-release, the explicit
// download link (download.Link, those of the page's buttons) of every
// platform either release has assets for, since a link of a platform the
// new release lacks now answers 404, with the AppImage update redirect of
// each of their .AppImage.zsync files, then the answers of its Tauri
// updater feed (tauriPaths) and of the others (updatesPaths). Inferred
// download links, and the download links and feed answers of a channel, are
// private, so no shared cache holds them.
// Each path is listed once.
func PurgePaths(key string, old, new *release.Release) []string {
	app, ch := release.AppOf(key)
	paths := []string{ReleaseInfoPath, ReleaseInfoPath + "/" + url.PathEscape(app), PagePath}
	if ch == release.Prerelease {
		return paths
	}
	for _, r := range []*release.Release{old, new} {
		if r == nil {
			continue
		}
		for _, p := range download.Platforms(r.Assets) {
			paths = appendNew(paths, download.Link(app, p))
			if p.OS == release.OSLinux && p.PackageType == release.PackageAppImageZsync && p.Arch != nil {
				if file, ok := AppImageFile(*p.Arch); ok {
					paths = appendNew(paths, strings.NewReplacer(":app", url.PathEscape(app), ":file", file).Replace(AppImagePath))
				}
			}
		}
	}
	paths = appendNew(paths, tauriPaths(app, old, new)...)
	return appendNew(paths, updatesPaths(app, old, new)...)
}

// updatesPaths returns the paths of the answers of app's other updater
// feeds (docs/updates.md) that a change from old to new may change: each
// companion file either release serves (companion.Files) at its path; and,
// for each arch either release has a Squirrel.Mac zip for, Squirrel.Mac's
// path with old's version, which the apps at old ask for.
func updatesPaths(app string, old, new *release.Release) []string {
	app = url.PathEscape(app)
	var paths []string
	for _, r := range []*release.Release{old, new} {
		for _, name := range companion.Files(r) {
			arch, releases := squirrel.ReleasesArch(name)
			_, feed := velopack.IsFeed(name)
			var p string
			switch {
			case releases && arch == "":
				p = SquirrelWindowsPath
			case releases:
				p = strings.Replace(SquirrelWindowsArchPath, ":arch", arch, 1)
			case feed:
				p = strings.Replace(VelopackPath, ":file", name, 1)
			case electron.IsChannelFile(name):
				p = strings.Replace(ElectronPath, ":file", name, 1)
			default:
				continue
			}
			paths = appendNew(paths, strings.Replace(p, ":app", app, 1))
		}
	}
	if old == nil {
		return paths
	}
	for _, arch := range []string{squirrel.ArchX64, squirrel.ArchARM64, squirrel.ArchUniversal} {
		_, errOld := squirrel.MacUpdate(app, old, arch)
		_, errNew := squirrel.MacUpdate(app, new, arch)
		if errOld == nil || errNew == nil {
			paths = appendNew(paths, strings.NewReplacer(":app", app, ":arch", arch, ":version", url.PathEscape(old.Version)).Replace(SquirrelMacPath))
		}
	}
	return paths
}

// placeholder is the bundle type an updater before plugin 2.10 sends: the
// template's "{{bundle_type}}" as its URL library percent-encodes it.
const placeholder = "%7B%7Bbundle_type%7D%7D"

// tauriPaths returns the paths of the answers of app's Tauri updater feed
// (docs/updates.md, "The answers") that a change from old to new may
// change; none when neither release has an updater bundle. They are the
// static latest.json and, for each request either release has a bundle for
// (tauri.Requests), its path and, when its bundle type is the one unknown
// reads as (tauri.DefaultBundleType), the three paths read as unknown:
// without a bundle type, "unknown" and the placeholder. Each path of a
// request also comes with the query current_version set to old's version
// when it is one (tauri.ParseVersion), written as the updater writes it:
// the apps at old hold a 204 there that the change may turn into an update.
func tauriPaths(app string, old, new *release.Release) []string {
	reqs := tauri.Requests(old)
	for _, r := range tauri.Requests(new) {
		if !slices.Contains(reqs, r) {
			reqs = append(reqs, r)
		}
	}
	if len(reqs) == 0 {
		return nil
	}
	query := ""
	if old != nil {
		if v, ok := tauri.ParseVersion(old.Version); ok {
			query = "?current_version=" + url.QueryEscape(v.String())
		}
	}
	app = url.PathEscape(app)
	paths := []string{strings.Replace(TauriManifestPath, ":app", app, 1)}
	for _, r := range reqs {
		fill := strings.NewReplacer(":app", app, ":target", r.Target, ":arch", r.Arch)
		with := func(bundleType string) string {
			return strings.Replace(fill.Replace(TauriPath), ":bundle_type", bundleType, 1)
		}
		ps := []string{with(r.BundleType)}
		if r.BundleType == tauri.DefaultBundleType(r.Target) {
			ps = append(ps, fill.Replace(TauriAnyPath), with(tauri.BundleUnknown), with(placeholder))
		}
		for _, p := range ps {
			paths = appendNew(paths, p)
			if query != "" {
				paths = appendNew(paths, p+query)
			}
		}
	}
	return paths
}

// appendNew appends to paths each of ps that it does not hold yet.
func appendNew(paths []string, ps ...string) []string {
	for _, p := range ps {
		if !slices.Contains(paths, p) {
			paths = append(paths, p)
		}
	}
	return paths
}
