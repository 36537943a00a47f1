// Package page renders the release page, GET /: every app with its version,
// dates, download buttons and release notes, as one HTML document made with
// html/template. Release names and notes come from GitHub and are untrusted:
// names are escaped text, and notes are Markdown rendered by goldmark, where
// raw HTML shows as text, and then sanitised by bluemonday. The page has no
// script, and its Content-Security-Policy allows none.
package page

import (
	"bytes"
	"crypto/sha256"
	_ "embed"
	"encoding/base64"
	"fmt"
	"html/template"
	"slices"
	"time"

	"github.com/microcosm-cc/bluemonday"
	"github.com/yuin/goldmark"

	"github.com/storytold/craft-releases/pkg/download"
	"github.com/storytold/craft-releases/pkg/release"
)

var (
	//go:embed page.html
	pageHTML string
	//go:embed page.css
	pageCSS string
)

// icon is the page's favicon, inline so that the browser asks for no
// /favicon.ico (a 404 in its console).
const icon = `data:image/svg+xml,<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 32 32"><rect width="32" height="32" rx="8" fill="%234b3fd8"/><path d="M9 17l7 7 7-7M16 7v16" stroke="white" stroke-width="3" fill="none" stroke-linecap="round" stroke-linejoin="round"/></svg>`

// ReferrerPolicy is the page's referrer policy, as its <meta> and its
// Referrer-Policy header say: links to GitHub carry no referrer.
const ReferrerPolicy = "no-referrer"

// ContentSecurityPolicy returns the policy the page is served with: nothing
// may load or run but its own inline stylesheet (by its hash) and its inline
// icon; no script at all, no frames, no forms, no base URL.
func ContentSecurityPolicy() string {
	sum := sha256.Sum256([]byte(pageCSS))
	return "default-src 'none'; style-src 'sha256-" + base64.StdEncoding.EncodeToString(sum[:]) + "'; " +
		"img-src data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
}

// App is what the page shows of one app.
type App struct {
	Key       string
	Name      string
	FetchedAt time.Time        // zero: never fetched
	Release   *release.Release // nil: never fetched, or no release
	// Downloads are the release's assets offered as buttons: those with a
	// platform and a trusted download URL, in the release's order.
	Downloads []release.Asset
	// Prerelease is the app's latest_prerelease, shown under its release
	// with buttons of the pre-release channel; nil: none.
	Prerelease          *release.Release
	PrereleaseDownloads []release.Asset // as Downloads, of Prerelease
}

// Renderer renders the page in parts that concatenate into the whole
// document: Head, then each app's Section followed by its Checked line, then
// Foot. An app's section changes only with its release, its checked line with
// each fetch, so that a caller re-renders only what changed. The same
// arguments give the same bytes. It is not safe for concurrent use.
type Renderer struct {
	tmpl   *template.Template
	md     goldmark.Markdown
	policy *bluemonday.Policy
}

// NewRenderer returns a Renderer.
func NewRenderer() *Renderer {
	return &Renderer{
		tmpl:   template.Must(template.New("page").Parse(pageHTML)),
		md:     newMarkdown(),
		policy: newPolicy(),
	}
}

// Head returns the page up to its first app: the document's head and the
// index of apps, in their order. Only Key and Name are read.
func (r *Renderer) Head(apps []App) []byte {
	v := view{Icon: template.URL(icon), CSS: template.CSS(pageCSS)}
	for _, a := range apps {
		v.Apps = append(v.Apps, appView{Key: a.Key, Anchor: anchor(a.Key), Name: a.Name})
	}
	return r.execute("head", v)
}

// Section returns a's part of the page but its checked line: name, version,
// download buttons and release notes, then its pre-release's, labelled as
// such. It reads FetchedAt only for whether it is zero (never checked).
func (r *Renderer) Section(a App) []byte {
	av := appView{Key: a.Key, Anchor: anchor(a.Key), Name: a.Name, Fetched: newStamp(a.FetchedAt),
		releaseView: r.release(a.Key, release.Stable, a.Release, a.Downloads)}
	if a.Prerelease != nil {
		pre := r.release(a.Key, release.Prerelease, a.Prerelease, a.PrereleaseDownloads)
		av.Prerelease = &pre
	}
	return r.execute("section", av)
}

