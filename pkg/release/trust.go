package release

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Bounds on a release, in bytes except MaxAssets: what the GitHub source
// keeps of an answer (a longer name or notes are cut, further assets
// dropped), and what Verify holds every release to, wherever it came from.
const (
	MaxTag       = 64
	MaxName      = 200
	MaxNotes     = 65536
	MaxAssetName = 200
	MaxAssets    = 200

	// MaxEncoded bounds a release's JSON as stored (Marshal's bytes): well
	// above what the bounds above allow (about 140 KiB), and far below
	// what would strain a pod. Decode refuses anything longer unread.
	MaxEncoded = 1 << 20
)

// Ellipsis ends a string that was cut to its bound.
const Ellipsis = "…"

// VersionOf is the version a tag names for an app whose tags start with
// prefix (App.TagPrefix, "" for none): the tag without prefix and then
// without one leading "v" or "V". A tag that does not start with prefix, or
// that would leave an empty version, is read as if there were no prefix: the
// tag without one leading "v" or "V". The prefix is matched exactly, letter
// case included (docs/wire.md, "What the fields mean in practice").
func VersionOf(tag, prefix string) string {
	if rest, ok := strings.CutPrefix(tag, prefix); ok && prefix != "" {
		if v := trimV(rest); v != "" {
			return v
		}
	}
	return trimV(tag)
}

// trimV returns s without one leading "v" or "V".
func trimV(s string) string {
	if s != "" && (s[0] == 'v' || s[0] == 'V') {
		return s[1:]
	}
	return s
}

// CleanName returns s as a release keeps its name: without control
// characters and bidirectional formatting characters (Bidi), invalid UTF-8
// as U+FFFD, and cut to limit bytes of whole characters with Ellipsis
// appended when longer. It is safe on untrusted input.
func CleanName(s string, limit int) string { return clean(s, limit, false) }

// CleanNotes returns s as a release keeps its notes: as CleanName does, but
// keeping tab, line feed and carriage return.
func CleanNotes(s string, limit int) string { return clean(s, limit, true) }

// clean is CleanName, or CleanNotes when notes is true.
func clean(s string, limit int, notes bool) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	if strings.ContainsFunc(s, func(r rune) bool { return !allowed(r, notes) }) {
		s = strings.Map(func(r rune) rune {
			if allowed(r, notes) {
				return r
			}
			return -1
		}, s)
	}
	if len(s) <= limit {
		return s
	}
	n := limit
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + Ellipsis
}

// allowed reports whether r may stand in a name (notes false) or notes.
func allowed(r rune, notes bool) bool {
	if notes && (r == '\t' || r == '\n' || r == '\r') {
		return true
	}
	return !unicode.IsControl(r) && !Bidi(r)
}

// goodText reports whether s could be Text's result for limit: valid UTF-8
// of allowed characters, within limit bytes or cut there.
func goodText(s string, limit int, notes bool) bool {
	if !utf8.ValidString(s) || strings.ContainsFunc(s, func(r rune) bool { return !allowed(r, notes) }) {
		return false
	}
	body, cut := strings.CutSuffix(s, Ellipsis)
	return len(s) <= limit || cut && len(body) <= limit
}

// GoodAssetName reports whether name may be offered as a file name: 1 to
// MaxAssetName bytes of valid UTF-8, not starting with ".", with no control
// character, no bidirectional formatting character (Bidi) and none of
// / \ : < > " | ? *.
func GoodAssetName(name string) bool {
	if name == "" || len(name) > MaxAssetName || name[0] == '.' || !utf8.ValidString(name) {
		return false
	}
	for _, r := range name {
		if unicode.IsControl(r) || Bidi(r) || strings.ContainsRune(`/\:<>"|?*`, r) {
			return false
		}
	}
	return true
}

// GoodSHA256 reports whether h is a SHA-256 as served: 64 lowercase hex digits.
func GoodSHA256(h string) bool {
	return len(h) == 64 && strings.Trim(h, "0123456789abcdef") == ""
}

