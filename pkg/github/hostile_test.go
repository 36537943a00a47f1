package github_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/storytold/craft-releases/pkg/github"
	"github.com/storytold/craft-releases/pkg/release"
	"github.com/storytold/craft-releases/test/fakegithub"
)

// TestParseReleaseHostileDownloadURLs: a download URL is kept only when it is
// exactly this asset's, with nothing a URL parser would resolve elsewhere.
func TestParseReleaseHostileDownloadURLs(t *testing.T) {
	const name = "photocraft-1.2.3-windows-x64.msi"
	dl := "https://github.com/" + repo + "/releases/download/v1.2.3/"
	tests := []struct {
		name string
		url  string
		kept bool
	}{
		{"exact", dl + name, true},
		{"escaped name", dl + "photocraft-1.2.3-windows-x64%2Emsi", true},
		{"dot segments into another repo", dl + "../../../../attacker/payload/releases/download/v1/evil.msi", false},
		{"encoded dot segments", dl + "%2e%2e/%2e%2e/%2e%2e/%2e%2e/attacker/payload/releases/download/v1/evil.msi", false},
		{"mixed encoded dot segment", dl + ".%2E/" + name, false},
		{"single dot segment", dl + "./" + name, false},
		{"backslashes", dl + `..\..\..\..\attacker\payload\releases\download\v1\evil.msi`, false},
		{"encoded backslash", dl + "..%5c..%5cevil.msi", false},
		{"encoded slash", "https://github.com/" + repo + "/releases/download/v1.2.3%2F..%2F..%2Fx/" + name, false},
		{"NUL and a header", dl + name + "\x00\r\nSet-Cookie: x", false},
		{"encoded NUL", dl + name + "%00", false},
		{"tab inside", dl + "photo\tcraft-1.2.3-windows-x64.msi", false},
		{"space inside", "https://github.com/" + repo + "/releases/download/v1.2.3/ " + name, false},
		{"query", dl + name + "?x=1", false},
		{"empty query", dl + name + "?", false},
		{"fragment", dl + name + "#x", false},
		{"user info", "https://evil@github.com/" + repo + "/releases/download/v1.2.3/" + name, false},
		{"user info before another host", "https://github.com@evil.example/" + repo + "/releases/download/v1.2.3/" + name, false},
		{"port", "https://github.com:443/" + repo + "/releases/download/v1.2.3/" + name, false},
		{"host in capitals", "https://GitHub.com/" + repo + "/releases/download/v1.2.3/" + name, false},
		{"scheme in capitals", "HTTPS://github.com/" + repo + "/releases/download/v1.2.3/" + name, false},
		{"host with a trailing dot", "https://github.com./" + repo + "/releases/download/v1.2.3/" + name, false},
		{"double slash", "https://github.com//" + repo + "/releases/download/v1.2.3/" + name, false},
		{"trailing slash", dl + name + "/", false},
		{"leading space", " " + dl + name, false},
		{"non-ASCII", dl + "фото.msi", false},
		{"bad escape", dl + "photo%zzcraft.msi", false},
		{"truncated escape", dl + name + "%2", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := asset(map[string]any{"name": name, "browser_download_url": tt.url})
			r := mustParse(t, releaseJSON(t, map[string]any{"assets": []any{a}}))
			if got := len(r.Assets) == 1; got != tt.kept {
				t.Fatalf("kept = %v, want %v (%q)", got, tt.kept, tt.url)
			}
		})
	}
}

// TestParseReleaseHostileHTMLURL: html_url is kept only plainly under the
// repository's releases; the fallback escapes the tag (finding 1).
func TestParseReleaseHostileHTMLURL(t *testing.T) {
	tagPage := "https://github.com/" + repo + "/releases/tag/v1.2.3"
	tests := []struct{ name, url, want string }{
		{"kept", tagPage, tagPage},
		{"dot segments", "https://github.com/" + repo + "/releases/../../../attacker/x/releases/tag/v1", tagPage},
		{"encoded dot segments", "https://github.com/" + repo + "/releases/%2e%2e/%2E%2E/attacker/x", tagPage},
		{"backslash", "https://github.com/" + repo + `/releases/..\..\attacker`, tagPage},
		{"query", tagPage + "?evil=1", tagPage},
		{"fragment", tagPage + "#x", tagPage},
		{"user info", "https://x@github.com/" + repo + "/releases/tag/v1.2.3", tagPage},
		{"nothing after releases/", "https://github.com/" + repo + "/releases/", tagPage},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := mustParse(t, releaseJSON(t, map[string]any{"html_url": tt.url}))
			if r.HTMLURL != tt.want {
				t.Errorf("html_url = %q, want %q", r.HTMLURL, tt.want)
			}
		})
	}
	t.Run("fallback escapes the tag", func(t *testing.T) {
		r := mustParse(t, releaseJSON(t, map[string]any{"tag_name": "v1+build#%", "html_url": nil}))
		if want := "https://github.com/" + repo + "/releases/tag/v1+build%23%25"; r.HTMLURL != want {
			t.Errorf("html_url = %q, want %q", r.HTMLURL, want)
		}
	})
}

