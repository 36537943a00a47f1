package browser_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"
	"go.uber.org/zap"

	"github.com/storytold/craft-releases/pkg/api"
	"github.com/storytold/craft-releases/pkg/daemon"
	"github.com/storytold/craft-releases/pkg/release"
	"github.com/storytold/craft-releases/pkg/snapshot"
	"github.com/storytold/craft-releases/test/fakeclock"
	"github.com/storytold/craft-releases/test/testkit"
)

func TestMain(m *testing.M) { os.Exit(testkit.IntegrationMain(m.Run)) }

// screenshots is where the test writes its screenshots, relative to this
// package's directory (git-ignored).
const screenshots = "screenshots"

var t0 = time.Date(2026, 10, 10, 12, 0, 0, 0, time.UTC)

// hostile is what a release's author could write to run script on the page.
const (
	hostileName  = `Evil <script>window.pwned="name"</script> <img src=x onerror="window.pwned='name img'">`
	hostileNotes = "Fixes.\n\n<script>window.pwned=\"notes\"</script>\n\n" +
		"Inline <img src=x onerror=\"window.pwned='img'\"> and <b onmouseover=\"window.pwned='b'\">bold</b>.\n\n" +
		"[a javascript: link](javascript:window.pwned='link') and <a href=\"javascript:window.pwned='a'\">a raw one</a>, " +
		"<javascript:window.pwned='auto'>, ![an image](javascript:window.pwned='image').\n\n" +
		"<iframe src=\"javascript:window.pwned='iframe'\"></iframe>\n\n<style>body{display:none}</style>\n"
)

// names are the configured apps' display names, by key.
var names = map[string]string{
	"photocraft": "PhotoCraft", "vectorcraft": "VectorCraft", "filmcraft": "FilmCraft",
	"artcraft-launcher": "ArtCraft Launcher", "evilcraft": "EvilCraft", "soundcraft": "SoundCraft", "gridcraft": "GridCraft",
}

// apps builds the page's data: four apps with realistic releases (one with
// a pre-release too), one with a hostile release, one fetched without a
// release, one never fetched.
func apps(t testing.TB) *snapshot.Snapshot {
	t.Helper()
	var list []release.App
	for _, k := range []string{"photocraft", "vectorcraft", "filmcraft", "artcraft-launcher", "evilcraft", "soundcraft", "gridcraft"} {
		repo := "storytold/" + k
		if k == "artcraft-launcher" {
			repo = "storytold/craft-launcher"
		}
		// PhotoCraft is on the pre-release channel, with a beta newer than its release.
		list = append(list, release.App{Key: k, Name: names[k], Repo: repo, Prereleases: k == "photocraft"})
	}
	s := snapshot.New(list, fakeclock.New(t0))
	full := []string{"windows-x64.msi", "windows-arm64.msi", "windows-x64-portable.zip", "macos-universal.dmg",
		"linux-x86_64.AppImage", "linux-x86_64.AppImage.zsync", "linux-x86_64.deb", "linux-x86_64.rpm",
		"linux-aarch64.AppImage", "linux-x86_64.tar.gz"}
	notes := "## What's new\n\n- **Faster brushes**: painting on large canvases is up to 40 % faster.\n" +
		"- New *soft light* blend mode.\n- Fixed a crash when exporting to PDF ([#412](https://github.com/storytold/photocraft/issues/412)).\n\n" +
		"```\nphotocraft --export out.pdf\n```\n\n| Platform | Status |\n| --- | --- |\n| Windows | ✓ |\n| macOS | ✓ |\n"
	s.SetAll(map[string]release.Entry{
		"photocraft":        {FetchedAt: t0, Release: rel("storytold/photocraft", "v0.5.0", "PhotoCraft 0.5.0", notes, "photocraft", full...)},
		"filmcraft":         {FetchedAt: t0, Release: rel("storytold/filmcraft", "v1.0.0", "", "", "filmcraft", "web.zip")},
		"artcraft-launcher": {FetchedAt: t0, Release: rel("storytold/craft-launcher", "v0.2.0", "ArtCraft Launcher 0.2.0", "Sign in with your ArtCraft account.", "artcraft-launcher", "windows-x64.msi", "macos-universal.dmg", "linux-x86_64.AppImage", "linux-x86_64.deb")},
		"evilcraft":         {FetchedAt: t0, Release: rel("storytold/evilcraft", "v6.6.6", hostileName, hostileNotes, "evilcraft", "windows-x64.msi", "linux-x86_64.deb")},
		"soundcraft":        {FetchedAt: t0},
		"photocraft:prerelease": {FetchedAt: t0, Release: func() *release.Release {
			r := rel("storytold/photocraft", "v0.6.0-beta.1", "PhotoCraft 0.6 beta 1", "Beta: **layers panel** rewritten.", "photocraft", "windows-x64.msi", "linux-x86_64.AppImage")
			r.Prerelease, r.PublishedAt = true, release.NewTime(t0.Add(-2*time.Hour))
			return r
		}()},
	}, time.Now())
	s.Set("vectorcraft", release.Entry{FetchedAt: t0, Release: func() *release.Release {
		r := rel("storytold/vectorcraft", "v2.1.0-beta.2", "VectorCraft 2.1 beta 2", "Beta: try the new pen tool.", "vectorcraft", "windows-x64.msi", "macos-arm64.dmg", "macos-x64.dmg", "linux-x86_64.deb")
		r.Prerelease = true
		return r
	}()})
	return s
}