// Verify reports why r is not a release of app (its repository, app.Repo,
// "org/project", and its tag prefix, app.TagPrefix) as the service serves it,
// or nil when it is; a nil r (no release) is one. It is the one check every
// release passes as it comes in, from GitHub once parsed and from Redis once
// decoded, so that nothing downstream checks again:
//
//   - the tag is 1 to MaxTag bytes and ValidTag; the version is VersionOf
//     it with app.TagPrefix;
//   - the name is non-empty and what CleanName leaves, the notes what
//     CleanNotes leaves (MaxName, MaxNotes);
//   - html_url is exactly a page of this release in app.Repo (PageRepo);
//   - published_at, when present, is not the zero time;
//   - at most MaxAssets assets, each with a GoodAssetName, a size of 0 to
//     MaxSizeBytes, a download URL that is exactly its own in app.Repo for the
//     tag (DownloadRepo), a sha256 that is nil or GoodSHA256, and the platform
//     ParseAsset derives from its name.
//
// Every repository must match app.Repo exactly, letter case included. Verify
// is safe for concurrent use.
func Verify(app App, r *Release) error {
	if r == nil {
		return nil
	}
	repo := app.Repo
	switch {
	case r.Tag == "" || len(r.Tag) > MaxTag || !ValidTag(r.Tag):
		return fmt.Errorf("tag %q: not a tag of at most %d bytes", r.Tag, MaxTag)
	case r.Version != VersionOf(r.Tag, app.TagPrefix):
		return fmt.Errorf("version %q: not that of tag %q", r.Version, r.Tag)
	case r.Name == "" || !goodText(r.Name, MaxName, false):
		return errors.New("name: empty, too long, or with a control or bidirectional character")
	case !goodText(r.NotesMarkdown, MaxNotes, true):
		return errors.New("notes: too long, or with a control or bidirectional character")
	case r.PublishedAt != nil && r.PublishedAt.IsZero():
		return errors.New("published_at: the zero time")
	case len(r.Assets) > MaxAssets:
		return fmt.Errorf("%d assets: over %d", len(r.Assets), MaxAssets)
	}
	if got, ok := PageRepo(r.HTMLURL, r.Tag); !ok || got != repo {
		return fmt.Errorf("html_url %q: not the page of release %s of %s", r.HTMLURL, r.Tag, repo)
	}
	for i, a := range r.Assets {
		if err := verifyAsset(repo, r.Tag, a); err != nil {
			return fmt.Errorf("asset %d: %w", i, err)
		}
	}
	return nil
}

func verifyAsset(repo, tag string, a Asset) error {
	switch {
	case !GoodAssetName(a.Name):
		return fmt.Errorf("name %q: not a file name", a.Name)
	case a.SizeBytes < 0 || a.SizeBytes > MaxSizeBytes:
		return fmt.Errorf("size_bytes %d: not 0 to %d", a.SizeBytes, int64(MaxSizeBytes))
	case a.SHA256 != nil && !GoodSHA256(*a.SHA256):
		return errors.New("sha256: not 64 lowercase hex digits")
	case !samePlatform(a.Platform, ParseAsset(a.Name)):
		return fmt.Errorf("platform: not what the name %q says", a.Name)
	}
	if got, ok := DownloadRepo(a.DownloadURL, tag, a.Name); !ok || got != repo {
		return fmt.Errorf("download_url %q: not this asset's in %s", a.DownloadURL, repo)
	}
	return nil
}

func samePlatform(a, b *Platform) bool {
	if a == nil || b == nil {
		return a == b
	}
	return a.OS == b.OS && a.PackageType == b.PackageType &&
		(a.Arch == nil) == (b.Arch == nil) && (a.Arch == nil || *a.Arch == *b.Arch)
}

// Decode reads a release of app as stored, strictly: data must be exactly
// what Marshal writes for a release that Verify accepts for app, or JSON null
// for no release (nil, nil). Anything else is refused with why: over MaxEncoded bytes
// (unread), not JSON, a key unknown, repeated or in another letter case, or
// any other spelling than Marshal's, or a release Verify refuses. It is safe
// on untrusted input and for concurrent use.
func Decode(app App, data []byte) (*Release, error) {
	if len(data) > MaxEncoded {
		return nil, fmt.Errorf("release of %d bytes: over %d", len(data), MaxEncoded)
	}
	var r *Release
	if err := json.Unmarshal(data, &r); err != nil {
		return nil, fmt.Errorf("release: %w", err)
	}
	if err := Verify(app, r); err != nil {
		return nil, fmt.Errorf("release: %w", err)
	}
	// A key in another case, an unknown or repeated one, or any other
	// spelling decodes too: only Marshal's own bytes are this release.
	if canon, err := Marshal(r); err != nil || !bytes.Equal(canon, data) {
		return nil, errors.New("release: not as written (an unknown, repeated or differently-cased key, or other spelling)")
	}
	return r, nil
}
