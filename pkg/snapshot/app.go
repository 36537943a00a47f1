package snapshot

import (
	"hash/crc32"
	"slices"
	"time"

	"github.com/storytold/craft-releases/pkg/release"
	"github.com/storytold/craft-releases/pkg/updates/semver"
	"github.com/storytold/craft-releases/pkg/updates/tauri"
)

// App is one app's part of a rendering.
type App struct {
	// Doc is {"success":true,"app":AppInfo}, where AppInfo is byte for byte
	// the app's object in the full answer; CacheControlUnfetched until the app was fetched.
	Doc

	Fetched   bool
	FetchedAt time.Time // app_last_fetched; zero: never

	Track // its latest release
	// Prerelease is its latest_prerelease; no Release without the channel,
	// or when there is none.
	Prerelease Track

	// Tauri is the Tauri updater feed of its latest release, and
	// PrereleaseTauri that of Prerelease (nil when it has no Release).
	Tauri, PrereleaseTauri *Feed
	// Updates are the other updaters' answers for its latest release, and
	// PrereleaseUpdates for Prerelease (nil when it has no Release).
	Updates, PrereleaseUpdates *Updates

	// Rollout is the release being rolled out, nil when none is.
	Rollout *Rollout
	// Minimum is the lowest version an install may run ("" for none), and
	// Critical the Tauri feed an updater below it is offered: the staged
	// release (unless the rollout is halted), else the latest, marked
	// critical.
	Minimum  string
	Critical *Feed
	minimum  semver.Version
	// Withdrawn reports that the app's latest release on GitHub is
	// withdrawn: what it serves is the newest release that is not.
	Withdrawn bool
	// Unfound lists the tags its decisions name that it cannot find among
	// its releases (release.Plan): such a decision is not applied.
	Unfound []string
}

// Rollout is a staged release's answers, offered to the installs in its
// bucket (release.Bucket) below Percent.
type Rollout struct {
	Tag     string
	Percent int
	Track   // the staged release, with its downloads
	Tauri   *Feed
	Updates *Updates // with the share written into RELEASES and channel files
	// Unstaged are Updates without the share: what a client below the
	// minimum version is served.
	Unstaged *Updates
}

// Below reports whether current, the version an updater runs, is below
// the app's minimum version; false without one, or when current is no
// version.
func (a *App) Below(current string) bool {
	if a.Minimum == "" {
		return false
	}
	c, ok := tauri.ParseVersion(current)
	return ok && c.Compare(a.minimum) < 0
}

// renderRollout returns the answers of plan's staged release, with its
// companions, built on old (nil for none); nil when nothing is staged. Its
// Updates' RELEASES and channel files carry the rollout's share
// (stageFiles).
func renderRollout(app string, old *Rollout, plan release.Plan, companions *release.Companions) *Rollout {
	if plan.Staged == nil {
		return nil
	}
	if old == nil {
		old = &Rollout{}
	}
	r := &Rollout{
		Tag:      plan.Staged.Tag,
		Percent:  plan.Percent,
		Track:    track(plan.Staged, old.Track),
		Tauri:    renderFeed(app, old.Tauri, plan.Staged, companions, false),
		Unstaged: renderUpdates(app, old.Unstaged, plan.Staged, companions),
	}
	if r.Unstaged == old.Unstaged && r.Percent == old.Percent {
		r.Updates = old.Updates
	} else {
		r.Updates = stageFiles(r.Unstaged, old.Updates, r.Percent)
	}
	return r
}

// Track is a release an app offers, with its downloads.
type Track struct {
	Release *release.Release // nil: never fetched, or no release
	// Downloads are the release's assets that a download link may redirect
	// to, in the release's order: those with a platform. Every release the
	// snapshot is given passed release.Verify at its door (the GitHub
	// parser, the Redis decoder), so each URL is exactly the asset's own.
	Downloads []release.Asset
	// Locations[i] is Downloads[i]'s URL as a Location header value.
	Locations [][]string
}

// track returns rel's Track, old's downloads when it is the same release.
func track(rel *release.Release, old Track) Track {
	if old.Release == rel {
		return old
	}
	t := Track{Release: rel}
	t.Downloads, t.Locations = downloadsOf(rel)
	return t
}

// The start of every app's own answer, shared by all: appHead, and the gzip
// header followed by appHead as a stored block.
var (
	appHeadBytes = []byte(appHead)
	appGzipHead  = appendStored(slices.Clone(gzipHeader[:]), appHeadBytes)
)

// newApp returns p's part of a rendering, fetched at fetchedAt, reusing the
// downloads of the one it replaces when the release is the same. Its Doc is
// filled in by appDoc once the chunks hold p's pieces.
func (p *part) newApp(fetchedAt time.Time, minimum string) *App {
	var old App
	if p.app != nil {
		old = *p.app
	}
	return &App{
		Fetched:           p.fetched,
		FetchedAt:         fetchedAt,
		Track:             track(p.rel, old.Track),
		Prerelease:        track(p.pre, old.Prerelease),
		Tauri:             p.tauri,
		PrereleaseTauri:   p.tauriPre,
		Updates:           p.updates,
		PrereleaseUpdates: p.updatesPre,
		Rollout:           p.rollout,
		Minimum:           minimum,
		Critical:          p.critical,
		minimum:           minimumVersion(minimum),
	}
}

// appDoc returns p's own answer, {"success":true,"app":AppInfo}. Its bytes
// are the object's, in the chunk of the full answer that holds them, until
// it is first served (joined); its gzip copy takes the object's deflate
// blocks as they are, so nothing is compressed again.
func (p *part) appDoc() Doc {
	p.rest = append(slices.Clip(p.tail.plain), '}')
	body := join(appHeadBytes, p.obj.plain, p.rest)
	crc := crc32.Update(crc32.Update(crc32.ChecksumIEEE(appHeadBytes), crc32.IEEETable, p.obj.plain), crc32.IEEETable, p.rest)
	gz := join(appGzipHead, p.obj.flat,
		appendGzipTrailer(appendStored(make([]byte, 0, len(p.rest)+5+gzipTrailerLen), p.rest), crc, body.len()))
	cc := CacheControlUnfetched
	if p.fetched {
		cc = CacheControlFetched
	}
	return newDoc(body, gz, tag([][32]byte{body.sum()}), tag([][32]byte{gz.sum()}), cc)
}

// rechunked returns p's part of the rendering as it is, but for its own
// answer's bytes, which point into the chunk that holds p's pieces now:
// they are the same, and so are its validators and its gzip copy (which
// the chunks do not hold).
func (p *part) rechunked() *App {
	app := *p.app
	app.body = join(appHeadBytes, p.obj.plain, p.rest)
	return &app
}

// minimumVersion parses a minimum version as the updaters' versions are
// read; the zero version for none.
func minimumVersion(s string) semver.Version {
	v, _ := tauri.ParseVersion(s)
	return v
}

// downloadsOf returns rel's assets that have a platform, and their URLs as
// Location header values.
func downloadsOf(rel *release.Release) ([]release.Asset, [][]string) {
	if rel == nil {
		return nil, nil
	}
	var downloads []release.Asset
	var locations [][]string
	for _, as := range rel.Assets {
		if as.Platform != nil {
			downloads = append(downloads, as)
			locations = append(locations, []string{as.DownloadURL})
		}
	}
	return downloads, locations
}
