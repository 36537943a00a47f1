package e2e

import (
	"crypto/rand"
	"crypto/sha1"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/storytold/craft-releases/pkg/release"
	"github.com/storytold/craft-releases/test/fakegithub"
	"github.com/storytold/craft-releases/test/testkit"
)

// filmcraft is the app of the updater feeds' tests with every companion
// file; photocraft has a pre-release channel.
const filmcraft = "storytold/filmcraft"

// The companion files an Electron app built with electron-builder (Squirrel
// and NSIS on Windows, zips on macOS) and packaged with vpk carries, as
// their tools name them.
const (
	releasesFile      = "RELEASES"
	releasesARM64File = "RELEASES-arm64"
	latestYML         = "latest.yml"
	latestMacYML      = "latest-mac.yml"
	velopackWin       = "releases.win.json"
)

// updaterRelease is a release of an Electron and Velopack app: the packages
// its updaters download, of random bytes, and the companion files that name
// them, each as its tool writes it, sizes and hashes those of the bytes.
type updaterRelease struct {
	repo, tag, version, product string
	published                   time.Time
	firstID                     int64

	names      []string          // every asset, in the release's order
	data       map[string][]byte // each asset's bytes
	companions []string          // the companion files among names
}

// The packages of an updaterRelease, by what they are.
func (u *updaterRelease) setup() string     { return u.product + "-Setup-" + u.version + ".exe" }
func (u *updaterRelease) macZip() string    { return u.product + "-" + u.version + "-mac.zip" }
func (u *updaterRelease) macZipARM() string { return u.product + "-" + u.version + "-arm64-mac.zip" }
func (u *updaterRelease) appImage() string {
	return u.product + "-" + u.version + "-linux-x86_64.AppImage"
}
func (u *updaterRelease) zsync() string       { return u.appImage() + ".zsync" }
func (u *updaterRelease) full() string        { return u.product + "-" + u.version + "-full.nupkg" }
func (u *updaterRelease) delta() string       { return u.product + "-" + u.version + "-delta.nupkg" }
func (u *updaterRelease) fullARM() string     { return u.product + "-" + u.version + "-arm64-full.nupkg" }
func (u *updaterRelease) url(n string) string { return release.DownloadURL(u.repo, u.tag, n) }