// TestParseReleaseTags: a tag that breaks git's ref-name rules, or holds
// anything unprintable, fails the answer (finding 2).
func TestParseReleaseTags(t *testing.T) {
	tests := []struct {
		tag string
		ok  bool
	}{
		{"v1.2.3", true},
		{"V2.0.0-rc.1", true},
		{"release/1.0", true},
		{"v1+build.5", true},
		{"версия-1", true},
		{"v1\x1b]0;pwned\x07\x1b[2J\r\n\x00", false},
		{"v1\x1b[2J", false},
		{"v1 2", false},
		{"v1\u00a02", false},
		{"v1\u202e2", false},
		{"v1\u200b", false},
		{"../../../../attacker/x/releases/tag/evil?#", false},
		{"a..b", false},
		{"v1~1", false},
		{"v1^", false},
		{"v1:2", false},
		{"v1?", false},
		{"v1*", false},
		{"v1[2", false},
		{`v1\2`, false},
		{"v1@{2", false},
		{"@", false},
		{"v1.", false},
		{"v1.lock", false},
		{"a.lock/b", false},
		{"/v1", false},
		{"v1/", false},
		{"a//b", false},
		{".v1", false},
		{"a/.b", false},
	}
	for _, tt := range tests {
		t.Run(tt.tag, func(t *testing.T) {
			_, err := github.ParseRelease(app, releaseJSON(t, map[string]any{"tag_name": tt.tag}))
			if got := err == nil; got != tt.ok {
				t.Errorf("ParseRelease(tag %q) error = %v, want ok %v", tt.tag, err, tt.ok)
			}
		})
	}
}

// TestLatestHostileAnswers: a bad tag, oversized headers, an oversized or
// malformed ETag and slow headers are bounded (findings 2 and 5).
func TestLatestHostileAnswers(t *testing.T) {
	gh := fakegithub.New(t)
	good := fakegithub.NewRelease(repo, "v1.0.0")
	gh.Publish(repo, good)

	t.Run("bad tag fails", func(t *testing.T) {
		gh.Queue(repo, fakegithub.Raw(`{"tag_name":"v1\u001b]0;pwned\u0007\u001b[2J"}`))
		a := newClient(t, gh, github.Options{}).Latest(context.Background(), app, "")
		if a.Outcome != release.Failed || a.Release != nil {
			t.Errorf("outcome %v, release %+v; want failed without a release", a.Outcome, a.Release)
		}
	})
	t.Run("8 MB of headers fail", func(t *testing.T) {
		gh.Queue(repo, fakegithub.Fault{Header: http.Header{"X-Junk": {strings.Repeat("a", 8<<20)}}})
		a := newClient(t, gh, github.Options{}).Latest(context.Background(), app, "")
		if a.Outcome != release.Failed || !strings.Contains(errText(a.Err), "exceeded") {
			t.Errorf("outcome %v, err %v; want failed: headers exceeded", a.Outcome, a.Err)
		}
	})
	t.Run("headers at the bound pass", func(t *testing.T) {
		gh.Queue(repo, fakegithub.Fault{Header: http.Header{"X-Junk": {strings.Repeat("a", github.MaxHeaderBytes/2)}}})
		a := newClient(t, gh, github.Options{}).Latest(context.Background(), app, "")
		if a.Outcome != release.Fetched {
			t.Errorf("outcome %v, err %v; want fetched", a.Outcome, a.Err)
		}
	})
	t.Run("2 MB etag fails with the headers", func(t *testing.T) {
		gh.Queue(repo, fakegithub.Fault{Header: http.Header{"Etag": {`"` + strings.Repeat("e", 2<<20) + `"`}}})
		a := newClient(t, gh, github.Options{}).Latest(context.Background(), app, "")
		if a.Outcome != release.Failed || a.ETag != "" {
			t.Errorf("outcome %v, etag of %d bytes; want failed", a.Outcome, len(a.ETag))
		}
	})
	for _, etag := range []string{`"` + strings.Repeat("e", 4096) + `"`, `"` + strings.Repeat("e", github.MaxETag-1) + `"`, "no-quotes", `"a b"`, `W/"x`} {
		t.Run("etag "+etag[:min(len(etag), 12)]+" dropped", func(t *testing.T) {
			gh.Queue(repo, fakegithub.Fault{Header: http.Header{"Etag": {etag}}})
			c := newClient(t, gh, github.Options{})
			a := c.Latest(context.Background(), app, "")
			if a.Outcome != release.Fetched || a.Release == nil || a.ETag != "" {
				t.Fatalf("outcome %v, etag of %d bytes; want fetched, the release kept, no etag", a.Outcome, len(a.ETag))
			}
			gh.Reset()
			c.Latest(context.Background(), app, etag)
			if got := gh.Requests()[0].IfNoneMatch; got != "" {
				t.Errorf("If-None-Match of %d bytes sent back, want none", len(got))
			}
		})
	}
	t.Run("etag at the bound kept", func(t *testing.T) {
		etag := `W/"` + strings.Repeat("e", github.MaxETag-4) + `"`
		gh.Queue(repo, fakegithub.Fault{Header: http.Header{"Etag": {etag}}})
		if a := newClient(t, gh, github.Options{}).Latest(context.Background(), app, ""); a.ETag != etag {
			t.Errorf("etag = %q, want %q", a.ETag, etag)
		}
	})
	t.Run("slow headers fail at the header timeout", func(t *testing.T) {
		gh.Queue(repo, fakegithub.Slow(time.Minute))
		a := newClient(t, gh, github.Options{HeaderTimeout: 50 * time.Millisecond, RequestTimeout: time.Hour}).
			Latest(context.Background(), app, "")
		if a.Outcome != release.Failed || !strings.Contains(errText(a.Err), "awaiting response headers") {
			t.Errorf("outcome %v, err %v; want failed awaiting response headers", a.Outcome, a.Err)
		}
	})
}
