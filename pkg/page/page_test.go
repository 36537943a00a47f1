package page

import (
	"net/url"
	"strings"
	"testing"
	"time"

	"golang.org/x/net/html"

	"github.com/storytold/craft-releases/pkg/release"
)

func TestNotes(t *testing.T) {
	tests := []struct {
		name, markdown string
		want           []string // substrings of the HTML
		notWant        []string
	}{
		{"markdown", "# New\n\n- **bold** and `code`\n\n| a |\n| - |\n| 1 |\n", []string{"<h1>New</h1>", "<strong>bold</strong>", "<code>code</code>", "<td>1</td>"}, nil},
		{"a script block is text", "<script>alert(1)</script>\n", []string{"<pre><code>&lt;script&gt;alert(1)&lt;/script&gt;"}, []string{"<script"}},
		{"inline HTML is text", "a <img src=x onerror=alert(1)> b", []string{"a &lt;img src=x onerror=alert(1)&gt; b"}, []string{"<img"}},
		{"javascript: links lose their link", "[x](javascript:alert(1)) <javascript:alert(2)>", []string{"x", "javascript:alert(2)"}, []string{"href=\"javascript", "<a href=\"\""}},
		{"links to the web stay, marked", "[x](https://example.com/a) https://example.com/b", []string{`<a href="https://example.com/a" rel="nofollow noreferrer">x</a>`, `<a href="https://example.com/b" rel="nofollow noreferrer">`}, nil},
		{"relative links are dropped", "[x](/admin)", []string{"x"}, []string{"href"}},
		{"an image is a link", "![diagram](https://example.com/d.png) ![](https://example.com/e.png)", []string{`<a href="https://example.com/d.png" rel="nofollow noreferrer">diagram</a>`, `>image</a>`}, []string{"<img"}},
		{"a javascript: image", "![x](javascript:alert(1))", []string{"x"}, []string{"javascript:alert"}},
		{"style attributes are dropped", "| a |\n|:-:|\n| 1 |\n", []string{"<th>a</th>"}, []string{"style"}},
	}
	r := NewRenderer()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := string(r.renderNotes(tt.markdown))
			for _, w := range tt.want {
				if !strings.Contains(got, w) {
					t.Errorf("notes %q:\n%s\nwant %q in it", tt.markdown, got, w)
				}
			}
			for _, w := range tt.notWant {
				if strings.Contains(got, w) {
					t.Errorf("notes %q:\n%s\nwant no %q in it", tt.markdown, got, w)
				}
			}
		})
	}
}

// render returns the whole page of apps from its parts.
func render(r *Renderer, apps []App) []byte {
	b := r.Head(apps)
	for _, a := range apps {
		b = append(b, r.Section(a)...)
		b = append(b, r.Checked(a.FetchedAt)...)
	}
	return append(b, r.Foot()...)
}

// TestPartsMakeOneDocument: the parts concatenate into one well-formed page,
// the same at every rendering: the index lists every app, each section holds
// its release and ends with its checked line, and the document closes once.
func TestPartsMakeOneDocument(t *testing.T) {
	fetched := time.Date(2026, 10, 10, 12, 0, 0, 0, time.UTC)
	apps := []App{
		{Key: "a", Name: "A", FetchedAt: fetched, Release: &release.Release{Tag: "v1", Version: "1", Name: "v1", NotesMarkdown: "two"}},
		{Key: "b", Name: "B", FetchedAt: fetched},
		{Key: "c", Name: "C"},
	}
	page := string(render(NewRenderer(), apps))
	if again := string(render(NewRenderer(), apps)); again != page {
		t.Errorf("two renderings of the same apps differ")
	}
	for _, want := range []string{`<li><a href="#app-a">A</a></li>`, `<li><a href="#app-c">C</a></li>`, "<p>two</p>",
		"No release published yet.", "Not checked yet", "Never checked on GitHub yet</p>\n</section>\n</div>",
		`datetime="2026-10-10T12:00:00Z">10 Oct 2026, 12:00 UTC</time>`} {
		if !strings.Contains(page, want) {
			t.Errorf("page: no %q in\n%s", want, page)
		}
	}
	if !strings.HasPrefix(page, "<!doctype html>") || !strings.HasSuffix(page, "</html>\n") || strings.Count(page, "</section>") != len(apps) {
		t.Errorf("page: want one document with %d sections:\n%s", len(apps), page)
	}
	if _, err := html.Parse(strings.NewReader(page)); err != nil {
		t.Errorf("page does not parse: %v", err)
	}
}