// newUpdaterRelease returns repo's release tagged tag of product, published
// hours after the fake's default, its asset ids from firstID, carrying every
// companion file: RELEASES (a full package and a delta staged at 50%),
// RELEASES-arm64, latest.yml (NSIS), latest-mac.yml (a zip per arch),
// releases.win.json (Velopack, full and delta), and the packages they name,
// with an AppImage and its .zsync.
func newUpdaterRelease(repo, product, tag string, hours int, firstID int64) *updaterRelease {
	u := &updaterRelease{repo: repo, tag: tag, version: strings.TrimPrefix(tag, "v"), product: product, firstID: firstID, data: map[string][]byte{}}
	u.published = fakegithub.NewRelease(repo, tag).PublishedAt.Add(time.Duration(hours) * time.Hour)
	for i, name := range []string{u.setup(), u.macZip(), u.macZipARM(), u.appImage(), u.zsync(), u.full(), u.delta(), u.fullARM()} {
		b := make([]byte, 1024+512*i)
		_, _ = rand.Read(b)
		u.names, u.data[name] = append(u.names, name), b
	}
	sha1Of := func(name string) string {
		s := sha1.Sum(u.data[name])
		return strings.ToUpper(hex.EncodeToString(s[:]))
	}
	size := func(name string) int { return len(u.data[name]) }
	u.set(releasesFile, fmt.Sprintf("%s %s %d\n%s %s %d # 50%%\n", sha1Of(u.full()), u.full(), size(u.full()), sha1Of(u.delta()), u.delta(), size(u.delta())))
	u.set(releasesARM64File, fmt.Sprintf("%s %s %d\n", sha1Of(u.fullARM()), u.fullARM(), size(u.fullARM())))
	yml := func(files ...string) string { // path and sha512 name the first file
		text := "version: " + u.version + "\nfiles:\n"
		for _, f := range files {
			text += fmt.Sprintf("  - url: %s\n    sha512: %s\n    size: %d\n", f, u.sha512(f), size(f))
		}
		return text + fmt.Sprintf("path: %s\nsha512: %s\nreleaseDate: '%s'\n", files[0], u.sha512(files[0]), u.published.Format("2006-01-02T15:04:05.000Z"))
	}
	u.set(latestYML, yml(u.setup()))
	u.set(latestMacYML, yml(u.macZip(), u.macZipARM()))
	var entries []string
	for _, p := range []struct{ name, kind string }{{u.full(), "Full"}, {u.delta(), "Delta"}} {
		sum := sha256.Sum256(u.data[p.name])
		entries = append(entries, fmt.Sprintf(`    {
      "PackageId": %q,
      "Version": %q,
      "Type": %q,
      "FileName": %q,
      "SHA1": %q,
      "SHA256": %q,
      "Size": %d,
      "NotesMarkdown": "## What's changed\n\n* Faster start-up",
      "NotesHTML": "\u003Ch2\u003EWhat's changed\u003C/h2\u003E"
    }`, product, u.version, p.kind, p.name, sha1Of(p.name), strings.ToUpper(hex.EncodeToString(sum[:])), size(p.name)))
	}
	u.set(velopackWin, "{\n  \"Assets\": [\n"+strings.Join(entries, ",\n")+"\n  ]\n}")
	return u
}

// sha512 is the sha512 electron-builder writes for the asset name.
func (u *updaterRelease) sha512(name string) string {
	s := sha512.Sum512(u.data[name])
	return base64.StdEncoding.EncodeToString(s[:])
}

// set makes text the companion file name, added at the end of the release
// unless it carries one of that name.
func (u *updaterRelease) set(name, text string) {
	if !slices.Contains(u.names, name) {
		u.names, u.companions = append(u.names, name), append(u.companions, name)
	}
	u.data[name] = []byte(text)
}

// id is the asset id of name once published.
func (u *updaterRelease) id(name string) int64 { return u.firstID + int64(slices.Index(u.names, name)) }

// release is u as the fake publishes it: each asset with its size and
// digest, marked prerelease when its version is one; only the companion
// files' bytes are served, so that a request for a package's bytes answers
// 404.
func (u *updaterRelease) release() fakegithub.Release {
	r := fakegithub.NewRelease(u.repo, u.tag)
	r.Name, r.PublishedAt, r.Assets = u.product+" "+u.version, &u.published, nil
	r.Prerelease = strings.Contains(u.version, "-")
	for _, name := range u.names {
		var content []byte
		if slices.Contains(u.companions, name) {
			content = u.data[name]
		}
		r.Assets = append(r.Assets, tauriAsset(u.repo, u.tag, u.id(name), name, u.data[name], content))
	}
	return r
}

// served is the companion file name as its feed must serve it: every
// package it names as its GitHub download URL, every other byte the
// publisher's (Squirrel.Windows' lines end in LF).
func (u *updaterRelease) served(name string) string {
	text := string(u.data[name])
	for _, p := range u.names {
		if !slices.Contains(u.companions, p) {
			text = strings.NewReplacer(": "+p+"\n", ": "+u.url(p)+"\n", `"FileName": "`+p+`"`, `"FileName": "`+u.url(p)+`"`,
				" "+p+" ", " "+u.url(p)+" ").Replace(text)
		}
	}
	return text
}