// release returns the view of rel, a release of app's channel ch with
// downloads.
func (r *Renderer) release(app string, ch release.Channel, rel *release.Release, downloads []release.Asset) releaseView {
	v := releaseView{Release: rel}
	if rel != nil {
		if rel.PublishedAt != nil {
			v.Published = newStamp(rel.PublishedAt.Time)
		}
		v.Groups = groups(app, ch, downloads)
		v.Notes = r.renderNotes(rel.NotesMarkdown)
	}
	return v
}

// Checked returns the line that ends an app's section: when GitHub was last
// asked about it (fetchedAt; zero: never).
func (r *Renderer) Checked(fetchedAt time.Time) []byte {
	return r.execute("checked", newStamp(fetchedAt))
}

// Foot returns the page after its last app.
func (r *Renderer) Foot() []byte { return r.execute("foot", nil) }

// execute runs the template name on data.
func (r *Renderer) execute(name string, data any) []byte {
	var buf bytes.Buffer
	if err := r.tmpl.ExecuteTemplate(&buf, name, data); err != nil {
		// The template and the view's types are fixed: a failure is a bug.
		panic(fmt.Sprintf("page: render %s: %v", name, err))
	}
	return buf.Bytes()
}

// anchor is the id of an app's section.
func anchor(key string) string { return "app-" + key }

// renderNotes returns release notes as sanitised HTML.
func (r *Renderer) renderNotes(markdown string) template.HTML {
	var buf bytes.Buffer
	// goldmark fails only when its writer does; a bytes.Buffer does not.
	_ = r.md.Convert([]byte(markdown), &buf)
	return template.HTML(r.policy.SanitizeBytes(buf.Bytes()))
}

// view is the template's data.
type view struct {
	Icon template.URL
	CSS  template.CSS
	Apps []appView
}

type appView struct {
	Key, Anchor, Name string
	Fetched           *stamp // nil: never
	releaseView              // the latest release
	Prerelease        *releaseView
}

// releaseView is one release of an app's section.
type releaseView struct {
	Release   *release.Release
	Published *stamp // nil: unknown
	Groups    []group
	Notes     template.HTML
}

// group is one operating system's buttons.
type group struct {
	OS, Label string
	Buttons   []button
}

type button struct {
	Href          string
	Label, Detail string
	Asset         string // the file name, for tests and people reading the source
	Primary       bool   // the OS's preferred package
	pkg, arch     string // the platform's package type and arch ("" for none)
}

// Arches of one package type, commonest first: on macOS a universal build,
// then Apple silicon; elsewhere x64.
var (
	macArches   = []string{release.ArchUniversal, release.ArchARM64, release.ArchX64, release.ArchX86}
	otherArches = []string{release.ArchX64, release.ArchARM64, release.ArchX86, release.ArchUniversal}
)

// osOrder is the order of the groups, and their headings.
var osOrder = []struct{ os, label string }{
	{release.OSWindows, "Windows"},
	{release.OSMacOS, "macOS"},
	{release.OSLinux, "Linux"},
	{release.OSFreeBSD, "FreeBSD"},
	{release.OSWeb, "Web"},
}

// groups returns one button per distinct platform of assets, grouped by
// operating system, each a download link of app's channel ch. Within a group the preferred package types come first
// (download.Preferred), then the commonest arch, in the release's
// order otherwise; the first button of a group is its primary one.
func groups(app string, ch release.Channel, assets []release.Asset) []group {
	var gs []group
	for _, o := range osOrder {
		g := group{OS: o.os, Label: o.label}
		for _, p := range download.Platforms(assets) {
			if p.OS != o.os {
				continue
			}
			i, _ := download.Pick(assets, download.Want{OS: p.OS, Arch: archOf(p), Package: p.PackageType})
			g.Buttons = append(g.Buttons, button{
				Href:   download.ChannelLink(app, ch, p),
				Label:  packages[p.PackageType].label,
				Detail: detail(p, assets[i].SizeBytes),
				Asset:  assets[i].Name,
				pkg:    p.PackageType,
				arch:   archOf(p),
			})
		}
		if len(g.Buttons) == 0 {
			continue
		}
		pref, arches := download.Preferred(o.os), otherArches
		if o.os == release.OSMacOS {
			arches = macArches
		}
		rank := func(b button) int {
			i := slices.Index(pref, b.pkg)
			if i < 0 {
				i = len(pref)
			}
			// The web build's arch, none, ranks as the first.
			return i*len(arches) + max(slices.Index(arches, b.arch), 0)
		}
		slices.SortStableFunc(g.Buttons, func(a, b button) int { return rank(a) - rank(b) })
		g.Buttons[0].Primary = true
		gs = append(gs, g)
	}
	return gs
}
