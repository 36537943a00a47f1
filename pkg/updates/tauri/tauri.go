// Package tauri is the Tauri updater feed (tauri-plugin-updater v2): which
// file of a release an installed app updates from, given its target, arch
// and bundle type; the answer of the dynamic endpoint (an update, a 204 or
// a 404 saying what is missing); the static latest.json; and the version
// order the updater applies. It is pure: the caller gives it the release
// and the signatures fetched and checked for it, and renders what it
// returns (docs/updates.md). Everything is safe for concurrent use.
package tauri

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/storytold/craft-releases/pkg/release"
	"github.com/storytold/craft-releases/pkg/updates/semver"
)

// Signatures are the updater signatures fetched and checked for one
// release: the text of each .sig asset (minisign.Signature.Text, one line
// of base64), by the asset's name ("ArtCraft_0.41.0_x64-setup.exe.sig").
// A bundle is offered only with its signature here, so only what the caller
// put here ever reaches an updater. The caller keeps them with the release
// they were fetched for: a bundle without its version in its name keeps its
// name from release to release.
type Signatures map[string]string

// SignatureName is the name of the asset that holds the signature of the
// bundle named name.
func SignatureName(name string) string { return name + ".sig" }

// Companions lists the names of the signature assets of rel that the feed
// may offer, in rel's asset order: the SignatureName of each updater bundle
// of rel (any target, arch and bundle type), where rel has an asset of that
// name. These are the files to fetch for rel; a nil rel has none.
func Companions(rel *release.Release) []string {
	if rel == nil {
		return nil
	}
	var names []string
	for _, a := range rel.Assets {
		if _, ok := parseBundle(a.Name); ok && hasAsset(rel, SignatureName(a.Name)) {
			names = append(names, SignatureName(a.Name))
		}
	}
	return names
}

func hasAsset(rel *release.Release, name string) bool {
	_, ok := rel.Asset(name)
	return ok
}

// Request is what an updater sends: its {{target}}, {{arch}} and
// {{bundle_type}} (BundleType reads the last).
type Request struct{ Target, Arch, BundleType string }

// AllRequests returns every request that may have an update: each target
// with each arch and each of its bundle types, and BundleUnknown. Any other
// request is answered by Offer's error whatever the release.
func AllRequests() []Request {
	var reqs []Request
	for _, target := range targets {
		for _, arch := range arches {
			for _, bundleType := range append(slices.Clone(bundlesOf[target]), BundleUnknown) {
				reqs = append(reqs, Request{target, arch, bundleType})
			}
		}
	}
	return reqs
}

// Update is the dynamic endpoint's 200: the fields the updater reads, in
// this order.
type Update struct {
	Version   string        `json:"version"`            // the release's version without leading "v"s, a SemVer
	Notes     string        `json:"notes"`              // the release notes, Markdown
	PubDate   *release.Time `json:"pub_date,omitempty"` // published_at, RFC 3339; left out when unknown
	URL       string        `json:"url"`                // the bundle's download URL on GitHub
	Signature string        `json:"signature"`          // its .sig, as Signatures holds it
	// Critical marks an update the app must take: its version is below the
	// app's minimum (docs/updates.md, "Release control"). The plugin passes
	// it to the app in the update's raw JSON.
	Critical bool `json:"critical,omitempty"`

	version semver.Version
}

// Newer reports whether u is an update for an app at version current (the
// request's current_version): NewerThan of u's version. When it is false,
// the endpoint answers 204.
func (u Update) Newer(current string) bool { return NewerThan(u.version, current) }

// NewerThan reports whether v is an update for an app at version current:
// current is not a version (ParseVersion), or it is lower than v in the
// updater's order, the Rust semver crate's (semver.Version.Compare).
func NewerThan(v semver.Version, current string) bool {
	c, ok := ParseVersion(current)
	return !ok || c.Compare(v) < 0
}

// Offer returns the update the release rel of app offers an updater that
// sends req, or an error whose text says what is missing, for the 404: no
// release ("photocraft has no release on GitHub"), an unknown target or
// arch, a version that is not SemVer (naming the tag), or no bundle for req
// with its signature ("photocraft v0.5.0 has no signed updater bundle for
// linux x86_64 deb"). Every error is a 404.
//
// The bundle is the first of rel's assets that parseBundle reads as one for
// req's target, arch and bundle type and whose SignatureName is an asset of
// rel and is in sigs. Bundle type unknown (anything BundleType does not
// know) takes the target's first: NSIS on Windows, AppImage on Linux, the
// .app.tar.gz on macOS. On macOS a bundle of the asked arch comes before a
// universal one (docs/updates.md, "Which bundle an updater gets").
func Offer(app string, rel *release.Release, sigs Signatures, req Request) (Update, error) {
	v, err := checkRelease(app, rel)
	if err != nil {
		return Update{}, err
	}
	switch {
	case !slices.Contains(targets[:], req.Target):
		return Update{}, errors.New("unknown target: want darwin, linux or windows")
	case !slices.Contains(arches[:], req.Arch):
		return Update{}, errors.New("unknown arch: want x86_64, i686, aarch64, armv7 or riscv64")
	}
	bundleType := BundleType(req.BundleType)
	if u, ok := offer(rel, v, sigs, req.Target, req.Arch, bundleType); ok {
		return u, nil
	}
	return Update{}, fmt.Errorf("%s %s has no signed updater bundle for %s %s %s", app, rel.Tag, req.Target, req.Arch, bundleType)
}