// updaterFeeds are the feeds that serve a companion file, by the file: each
// path after the app's updates/, with the query its client adds.
var updaterFeeds = []struct{ file, path, contentType string }{
	{releasesFile, "squirrel-win/RELEASES?id=FilmCraft&localVersion=1.1.0&arch=x64", "text/plain; charset=utf-8"},
	{releasesARM64File, "squirrel-win/arm64/RELEASES?id=FilmCraft&localVersion=1.1.0&arch=arm64", "text/plain; charset=utf-8"},
	{latestYML, "electron/latest.yml?noCache=1ab2c3", "text/yaml; charset=utf-8"},
	{latestMacYML, "electron/latest-mac.yml?noCache=9f8e7d", "text/yaml; charset=utf-8"},
	{velopackWin, "velopack/releases.win.json?localVersion=1.1.0&id=FilmCraft&stagingId=5d2c", "application/json"},
}

// withChannel adds channel (none when "") to path's query.
func withChannel(path, channel string) string {
	if channel == "" {
		return path
	} else if strings.Contains(path, "?") {
		return path + "&channel=" + channel
	}
	return path + "?channel=" + channel
}

// servesFiles reports whether p answers a 200 of u on app's feed of each
// companion file, asked on channel: one that names u's version
// (checkUpdaterFeeds checks the rest).
func servesFiles(t testing.TB, p *proc, app, channel string, u *updaterRelease) bool {
	t.Helper()
	for _, f := range updaterFeeds {
		if a := feed(t, p, app+"/"+withChannel(f.path, channel)); a.status != http.StatusOK || !strings.Contains(string(a.body), u.version) {
			return false
		}
	}
	return true
}

// checkUpdaterFeeds checks every feed of app on p, asked on channel, against
// u: each companion file served with its packages' GitHub URLs and every
// hash as published, Squirrel.Mac's answers, the AppImage redirect, each
// with cacheControl; and what u lacks answering the 404 naming it.
func checkUpdaterFeeds(t testing.TB, p *proc, app, channel string, u *updaterRelease, cacheControl string) {
	t.Helper()
	for _, f := range updaterFeeds {
		path := app + "/" + withChannel(f.path, channel)
		a := feed(t, p, path)
		if a.status != http.StatusOK || string(a.body) != u.served(f.file) {
			t.Errorf("%s: %d\n%s\nwant 200 with %s as published, its packages' GitHub URLs:\n%s", path, a.status, a.body, f.file, u.served(f.file))
			continue
		}
		if got := [...]string{a.header.Get("Content-Type"), a.header.Get("Cache-Control"), a.header.Get("Vary")}; got != [...]string{f.contentType, cacheControl, "Accept-Encoding"} {
			t.Errorf("%s: Content-Type, Cache-Control, Vary %q, want %q, %q, Accept-Encoding", path, got, f.contentType, cacheControl)
		}
	}

	rel := u.release()
	for _, c := range []struct{ arch, zip string }{{"x64", u.macZip()}, {"arm64", u.macZipARM()}} {
		path := app + "/" + withChannel("squirrel-mac/"+c.arch+"/0.9.0", channel)
		a := feed(t, p, path)
		var got struct{ URL, Name, Notes string }
		var raw map[string]any
		if a.status != http.StatusOK || json.Unmarshal(a.body, &raw) != nil || json.Unmarshal(a.body, &got) != nil {
			t.Errorf("%s: %d %s, want 200 with an update", path, a.status, a.body)
			continue
		}
		pubDate, _ := raw["pub_date"].(string)
		if got.URL != u.url(c.zip) || got.Name != rel.Name || !strings.Contains(got.Notes, "Faster start-up") || pubDate != u.published.Format(time.RFC3339) || len(raw) != 4 {
			t.Errorf("%s: %s, want url %s, name %q, the notes and pub_date %s", path, a.body, u.url(c.zip), rel.Name, u.published.Format(time.RFC3339))
		}
		if cc := a.header.Get("Cache-Control"); cc != cacheControl {
			t.Errorf("%s: Cache-Control %q, want %q", path, cc, cacheControl)
		}
	}
	for _, version := range []string{u.version, "v" + u.version, "99.0.0"} {
		path := app + "/" + withChannel("squirrel-mac/x64/"+version, channel)
		if a := feed(t, p, path); a.status != http.StatusNoContent || len(a.body) != 0 || a.header.Get("Cache-Control") != cacheControl {
			t.Errorf("%s: %d %q (Cache-Control %q), want 204 without a body (%q)", path, a.status, a.body, a.header.Get("Cache-Control"), cacheControl)
		}
	}
	if a := feed(t, p, app+"/"+withChannel("squirrel-mac/x64/latest", channel)); a.status != http.StatusBadRequest {
		t.Errorf("squirrel-mac/x64/latest: %d %s, want 400: Squirrel.Mac would install the update at every check", a.status, a.body)
	}
	checkNotFound(t, p, app+"/"+withChannel("squirrel-mac/universal/0.9.0", channel), app+" "+u.tag+" has no macOS zip for universal")

	path := app + "/" + withChannel("appimage/x86_64.zsync", channel)
	if a := feed(t, p, path); a.status != http.StatusFound || a.header.Get("Location") != u.url(u.zsync()) || a.header.Get("Cache-Control") != cacheControl {
		t.Errorf("%s: %d to %q (Cache-Control %q), want 302 to %s (%q)", path, a.status, a.header.Get("Location"), a.header.Get("Cache-Control"), u.url(u.zsync()), cacheControl)
	}
	checkNotFound(t, p, app+"/"+withChannel("appimage/aarch64.zsync", channel), app+" "+u.tag+" has no AppImage zsync file for aarch64")
	checkNotFound(t, p, app+"/"+withChannel("squirrel-win/x64/RELEASES", channel), app+" "+u.tag+" has no RELEASES for x64")
	checkNotFound(t, p, app+"/"+withChannel("electron/latest-linux.yml", channel), app+" "+u.tag+" has no latest-linux.yml")
	checkNotFound(t, p, app+"/"+withChannel("velopack/releases.osx.json", channel), app+" "+u.tag+" has no releases.osx.json")
}

