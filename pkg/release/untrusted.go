package release

import (
	"net/url"
	"strings"
	"unicode"
)

// MaxSizeBytes is the largest size_bytes served: JavaScript's
// Number.MAX_SAFE_INTEGER (2^53 − 1). A bigger integer reads as another
// number in a JavaScript client, so an asset that claims one is unreadable.
const MaxSizeBytes = 1<<53 - 1

// ValidTag reports whether tag is a release tag the service serves: a git
// ref name (git check-ref-format: no control character, space, ~ ^ : ? * [
// or \, no "..", no "@{", not "@", no empty component and none that starts
// with "." or ends with ".lock", not ending in ".") that is also printable
// throughout (unicode.IsPrint: no format characters such as bidirectional
// overrides, no spaces of any kind). It does not bound the length.
func ValidTag(tag string) bool {
	if tag == "" || tag == "@" || strings.HasSuffix(tag, ".") ||
		strings.Contains(tag, "..") || strings.Contains(tag, "@{") {
		return false
	}
	for _, r := range tag {
		if r == ' ' || !unicode.IsPrint(r) || strings.ContainsRune(`~^:?*[\`, r) {
			return false
		}
	}
	for part := range strings.SplitSeq(tag, "/") {
		if part == "" || part[0] == '.' || strings.HasSuffix(part, ".lock") {
			return false
		}
	}
	return true
}

// MaxTagPrefix bounds an app's tag prefix (App.TagPrefix), in bytes: it
// leaves half of MaxTag to the version.
const MaxTagPrefix = 32

// GoodTagPrefix reports whether p may be an app's tag prefix: 1 to
// MaxTagPrefix bytes of printable ASCII without space, "," or "=" (the
// separators of CRAFT_APPS_RELEASE_TAG_PREFIXES), that can begin a ValidTag:
// p followed by a digit is one.
func GoodTagPrefix(p string) bool {
	if p == "" || len(p) > MaxTagPrefix {
		return false
	}
	for i := range len(p) {
		if c := p[i]; c <= ' ' || c > '~' || c == ',' || c == '=' {
			return false
		}
	}
	return ValidTag(p + "0")
}

// Bidi reports whether r is a Unicode bidirectional formatting character:
// an embedding, override or isolate (U+202A–U+202E, U+2066–U+2069) or a
// directional mark (U+200E, U+200F, U+061C). Shown in a file name or a
// title, they make it read as something else ("exe.pdf" for "fdp.exe").
func Bidi(r rune) bool {
	switch {
	case r == '\u061c', r == '\u200e', r == '\u200f':
		return true
	case '\u202a' <= r && r <= '\u202e', '\u2066' <= r && r <= '\u2069':
		return true
	}
	return false
}

// DownloadURL is the URL GitHub serves asset name of release tag of repo
// ("org/project") from: each part path-escaped, the "/" of a tag kept as a
// separator (ValidTag allows no empty or dot part).
func DownloadURL(repo, tag, name string) string {
	return "https://github.com/" + repo + "/releases/download/" + escapePath(tag) + "/" + url.PathEscape(name)
}

// TagURL is the page of release tag of repo ("org/project"), escaped as
// DownloadURL escapes it.
func TagURL(repo, tag string) string {
	return "https://github.com/" + repo + "/releases/tag/" + escapePath(tag)
}

// escapePath path-escapes each "/"-separated part of p.
func escapePath(p string) string {
	parts := strings.Split(p, "/")
	for i, s := range parts {
		parts[i] = url.PathEscape(s)
	}
	return strings.Join(parts, "/")
}