// checkRelease returns rel's version, or the error of Offer that a missing
// release or a version that is not SemVer gets.
func checkRelease(app string, rel *release.Release) (semver.Version, error) {
	if rel == nil {
		return semver.Version{}, fmt.Errorf("%s has no release on GitHub", app)
	}
	v, ok := ParseVersion(rel.Version)
	if !ok {
		return semver.Version{}, fmt.Errorf("%s %s has no SemVer version", app, rel.Tag)
	}
	return v, nil
}

// offer is Offer for a known target and arch, and a bundle type of
// BundleType.
func offer(rel *release.Release, v semver.Version, sigs Signatures, target, arch, bundleType string) (Update, bool) {
	if bundleType == BundleUnknown {
		bundleType = DefaultBundleType(target)
	}
	var chosen *release.Asset
	for i := range rel.Assets {
		a := &rel.Assets[i]
		b, ok := parseBundle(a.Name)
		if !ok || !b.serves(target, arch, bundleType) || !signed(rel, sigs, a.Name) {
			continue
		}
		if b.arch == arch {
			chosen = a
			break
		}
		if chosen == nil {
			chosen = a // universal, unless the arch's own comes later
		}
	}
	if chosen == nil {
		return Update{}, false
	}
	return Update{
		Version:   versionText(rel.Version),
		Notes:     rel.NotesMarkdown,
		PubDate:   rel.PublishedAt,
		URL:       chosen.DownloadURL,
		Signature: sigs[SignatureName(chosen.Name)],
		version:   v,
	}, true
}

// Awaiting reports whether rel has a bundle for req (a known target and
// arch) whose signature rel publishes but sigs lacks: not fetched yet, or
// refused. Offer then has nothing for req until the signature is there;
// the endpoint may serve what the previous release offered meanwhile
// (docs/updates.md, "The answers").
func Awaiting(rel *release.Release, sigs Signatures, req Request) bool {
	if rel == nil {
		return false
	}
	bundleType := BundleType(req.BundleType)
	if bundleType == BundleUnknown {
		bundleType = DefaultBundleType(req.Target)
	}
	for _, a := range rel.Assets {
		b, ok := parseBundle(a.Name)
		if !ok || !b.serves(req.Target, req.Arch, bundleType) || !hasAsset(rel, SignatureName(a.Name)) {
			continue
		}
		if _, ok := sigs[SignatureName(a.Name)]; !ok {
			return true
		}
	}
	return false
}

// signed reports whether the bundle named name has its signature in sigs,
// from an asset of rel.
func signed(rel *release.Release, sigs Signatures, name string) bool {
	sig := SignatureName(name)
	_, ok := sigs[sig]
	return ok && hasAsset(rel, sig)
}

// versionText is a version that ParseVersion accepts, as served: without
// its leading "v"s.
func versionText(s string) string { return strings.TrimLeft(s, "v") }

// Manifest is the static latest.json: the fields the updater reads, in
// this order.
type Manifest struct {
	Version   string              `json:"version"`
	Notes     string              `json:"notes"`
	PubDate   *release.Time       `json:"pub_date,omitempty"`
	Platforms map[string]Platform `json:"platforms"` // encoding/json sorts the keys
}

// Platform is one entry of Manifest.Platforms.
type Platform struct {
	URL       string `json:"url"`
	Signature string `json:"signature"`
}

// Static returns the static latest.json of the release rel of app: under
// "{target}-{arch}" what Offer gives bundle type unknown, and under
// "{target}-{arch}-{bundle_type}" what it gives each of the target's bundle
// types (the keys the updater looks up, the second first), for every
// target and arch; a universal macOS build so fills both Mac arches. The
// error, for the 404, is Offer's for a missing release or a version that is
// not SemVer, or that rel has no signed updater bundle at all.
func Static(app string, rel *release.Release, sigs Signatures) (Manifest, error) {
	v, err := checkRelease(app, rel)
	if err != nil {
		return Manifest{}, err
	}
	m := Manifest{Version: versionText(rel.Version), Notes: rel.NotesMarkdown, PubDate: rel.PublishedAt, Platforms: map[string]Platform{}}
	for _, target := range targets {
		for _, arch := range arches {
			key := target + "-" + arch
			if u, ok := offer(rel, v, sigs, target, arch, BundleUnknown); ok {
				m.Platforms[key] = Platform{u.URL, u.Signature}
			}
			for _, bundleType := range bundlesOf[target] {
				if u, ok := offer(rel, v, sigs, target, arch, bundleType); ok {
					m.Platforms[key+"-"+bundleType] = Platform{u.URL, u.Signature}
				}
			}
		}
	}
	if len(m.Platforms) == 0 {
		return Manifest{}, fmt.Errorf("%s %s has no signed updater bundle", app, rel.Tag)
	}
	return m, nil
}