// rel returns a release with one asset per platform suffix, named
// <prefix>-<version>-<suffix> (the web build: <prefix>-web-<version>.zip).
func rel(repo, tag, name, notes, prefix string, suffixes ...string) *release.Release {
	version := strings.TrimPrefix(tag, "v")
	published := release.NewTime(t0.Add(-50 * time.Hour))
	r := &release.Release{Tag: tag, Version: version, Name: name, PublishedAt: published,
		HTMLURL: "https://github.com/" + repo + "/releases/tag/" + tag, NotesMarkdown: notes, Assets: []release.Asset{}}
	if r.Name == "" {
		r.Name = tag
	}
	for i, suf := range append([]string{"SHA256SUMS.txt"}, suffixes...) {
		n := prefix + "-" + version + "-" + suf
		switch suf {
		case "SHA256SUMS.txt":
			n = suf
		case "web.zip":
			n = prefix + "-web-" + version + ".zip"
		}
		r.Assets = append(r.Assets, release.Asset{Name: n, SizeBytes: int64(48_200_000 + i*1_300_000),
			DownloadURL: "https://github.com/" + repo + "/releases/download/" + tag + "/" + n, Platform: release.ParseAsset(n)})
	}
	return r
}

// chromium returns the browser to drive: Debian's, which the test task installs.
func chromium(t testing.TB) string {
	t.Helper()
	if _, err := os.Stat("/usr/bin/chromium"); err == nil {
		return "/usr/bin/chromium"
	}
	p, err := exec.LookPath("chromium")
	if err != nil {
		t.Fatal("no chromium: install Debian's chromium package (the Taskfile's deps task does)")
	}
	return p
}

// browser starts a headless Chromium with a fresh profile and returns a tab.
func browser(t testing.TB) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	alloc, cancelAlloc := chromedp.NewExecAllocator(ctx,
		chromedp.ExecPath(chromium(t)),
		chromedp.Headless,
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.NoFirstRun,
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.UserDataDir(t.TempDir()),
	)
	t.Cleanup(cancelAlloc)
	tab, cancelTab := chromedp.NewContext(alloc)
	t.Cleanup(cancelTab)
	return tab
}

// seen is what the page shows and does, as the test script reads it.
type seen struct {
	Scripts    int      `json:"scripts"`    // script elements in the document
	Images     int      `json:"images"`     // img elements
	Frames     int      `json:"frames"`     // iframes
	JSLinks    int      `json:"jsLinks"`    // links whose href is not http(s) or a path
	Pwned      string   `json:"pwned"`      // what a hostile script would have set
	Violations []string `json:"violations"` // securitypolicyviolation events
	Apps       []struct {
		Key     string `json:"key"`
		Name    string `json:"name"`
		Version string `json:"version"`
		Title   string `json:"title"`
		Text    string `json:"text"`
		Buttons []struct {
			Href  string `json:"href"`
			Asset string `json:"asset"`
		} `json:"buttons"`
	} `json:"apps"`
}

// watch runs in every document before the page's own content, from the
// DevTools protocol, which the page's CSP does not govern: it records CSP
// violations.
const watch = `window.violations = [];
document.addEventListener('securitypolicyviolation', e => window.violations.push(e.violatedDirective + ' ' + e.blockedURI));`