func TestGroups(t *testing.T) {
	var as []release.Asset
	for _, n := range []string{"SHA256SUMS.txt", "a-1-linux-x64.tar.gz", "a-1-windows-x64-portable.zip", "a-1-linux-x64.deb",
		"a-1-windows-arm64.msi", "a-1-windows-x64.msi", "a-web-1.zip", "a-1-linux-arm64.AppImage", "a-1-linux-x64.AppImage",
		"a-1-macos-x64.dmg", "a-1-macos-arm64.dmg", "a-1-windows-x64.msi"} {
		as = append(as, release.Asset{Name: n, SizeBytes: 1_234_567, DownloadURL: "https://github.com/o/a/releases/download/v1/" + n, Platform: release.ParseAsset(n)})
	}
	var got []string
	for _, g := range groups("a", release.Stable, as) {
		for _, b := range g.Buttons {
			s := g.Label + ": " + b.Label + " (" + b.Detail + ") " + b.Href
			if b.Primary {
				s += " primary"
			}
			got = append(got, s)
		}
	}
	want := []string{
		"Windows: Installer (x64 · .msi · 1.2\u00a0MB) /v1/craft_apps/download/a?os=windows&arch=x64&package=msi primary",
		"Windows: Installer (Arm64 · .msi · 1.2\u00a0MB) /v1/craft_apps/download/a?os=windows&arch=arm64&package=msi",
		"Windows: Portable (x64 · .zip · 1.2\u00a0MB) /v1/craft_apps/download/a?os=windows&arch=x64&package=portable_zip",
		"macOS: Disk image (Apple silicon · .dmg · 1.2\u00a0MB) /v1/craft_apps/download/a?os=macos&arch=arm64&package=dmg primary",
		"macOS: Disk image (Intel · .dmg · 1.2\u00a0MB) /v1/craft_apps/download/a?os=macos&arch=x64&package=dmg",
		"Linux: AppImage (x64 · .AppImage · 1.2\u00a0MB) /v1/craft_apps/download/a?os=linux&arch=x64&package=app_image primary",
		"Linux: AppImage (Arm64 · .AppImage · 1.2\u00a0MB) /v1/craft_apps/download/a?os=linux&arch=arm64&package=app_image",
		"Linux: Debian, Ubuntu (x64 · .deb · 1.2\u00a0MB) /v1/craft_apps/download/a?os=linux&arch=x64&package=deb",
		"Linux: Archive (x64 · .tar.gz · 1.2\u00a0MB) /v1/craft_apps/download/a?os=linux&arch=x64&package=tar_gz",
		"Web: Web build (.zip · 1.2\u00a0MB) /v1/craft_apps/download/a?os=web&package=web_zip primary",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("buttons:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

func TestByteSize(t *testing.T) {
	for n, want := range map[int64]string{0: "0\u00a0B", 999: "999\u00a0B", 1000: "1.0\u00a0kB", 52_400_000: "52\u00a0MB",
		9_990_000: "10\u00a0MB", 9_940_000: "9.9\u00a0MB", 1_500_000_000: "1.5\u00a0GB", 3_000_000_000_000_000: "3000\u00a0TB"} {
		if got := byteSize(n); got != want {
			t.Errorf("byteSize(%d) = %q, want %q", n, got, want)
		}
	}
}

// FuzzNotes renders arbitrary release notes: the HTML that comes out has no
// element or attribute that could run script, load something or leave the
// page, whatever the notes hold.
func FuzzNotes(f *testing.F) {
	for _, s := range []string{"# x\n\n- a\n", "<script>alert(1)</script>", "<img src=x onerror=alert(1)>",
		"[x](javascript:alert(1))", "<a href=\"jAvAsCrIpT:alert(1)\">x</a>", "![x](https://e/x.png)",
		"<svg onload=alert(1)>", "<iframe src=//e>", "<style>*{}</style>", "| a |\n|:-|\n| <b onclick=x>1</b> |",
		"<details open ontoggle=alert(1)>", "[a](data:text/html,x)", "<form action=//e><input></form>"} {
		f.Add(s)
	}
	r := NewRenderer()
	allowed := map[string]bool{"a": true, "p": true, "h1": true, "h2": true, "h3": true, "h4": true, "h5": true, "h6": true,
		"ul": true, "ol": true, "li": true, "strong": true, "em": true, "del": true, "code": true, "pre": true, "blockquote": true,
		"hr": true, "br": true, "table": true, "thead": true, "tbody": true, "tr": true, "th": true, "td": true}
	f.Fuzz(func(t *testing.T, md string) {
		out := string(r.renderNotes(md))
		z := html.NewTokenizer(strings.NewReader(out))
		for {
			tt := z.Next()
			if tt == html.ErrorToken {
				return
			}
			if tt != html.StartTagToken && tt != html.SelfClosingTagToken {
				continue
			}
			tok := z.Token()
			if !allowed[tok.Data] {
				t.Fatalf("notes %q: element <%s> in %s", md, tok.Data, out)
			}
			for _, a := range tok.Attr {
				switch {
				case strings.HasPrefix(a.Key, "on"), a.Key == "style", a.Key == "src":
					t.Fatalf("notes %q: attribute %s in %s", md, a.Key, out)
				case a.Key == "href":
					if u, err := url.Parse(a.Val); err != nil || (u.Scheme != "http" && u.Scheme != "https" && u.Scheme != "mailto") {
						t.Fatalf("notes %q: link %q in %s", md, a.Val, out)
					}
				}
			}
		}
	})
}

// TestPrereleaseSection: an app's pre-release shows under its release,
// labelled, with buttons of the channel's links and its own notes; without
// one the section is what it was.
func TestPrereleaseSection(t *testing.T) {
	asset := func(tag, name string) release.Asset {
		return release.Asset{Name: name, SizeBytes: 1, DownloadURL: "https://github.com/o/a/releases/download/" + tag + "/" + name, Platform: release.ParseAsset(name)}
	}
	stable := &release.Release{Tag: "v1", Version: "1", Name: "One", HTMLURL: "https://github.com/o/a/releases/tag/v1",
		Assets: []release.Asset{asset("v1", "a-1-windows-x64.msi")}}
	beta := &release.Release{Tag: "v2-beta", Version: "2-beta", Name: "Two <beta>", Prerelease: true, NotesMarkdown: "**beta notes**",
		HTMLURL: "https://github.com/o/a/releases/tag/v2-beta", Assets: []release.Asset{asset("v2-beta", "a-2-beta-linux-x64.deb")}}
	r := NewRenderer()
	a := App{Key: "a", Name: "A", FetchedAt: time.Unix(2e9, 0), Release: stable, Downloads: stable.Assets}
	without := string(r.Section(a))
	a.Prerelease, a.PrereleaseDownloads = beta, beta.Assets
	with := string(r.Section(a))
	if !strings.HasPrefix(with, without) {
		t.Fatalf("the release's part changed:\n%s\nwant it to start with\n%s", with, without)
	}
	pre := with[len(without):]
	for _, want := range []string{`<div class="prerelease os" data-channel="prerelease">`, `<span class="badge">Pre-release</span>`,
		`data-version>2-beta<`, "Two &lt;beta&gt;", `href="https://github.com/o/a/releases/tag/v2-beta"`,
		`href="/v1/craft_apps/download/a?os=linux&amp;arch=x64&amp;package=deb&amp;channel=prerelease"`,
		"<strong>beta notes</strong>"} {
		if !strings.Contains(pre, want) {
			t.Errorf("the pre-release part lacks %s:\n%s", want, pre)
		}
	}
	if strings.Contains(pre, "package=msi") || strings.Contains(without, "channel=") {
		t.Errorf("buttons of one release in the other's part:\n%s", with)
	}
	a.Release, a.Downloads = nil, nil
	if got := string(r.Section(a)); !strings.Contains(got, "No release published yet.") || !strings.Contains(got, `data-channel="prerelease"`) {
		t.Errorf("a pre-release without a release:\n%s", got)
	}
}
