package snapshot

import (
	"github.com/storytold/craft-releases/pkg/release"
	"github.com/storytold/craft-releases/pkg/updates/companion"
	"github.com/storytold/craft-releases/pkg/updates/electron"
	"github.com/storytold/craft-releases/pkg/updates/squirrel"
)

// Updates is one release's answers to the updaters but Tauri's
// (docs/updates.md): Squirrel.Mac's update for each arch, and each
// companion file a feed serves (companion.Serve) with its URLs made
// absolute. It is rendered when the release or its companions change, and
// an answer whose bytes did not change keeps its Doc. Nothing in it may be
// modified, since every reader shares it.
type Updates struct {
	app        string
	rel        *release.Release
	companions *release.Companions
	files      map[string]*File     // by companion name
	releases   map[string]*File     // the RELEASES files, by the arch in their name ("" for none), the first of each
	mac        map[string]*MacOffer // by squirrel arch
}

// File is a companion file as a feed serves it, or, with Err, the 404
// saying why there is none.
type File struct {
	Doc        // the file; CacheControlUnfetched while it is an older release's, kept until the new one is fetched
	Err string // the 404's error; "" for a file

	ContentType []string
	published   *release.Time // the release's it is
}

// MacOffer is Squirrel.Mac's answer for one arch: an update (Doc, 200, or
// 204 to an app that is not older) or, with Err, the 404.
type MacOffer struct {
	Doc
	Err string

	update squirrel.Update
}

// Newer reports whether o's update is newer than current, the version the
// app runs (squirrel.Update.Newer); an error means current is no version.
func (o *MacOffer) Newer(current string) (bool, error) { return o.update.Newer(current) }

// macArches are the arches Squirrel.Mac's path may name.
var macArches = [...]string{squirrel.ArchX64, squirrel.ArchARM64, squirrel.ArchUniversal}

// File returns the companion file name of the release as served, or a 404
// saying why there is none: the release does not carry it, or it was not
// fetched (or was refused).
func (u *Updates) File(name string) *File {
	if f, ok := u.files[name]; ok {
		return f
	}
	if u.rel == nil {
		return &File{Err: u.app + " has no release on GitHub"}
	}
	return &File{Err: u.app + " " + u.rel.Tag + " has no " + name}
}

// Releases returns Squirrel.Windows' RELEASES for arch: "" for the file
// named RELEASES, else x64, ia32 or arm64, the arch squirrel.ReleasesArch
// reads in the file's name; any other arch is a 404 that does not repeat it.
func (u *Updates) Releases(arch string) *File {
	if f, ok := u.releases[arch]; ok {
		return f
	}
	switch arch {
	case "":
		return u.File("RELEASES")
	case squirrel.ArchX64, squirrel.ArchIA32, squirrel.ArchARM64:
		return u.File("RELEASES for " + arch)
	}
	return &File{Err: "unknown arch: want x64, ia32 or arm64"}
}

// Mac returns Squirrel.Mac's answer for arch.
func (u *Updates) Mac(arch string) *MacOffer {
	if o, ok := u.mac[arch]; ok {
		return o
	}
	_, err := squirrel.MacUpdate(u.app, u.rel, arch)
	return &MacOffer{Err: err.Error()}
}

// renderUpdates returns the Updates of app's release rel with its
// companions, built on old (nil for none): old itself when neither
// changed. A companion file rel carries but whose text is not here yet
// keeps old's file of that name, served no-store, when old's was an older
// release's, as the Tauri feed does (renderFeed).
func renderUpdates(app string, old *Updates, rel *release.Release, companions *release.Companions) *Updates {
	if old != nil && sameRelease(old.rel, rel) && old.companions.Equal(companions) {
		return old
	}
	if old == nil {
		old = &Updates{}
	}
	u := &Updates{app: app, rel: rel, companions: companions, files: map[string]*File{}, releases: map[string]*File{},
		mac: map[string]*MacOffer{}}
	for _, name := range companion.Files(rel) {
		f := serveFile(app, rel, name, companions, old.files[name])
		u.files[name] = f
		if arch, ok := squirrel.ReleasesArch(name); ok && u.releases[arch] == nil {
			u.releases[arch] = f
		}
	}
	for _, arch := range macArches {
		up, err := squirrel.MacUpdate(app, rel, arch)
		if err != nil {
			u.mac[arch] = &MacOffer{Err: err.Error()}
			continue
		}
		body := mustMarshal(up)
		if prev := old.mac[arch]; prev != nil && prev.Err == "" && string(prev.Body()) == string(body) {
			u.mac[arch] = prev
			continue
		}
		u.mac[arch] = &MacOffer{Doc: NewDoc(body, CacheControlFetched), update: up}
	}
	return u
}