const read = `(() => ({
  scripts: document.querySelectorAll('script').length,
  images: document.images.length,
  frames: document.querySelectorAll('iframe, frame, object, embed').length,
  jsLinks: [...document.querySelectorAll('[href], [src], [action], [formaction]')].filter(e => {
    const u = e.getAttribute('href') ?? e.getAttribute('src') ?? e.getAttribute('action') ?? e.getAttribute('formaction');
    return !/^(https?:|\/|#|data:image\/svg\+xml,)/.test(u);
  }).length,
  pwned: String(window.pwned ?? ''),
  violations: window.violations,
  apps: [...document.querySelectorAll('section.app')].map(s => ({
    key: s.dataset.app,
    name: s.querySelector('h2').textContent,
    version: s.querySelector('[data-version]')?.textContent ?? '',
    title: s.querySelector('.title')?.textContent ?? '',
    text: s.textContent,
    buttons: [...s.querySelectorAll('a.button')].map(a => ({href: a.getAttribute('href'), asset: a.dataset.asset})),
  })),
}))()`

func TestPage(t *testing.T) {
	snap := apps(t)
	srv := httptest.NewServer(api.New(snap, new(daemon.Gate), zap.NewNop(), api.Options{}))
	t.Cleanup(srv.Close)
	tab := browser(t)

	messages := chromedp.Console(tab)
	if _, err := chromedp.Call(tab, page.AddScriptToEvaluateOnNewDocument, page.AddScriptToEvaluateOnNewDocumentParams{Source: watch}); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(screenshots, 0o755); err != nil {
		t.Fatal(err)
	}
	var got seen
	for _, vp := range []struct {
		name          string
		width, height int64
		opts          []chromedp.EmulateViewportOption
	}{
		{"desktop", 1280, 800, nil},
		{"phone", 390, 844, []chromedp.EmulateViewportOption{chromedp.EmulateScale(2), chromedp.EmulateMobile}},
	} {
		if err := chromedp.Do(tab,
			chromedp.EmulateViewport(vp.width, vp.height, vp.opts...),
			chromedp.Navigate(srv.URL+"/"),
			// Open every notes section, so that the screenshot shows them and
			// a hostile script in them had its chance to run.
			chromedp.Evaluate[chromedp.Void](`document.querySelectorAll('details').forEach(d => d.open = true)`),
		); err != nil {
			t.Fatal(err)
		}
		png, err := chromedp.Run(tab, chromedp.FullScreenshot(100))
		if err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(screenshots, "release-page-"+vp.name+".png")
		if err := os.WriteFile(path, png, 0o644); err != nil {
			t.Fatal(err)
		}
		abs, _ := filepath.Abs(path)
		t.Logf("screenshot at %s width: %s", vp.name, abs)
		if got, err = chromedp.Run(tab, chromedp.Evaluate[seen](read)); err != nil {
			t.Fatal(err)
		}
		checkSafe(t, vp.name, got)
	}

	// Every message the page wrote, up to a marker written last.
	if err := chromedp.Do(tab, chromedp.Evaluate[chromedp.Void](`console.info('end of test')`)); err != nil {
		t.Fatal(err)
	}
	for m, err := range messages {
		if err != nil {
			t.Fatal(err)
		}
		if m.Text == "end of test" {
			break
		}
		if m.Type == chromedp.ConsoleError || m.IsException() || m.Type == "warning" || m.Source == "security" {
			t.Errorf("console %s (%s): %s", m.Type, m.Source, m.Text)
		}
	}

	checkApps(t, snap.Current(), got)
	checkButtons(t, srv.URL, snap.Current(), got)
}

// checkSafe checks that nothing hostile got onto the page or ran.
func checkSafe(t *testing.T, viewport string, got seen) {
	t.Helper()
	if got.Scripts != 0 || got.Images != 0 || got.Frames != 0 || got.JSLinks != 0 {
		t.Errorf("%s: %d scripts, %d images, %d frames, %d links to other schemes: want none",
			viewport, got.Scripts, got.Images, got.Frames, got.JSLinks)
	}
	if got.Pwned != "" {
		t.Errorf("%s: a hostile script ran: window.pwned = %q", viewport, got.Pwned)
	}
	if len(got.Violations) != 0 {
		t.Errorf("%s: CSP violations %q", viewport, got.Violations)
	}
}