// TestFeedsStandalone runs the one-command default, cmd/api polling a fake
// GitHub itself, whose releases carry Tauri bundles signed with the real
// minisign and the companion files of Squirrel (macOS and Windows),
// electron-updater and Velopack. Tauri: every request of an updater gets its
// bundle with a signature that minisign verifies against the bundle's
// bytes, and a signature by another key than the app's, as configured, is
// never offered while the app's release is served all the same. The others:
// every feed answers as docs/updates.md says, electron-updater's and
// Velopack's own code take the answers, each companion costs one request per
// release, and the pre-release channel answers from the pre-release.
func TestFeedsStandalone(t *testing.T) {
	t.Parallel()
	gh := fakegithub.New(t) // with a quota that leaves one request a second for each app unpaced
	gh.SetQuota(fakegithub.Quota{Limit: 1 << 20, Remaining: 1 << 20, Reset: time.Now().Add(time.Hour)})
	key, other := newMinisignKey(t), newMinisignKey(t)
	v41 := newSignedRelease(t, artcraft, "artcraft-v0.41.0", 5000, key, artcraftBundles("0.41.0")...)
	gh.Publish(artcraft, v41.rel)
	forged := newSignedRelease(t, vectorcraft, "v1.2.0", 7000, other, "VectorCraft_1.2.0_x64-setup.exe", "VectorCraft_1.2.0_amd64.AppImage")
	gh.Publish(vectorcraft, forged.rel)
	film := newUpdaterRelease(filmcraft, "FilmCraft", "v1.2.0", 0, 100)
	gh.Publish(filmcraft, film.release())

	// photocraft: a release and a newer pre-release, each with its own files.
	photo := newUpdaterRelease(photocraft, "PhotoCraft", "v1.0.0", 0, 100)
	photoPre := newUpdaterRelease(photocraft, "PhotoCraft", "v1.1.0-beta1", 1, 200)
	gh.Publish(photocraft, photo.release())
	gh.SetList(photocraft, photoPre.release(), photo.release())

	d := deployment{gh: gh, apps: testAppsEnv + ", " + artcraftApp, podEnv: map[string]string{"CRAFT_APPS_RELEASE_POLL_INTERVAL_SECS": "1",
		"CRAFT_APPS_RELEASE_TICK_SECS": "1", "CRAFT_APPS_RELEASE_PRERELEASE_APPS": "photocraft", "CRAFT_APPS_RELEASE_TAG_PREFIXES": tauriPrefixes,
		"CRAFT_APPS_RELEASE_TAURI_PUBKEYS": "artcraft=" + key.pubkey + ", vectorcraft=" + key.pubkey}}
	binary(t, "api") // built before the clock starts
	began := time.Now()
	api := d.pods(t, 1)[0]
	testkit.Eventually(t, "the feeds serve artcraft 0.41.0 and filmcraft v1.2.0", func() bool {
		for _, c := range tauriCases {
			var u tauriUpdate
			if a := feed(t, api, "artcraft/tauri/"+c.path+"?current_version=0.0.1"); a.status != http.StatusOK || json.Unmarshal(a.body, &u) != nil || u.Version != "0.41.0" {
				return false
			}
		}
		return servesFiles(t, api, "filmcraft", "", film)
	})
	t.Logf("every bundle of artcraft-v0.41.0 and every companion file of filmcraft v1.2.0 served %v after the process started", time.Since(began).Round(time.Millisecond))
	metrics := api.metrics + "/metrics"
	const public = "public, max-age=60, stale-while-revalidate=30, stale-if-error=86400"

	t.Run("tauri", func(t *testing.T) {
		// Each of tauriCases gets v41's version and its bundle, whose
		// signature minisign -V verifies with key against the bytes its url
		// names; latest.json the same for each platform.
		version, bundles := "0.41.0", artcraftBundles("0.41.0")
		for _, c := range tauriCases {
			a := feed(t, api, "artcraft/tauri/"+c.path+"?current_version=0.40.9")
			var u tauriUpdate
			if a.status != http.StatusOK || json.Unmarshal(a.body, &u) != nil {
				t.Errorf("%s %s: %d %s, want 200 with an update", api.name, c.path, a.status, a.body)
				continue
			}
			if u.Version != version || u.PubDate != v41.rel.PublishedAt.Format(time.RFC3339) || !strings.Contains(u.Notes, "Faster start-up") {
				t.Errorf("%s %s: version %q, pub_date %q, notes %q; want %q, %s and the release's notes",
					api.name, c.path, u.Version, u.PubDate, u.Notes, version, v41.rel.PublishedAt.Format(time.RFC3339))
			}
			checkBundle(t, api.name+" "+c.path, v41, key, u.URL, u.Signature, bundles[c.bundle])
		}

		a := feed(t, api, "artcraft/tauri/latest.json")
		var m struct {
			Version   string
			Platforms map[string]struct{ URL, Signature string }
		}
		if a.status != http.StatusOK || json.Unmarshal(a.body, &m) != nil {
			t.Fatalf("%s latest.json: %d %s, want 200", api.name, a.status, a.body)
		}
		if got, want := slices.Sorted(maps.Keys(m.Platforms)), slices.Sorted(maps.Keys(tauriPlatforms)); m.Version != version || !slices.Equal(got, want) {
			t.Errorf("%s latest.json: version %q, platforms %v; want %q, %v", api.name, m.Version, got, version, want)
		}
		for platform, b := range tauriPlatforms {
			if pl, ok := m.Platforms[platform]; ok {
				checkBundle(t, api.name+" latest.json "+platform, v41, minisignKey{}, pl.URL, pl.Signature, bundles[b])
			}
		}
		if a := feed(t, api, "artcraft/tauri/windows/x86_64/nsis?current_version=0.41.0"); a.status != http.StatusNoContent || len(a.body) != 0 {
			t.Errorf("current_version=0.41.0: %d %q, want 204 without a body", a.status, a.body)
		}
		checkNotFound(t, api, "artcraft/tauri/linux/aarch64/deb?current_version=0.40.9",
			"artcraft artcraft-v0.41.0 has no signed updater bundle for linux aarch64 deb")
		refused := `craft_poller_companions_total{app="vectorcraft",outcome="refused"}`
		testkit.Eventually(t, "vectorcraft's two signatures refused", func() bool { return testkit.Scrape(t, metrics)[refused] >= 2 })
		checkNotFound(t, api, "vectorcraft/tauri/windows/x86_64/nsis", "vectorcraft v1.2.0 has no signed updater bundle for windows x86_64 nsis")
		checkNotFound(t, api, "vectorcraft/tauri/linux/x86_64", "vectorcraft v1.2.0 has no signed updater bundle for linux x86_64 unknown")
		checkNotFound(t, api, "vectorcraft/tauri/latest.json", "vectorcraft v1.2.0 has no signed updater bundle")
		if got := tags(api.served(t)); got["vectorcraft"] != "v1.2.0" || got["artcraft"] != "artcraft-v0.41.0" {
			t.Errorf("release_info serves %v, want vectorcraft v1.2.0 and artcraft artcraft-v0.41.0", got)
		}
	})

	t.Run("feeds", func(t *testing.T) {
		checkUpdaterFeeds(t, api, "filmcraft", "", film, public)
		// The headers every feed shares with release_info: a strong ETag per
		// representation, gzip when accepted, 304 to a matching
		// If-None-Match, the same answer whatever query the client adds.
		base, want := "filmcraft/electron/latest.yml", film.served(latestYML)
		path := base + "?noCache=0.5"
		plain := feed(t, api, base)
		etag := plain.header.Get("ETag")
		if plain.status != http.StatusOK || string(plain.body) != want || !strings.HasPrefix(etag, `"`) {
			t.Fatalf("%s: %d, ETag %q, want 200 with a strong ETag", base, plain.status, etag)
		}
		for _, q := range []string{"?noCache=0.123", "?noCache=9&id=x&localVersion=0.1.0&arch=x64&os=win&rid=win-x64&stagingId=42"} {
			if a := feed(t, api, base+q); a.status != http.StatusOK || string(a.body) != want || a.header.Get("ETag") != etag {
				t.Errorf("%s%s: %d, ETag %q, want the answer without the query (ETag %s)", base, q, a.status, a.header.Get("ETag"), etag)
			}
		}
		a := feed(t, api, path, "Accept-Encoding", "gzip")
		gzETag := a.header.Get("ETag")
		if a.status != http.StatusOK || a.header.Get("Content-Encoding") != "gzip" || string(gunzip(t, a.body)) != want || gzETag == etag || gzETag == "" {
			t.Errorf("%s gzip: %d, Content-Encoding %q, ETag %q, want 200 gzip of the same bytes under its own ETag", path, a.status, a.header.Get("Content-Encoding"), gzETag)
		}
		for _, c := range []struct{ etag, encoding string }{{etag, ""}, {gzETag, "gzip"}} {
			a := feed(t, api, path, "If-None-Match", c.etag, "Accept-Encoding", c.encoding)
			if a.status != http.StatusNotModified || len(a.body) != 0 || a.header.Get("ETag") != c.etag {
				t.Errorf("%s If-None-Match %s: %d, want 304 without a body", path, c.etag, a.status)
			}
		}
	})

	t.Run("clients", func(t *testing.T) {
		// electron-updater's generic provider reads the files as the
		// binary serves them, from its own base URL.
		base := api.base + updatesPath + "filmcraft/electron"
		var bodies []string
		for _, name := range []string{latestYML, latestMacYML} {
			bodies = append(bodies, string(feed(t, api, "filmcraft/electron/"+name+"?noCache=0.42").body))
		}
		download := func(name string) string { return film.url(name) + " " + film.sha512(name) }
		want := [][]string{{download(film.setup())}, {download(film.macZip()), download(film.macZipARM())}}
		for i, got := range testkit.ElectronResolve(t, base, bodies) {
			var downloads []string
			for _, f := range got.Files {
				downloads = append(downloads, f.URL+" "+f.SHA512)
			}
			wantDownloads := want[i]
			if !got.OK || got.Version != film.version || !slices.Equal(downloads, wantDownloads) {
				t.Errorf("electron-updater read the served file %d: ok %v (%s), version %q, downloads %q; want %s, %q", i, got.OK, got.Error, got.Version, downloads, film.version, wantDownloads)
			}
		}
		if !t.Failed() {
			t.Logf("electron-updater 6.8.10 (parseUpdateInfo, resolveFiles) resolved the served latest.yml and latest-mac.yml to the assets' GitHub URLs with the publisher's sha512")
		}

		// Velopack's own update check asks the binary itself.
		asked := `craft_api_updates_total{app="filmcraft",code="200",decision="none",feed="velopack"}`
		before := testkit.Scrape(t, metrics)[asked]
		got := testkit.VelopackCheck(t, testkit.VelopackApp{ID: "FilmCraft", Version: "1.1.0", Channel: "win"}, api.base+updatesPath+"filmcraft/velopack")[0]
		if got.Error != "" || got.Target == nil || got.Target.Version != film.version || got.Target.Type != "Full" || got.Target.FileName != film.url(film.full()) {
			t.Errorf("Velopack's update check against the binary = %+v (target %+v), want %s Full at %s", got, got.Target, film.version, film.url(film.full()))
		}
		if after := testkit.Scrape(t, metrics)[asked]; after != before+1 {
			t.Errorf("%s went from %v to %v: want the check's one request", asked, before, after)
		}
		t.Logf("Velopack's update check (npm velopack 0.0.1053) against the binary picked %+v", got.Target)
	})

	t.Run("prerelease", func(t *testing.T) {
		testkit.Eventually(t, "photocraft's feeds serve v1.0.0 and, on the channel, v1.1.0-beta1", func() bool {
			return servesFiles(t, api, "photocraft", "", photo) &&
				servesFiles(t, api, "photocraft", "prerelease", photoPre)
		})
		checkUpdaterFeeds(t, api, "photocraft", "", photo, public)
		checkUpdaterFeeds(t, api, "photocraft", "prerelease", photoPre, "private, max-age=60")
		for _, u := range []*updaterRelease{photo, photoPre} {
			for _, name := range u.companions {
				if got := gh.Count(fakegithub.AssetOf(photocraft, u.id(name))); got != 1 {
					t.Errorf("photocraft %s's %s asked %d times, want once", u.tag, name, got)
				}
			}
		}
		a := feed(t, api, "photocraft/squirrel-mac/x64/1.0.0?channel=prerelease")
		if a.status != http.StatusOK || !strings.Contains(string(a.body), photoPre.url(photoPre.macZip())) {
			t.Errorf("Squirrel.Mac at v1.0.0 on the channel: %d %s, want 200 with %s", a.status, a.body, photoPre.macZip())
		}
		if a := feed(t, api, "photocraft/squirrel-mac/x64/1.0.0"); a.status != http.StatusNoContent {
			t.Errorf("Squirrel.Mac at v1.0.0 off the channel: %d %s, want 204", a.status, a.body)
		}
		if a := feed(t, api, "photocraft/electron/latest.yml?channel=beta"); a.status != http.StatusBadRequest {
			t.Errorf("channel=beta: %d %s, want 400", a.status, a.body)
		}
	})
}
