package github

import (
	"net/url"
	"strings"
	"testing"

	"github.com/storytold/craft-releases/pkg/release"
)

// FuzzTrustedDownload: a URL the filter trusts is read by the standard
// parser as exactly the asset's path on https://github.com, holds nothing
// that another parser reads differently, and the URL GitHub would give a
// good tag and name is trusted.
func FuzzTrustedDownload(f *testing.F) {
	const repo = "storytold/photocraft"
	dl := "https://github.com/" + repo + "/releases/download/"
	f.Add(dl+"v1/a.msi", "v1", "a.msi")
	f.Add(dl+"v1/../../../../attacker/payload/releases/download/v1/evil.msi", "v1", "evil.msi")
	f.Add(dl+"v1/%2e%2e/%2E%2E/x/a.msi", "v1", "a.msi")
	f.Add(dl+`v1\..\a.msi`, "v1", "a.msi")
	f.Add(dl+"release/1.0/a%20b.msi", "release/1.0", "a b.msi")
	f.Add(dl+"v1/a.msi\x00\r\nSet-Cookie: x", "v1", "a.msi")
	f.Add("https://evil@github.com/"+repo+"/releases/download/v1/a.msi", "v1", "a.msi")
	f.Fuzz(func(t *testing.T, u, tag, name string) {
		if trustedDownload(u, repo, tag, name) {
			p, err := url.Parse(u)
			if err != nil || p.Scheme != "https" || p.Host != "github.com" || p.User != nil ||
				p.RawQuery != "" || p.Fragment != "" || p.Path != "/"+repo+"/releases/download/"+tag+"/"+name {
				t.Fatalf("trusted %q for tag %q, name %q: parsed as %#v", u, tag, name, p)
			}
			lower := strings.ToLower(u)
			for _, bad := range []string{`\`, "%2f", "%5c", "/./", "/../", "/%2e", "%2e/", "//"} {
				if strings.Contains(lower[len("https://"):], bad) {
					t.Fatalf("trusted %q, which holds %q", u, bad)
				}
			}
			if strings.ContainsFunc(u, func(r rune) bool { return r <= ' ' || r >= 0x7f }) {
				t.Fatalf("trusted %q, which holds a space, a control or a non-ASCII character", u)
			}
		}
		if release.ValidTag(tag) && release.GoodAssetName(name) && !trustedDownload(release.DownloadURL(repo, tag, name), repo, tag, name) {
			t.Fatalf("distrusted GitHub's own URL %q", release.DownloadURL(repo, tag, name))
		}
	})
}