// checkApps checks that every app is on the page with its name and version,
// and that the hostile release's name and notes show as the text they are.
func checkApps(t *testing.T, cur *snapshot.Rendering, got seen) {
	t.Helper()
	var keys []string
	for _, a := range got.Apps {
		keys = append(keys, a.Key)
		app := cur.Apps[a.Key]
		if app == nil {
			t.Errorf("page shows an unknown app %q", a.Key)
			continue
		}
		if want := names[a.Key]; a.Name != want {
			t.Errorf("%s: name %q, want %q", a.Key, a.Name, want)
		}
		switch {
		case app.Release == nil && a.Version != "":
			t.Errorf("%s: version %q, want none", a.Key, a.Version)
		case app.Release != nil && a.Version != app.Release.Version:
			t.Errorf("%s: version %q, want %q", a.Key, a.Version, app.Release.Version)
		case app.Release != nil && a.Title != app.Release.Name:
			t.Errorf("%s: release name %q, want the text %q", a.Key, a.Title, app.Release.Name)
		}
	}
	slices.Sort(keys)
	want := []string{"artcraft-launcher", "evilcraft", "filmcraft", "gridcraft", "photocraft", "soundcraft", "vectorcraft"}
	if !slices.Equal(keys, want) {
		t.Errorf("apps on the page %q, want %q", keys, want)
	}
	for _, a := range got.Apps {
		if a.Key != "evilcraft" {
			continue
		}
		for _, text := range []string{`<script>window.pwned="notes"</script>`, `<img src=x onerror="window.pwned='img'">`,
			`<b onmouseover="window.pwned='b'">`, "a javascript: link", `<a href="javascript:window.pwned='a'">`, `<iframe src=`, `<style>body{display:none}</style>`} {
			if !strings.Contains(a.Text, text) {
				t.Errorf("evilcraft: the notes do not show %q as text:\n%s", text, a.Text)
			}
		}
	}
}

// checkButtons follows every button's link and checks that it answers 302
// to the asset the button names, of the platform its link asks for, of the
// release it is a button of: the pre-release's buttons are links of its
// channel.
func checkButtons(t *testing.T, base string, cur *snapshot.Rendering, got seen) {
	t.Helper()
	client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	buttons := 0
	for _, a := range got.Apps {
		app := cur.Apps[a.Key]
		platforms := map[string][]string{} // by channel
		for _, b := range a.Buttons {
			buttons++
			u, err := url.Parse(b.Href)
			if err != nil || u.IsAbs() || !strings.HasPrefix(u.Path, "/v1/craft_apps/download/"+a.Key) {
				t.Errorf("%s: button link %q, want the app's download path", a.Key, b.Href)
				continue
			}
			q := u.Query()
			if q.Get("os") == "" || q.Get("package") == "" || (q.Get("arch") == "") != (q.Get("os") == "web") {
				t.Errorf("%s: button link %q is not explicit", a.Key, b.Href)
			}
			ch := q.Get("channel")
			platforms[ch] = append(platforms[ch], q.Get("os")+"/"+q.Get("arch")+"/"+q.Get("package"))
			resp, err := client.Get(base + b.Href)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			track, cache := app.Track, "public, max-age=60, stale-while-revalidate=30, stale-if-error=86400"
			if ch == "prerelease" {
				track, cache = app.Prerelease, "private, max-age=60"
			}
			asset := assetNamed(track.Release, b.Asset)
			if resp.StatusCode != http.StatusFound || asset == nil || resp.Header.Get("Location") != asset.DownloadURL {
				t.Errorf("%s: GET %s: %d to %q, want 302 to the download URL of %s", a.Key, b.Href, resp.StatusCode, resp.Header.Get("Location"), b.Asset)
				continue
			}
			if cc := resp.Header.Get("Cache-Control"); cc != cache {
				t.Errorf("%s: GET %s: Cache-Control %q, want %q", a.Key, b.Href, cc, cache)
			}
			p := asset.Platform
			arch := ""
			if p.Arch != nil {
				arch = *p.Arch
			}
			if p.OS != q.Get("os") || p.PackageType != q.Get("package") || (arch != q.Get("arch") && !(p.OS == "macos" && arch == "universal")) {
				t.Errorf("%s: %s redirects to %s, of another platform", a.Key, b.Href, asset.Name)
			}
		}
		// One button per platform that has an asset, and no other, for
		// each release shown.
		for ch, track := range map[string]snapshot.Track{"": app.Track, "prerelease": app.Prerelease} {
			var want []string
			for _, d := range track.Downloads {
				arch := ""
				if d.Platform.Arch != nil {
					arch = *d.Platform.Arch
				}
				if p := d.Platform.OS + "/" + arch + "/" + d.Platform.PackageType; !slices.Contains(want, p) {
					want = append(want, p)
				}
			}
			slices.Sort(want)
			slices.Sort(platforms[ch])
			if !slices.Equal(platforms[ch], want) {
				t.Errorf("%s: buttons of channel %q for %q, want one for each of %q", a.Key, ch, platforms[ch], want)
			}
		}
	}
	if buttons < 15 {
		t.Errorf("%d buttons on the page, want every platform of every release", buttons)
	}
}

func assetNamed(r *release.Release, name string) *release.Asset {
	if r == nil {
		return nil
	}
	for i := range r.Assets {
		if r.Assets[i].Name == name {
			return &r.Assets[i]
		}
	}
	return nil
}