// serveFile returns the file name of rel as served, from its text in
// companions, prev's when it is the same bytes; or, while the text is not
// there, prev (carried, uncached) when prev was an older release's, else
// the 404.
func serveFile(app string, rel *release.Release, name string, companions *release.Companions, prev *File) *File {
	text, have := companions.Get(name)
	if !have {
		if prev != nil && prev.Err == "" && before(prev.published, rel.PublishedAt) {
			return carryFile(prev)
		}
		return &File{Err: app + " " + rel.Tag + ": " + name + " was not fetched yet, or was refused"}
	}
	f, _, err := companion.Serve(rel, name, text)
	switch {
	case err != nil:
		return &File{Err: app + " " + rel.Tag + ": " + name + ": " + err.Error()}
	case prev != nil && prev.Err == "" && prev.CacheControl == CacheControlFetched && string(prev.Body()) == string(f.Body):
		return prev
	}
	return &File{Doc: NewDoc(f.Body, CacheControlFetched), ContentType: []string{f.ContentType}, published: rel.PublishedAt}
}

// before reports whether a release published at a was published before one
// published at b; unknown times are not.
func before(a, b *release.Time) bool {
	return a != nil && b != nil && a.Before(b.Time)
}

// carryFile returns prev, an older release's file kept while the new
// release's is fetched, served no-store (see carry).
func carryFile(prev *File) *File {
	if prev.CacheControl == CacheControlUnfetched {
		return prev
	}
	return &File{Doc: NewDoc(prev.Body(), CacheControlUnfetched), ContentType: prev.ContentType, published: prev.published}
}

// stageFiles returns u with its Squirrel.Windows RELEASES files and
// electron-updater channel files staged at percent (squirrel.Stage,
// electron.Stage), for the updaters that stage a rollout themselves; old
// is the staged Updates it replaces (nil for none), whose files it keeps
// when their bytes are the same. A file that cannot be staged is a 404
// saying why: never the release's unstaged file, which would offer it to
// every install.
func stageFiles(u, old *Updates, percent int) *Updates {
	staged := *u
	staged.files, staged.releases = make(map[string]*File, len(u.files)), map[string]*File{}
	// In the release's order, as renderUpdates: the first RELEASES of an
	// arch is the one served.
	for _, name := range companion.Files(u.rel) {
		f, ok := u.files[name]
		if !ok {
			continue
		}
		var stage func([]byte) ([]byte, error)
		switch {
		case f.Err != "":
		case squirrel.IsReleases(name):
			stage = func(b []byte) ([]byte, error) { return squirrel.Stage(b, u.rel.Version, percent) }
		case electron.IsChannelFile(name):
			stage = func(b []byte) ([]byte, error) { return electron.Stage(b, percent) }
		}
		if stage != nil {
			f = stageFile(u.app, u.rel, name, f, stage, old)
		}
		staged.files[name] = f
		if arch, ok := squirrel.ReleasesArch(name); ok && staged.releases[arch] == nil {
			staged.releases[arch] = f
		}
	}
	return &staged
}

// stageFile returns f, the file name of rel, staged by stage: old's file
// of that name when it has the same bytes and cache rule.
func stageFile(app string, rel *release.Release, name string, f *File, stage func([]byte) ([]byte, error), old *Updates) *File {
	body, err := stage(f.Body())
	if err != nil {
		return &File{Err: app + " " + rel.Tag + ": " + name + ": staging the rollout: " + err.Error()}
	}
	if old != nil {
		if prev := old.files[name]; prev != nil && prev.Err == "" && prev.CacheControl == f.CacheControl && string(prev.Body()) == string(body) {
			return prev
		}
	}
	return &File{Doc: NewDoc(body, f.CacheControl), ContentType: f.ContentType, published: f.published}
}
