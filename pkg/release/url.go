package release

import (
	"net/url"
	"slices"
	"strings"
	"unicode"
)

// githubOrigin is the one origin release URLs may point at.
const githubOrigin = "https://github.com"

// DownloadRepo returns the repository ("org/project") whose download URL of
// asset name of release tag u is, exactly: https on github.com, no user
// info, port, query or fragment, and a path that is, segment by segment once
// unescaped, /{org}/{project}/releases/download/{tag}/{name} (a "/" in the
// tag separating segments), with nothing that a URL parser could read
// another way (see githubPath). ok is false for any other URL. A prefix
// check is not enough: a WHATWG parser (a browser, Electron, Node's URL)
// resolves "…/download/../../other/repo/…" into another repository. It is
// safe for concurrent use.
func DownloadRepo(u, tag, name string) (repo string, ok bool) {
	segs, ok := githubPath(u)
	want := slices.Concat([]string{"releases", "download"}, strings.Split(tag, "/"), []string{name})
	if !ok || len(segs) != 2+len(want) || !slices.Equal(segs[2:], want) {
		return "", false
	}
	return segs[0] + "/" + segs[1], true
}

// PageRepo returns the repository ("org/project") whose page of
// release tag u is, exactly: githubPath's rules, and a path that is, segment
// by segment once unescaped, /{org}/{project}/releases/tag/{tag} (a "/" in the
// tag separating segments). ok is false for any other URL.
func PageRepo(u, tag string) (repo string, ok bool) {
	segs, ok := githubPath(u)
	want := slices.Concat([]string{"releases", "tag"}, strings.Split(tag, "/"))
	if !ok || len(segs) != 2+len(want) || !slices.Equal(segs[2:], want) {
		return "", false
	}
	return segs[0] + "/" + segs[1], true
}

// githubPath returns the unescaped path segments of u when u is
// "https://github.com/" followed by a path that every URL parser reads the
// same: only unreserved characters, sub-delimiters, ':', '@', '/' and
// well-formed percent escapes (no '\', space, control or non-ASCII
// character, no '?' or '#'), no empty segment, no segment that is, once
// unescaped, "." or "..", or holds a '/', a '\' or a control character, and
// a repository (the first two segments) that ValidRepo accepts.
func githubPath(u string) ([]string, bool) {
	rest, ok := strings.CutPrefix(u, githubOrigin+"/")
	if !ok || rest == "" {
		return nil, false
	}
	for i := 0; i < len(rest); i++ {
		c := rest[i]
		switch {
		case c == '%':
			if i+2 >= len(rest) || !ishex(rest[i+1]) || !ishex(rest[i+2]) {
				return nil, false
			}
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		case strings.IndexByte("-._~!$&'()*+,;=:@/", c) >= 0:
		default:
			return nil, false
		}
	}
	// The standard parser must agree on every part, as a last guard.
	parsed, err := url.Parse(u)
	if err != nil || parsed.Scheme != "https" || parsed.Host != "github.com" || parsed.User != nil ||
		parsed.RawQuery != "" || parsed.ForceQuery || parsed.Fragment != "" || parsed.Opaque != "" {
		return nil, false
	}
	raw := strings.Split(rest, "/")
	segs := make([]string, len(raw))
	for i, s := range raw {
		seg, err := url.PathUnescape(s)
		if err != nil || seg == "" || seg == "." || seg == ".." ||
			strings.ContainsAny(seg, `/\`) || strings.ContainsFunc(seg, unicode.IsControl) {
			return nil, false
		}
		segs[i] = seg
	}
	if len(segs) < 2 || !ValidRepo(segs[0]+"/"+segs[1]) {
		return nil, false
	}
	return segs, true
}

func ishex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}
