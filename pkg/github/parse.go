package github

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/storytold/craft-releases/pkg/release"
)

// Bounds on a parsed release (spec/github.md, "Parsing a 200"), in bytes
// except MaxAssets.
const (
	MaxTag       = 64
	MaxName      = 200
	MaxNotes     = 65536
	MaxAssetName = 200
	MaxAssets    = 200
)

// ellipsis ends a cut string.
const ellipsis = "…"

// ghRelease is the part of GitHub's release JSON the service reads. It is
// our own type because go-github v66's ReleaseAsset has no digest.
type ghRelease struct {
	TagName     string        `json:"tag_name"`
	Name        string        `json:"name"`
	Body        string        `json:"body"`
	Draft       bool          `json:"draft"`
	Prerelease  bool          `json:"prerelease"`
	PublishedAt *release.Time `json:"published_at"`
	HTMLURL     string        `json:"html_url"`
	Assets      []ghAsset     `json:"assets"`
}

type ghAsset struct {
	Name               string `json:"name"`
	Size               int64  `json:"size"`
	BrowserDownloadURL string `json:"browser_download_url"`
	Digest             string `json:"digest"`
}

// ParseRelease turns the body of GitHub's latest-release answer for repo
// ("org/project") into the release launchers see. It fails on anything but a
// JSON object, on a known field of the wrong JSON type (null reads as
// absent), on a draft, and on a tag_name that is missing, over MaxTag bytes
// or not release.ValidTag (a git ref name, printable throughout). Unknown
// fields are ignored. Otherwise:
//
//   - version is the tag without one leading "v" or "V";
//   - name is cut to MaxName bytes, or is the tag when empty; notes are the
//     body cut to MaxNotes bytes. A cut string keeps whole UTF-8 characters
//     and has "…" appended (3 bytes past the limit);
//   - html_url is kept only when it is a page under
//     https://github.com/{repo}/releases/ that every URL parser reads the
//     same (release.PageRepo), else it becomes release.TagURL(repo, tag);
//   - assets keep GitHub's order. An asset is dropped when its name is
//     missing, empty, over MaxAssetName bytes, starts with "." or holds a
//     control character, a bidirectional formatting character
//     (release.Bidi) or one of / \ : < > " | ? *; when its size is negative
//     or over release.MaxSizeBytes; or when its browser_download_url is not
//     exactly this asset's download URL (release.DownloadRepo). At most MaxAssets
//     remain, always as a non-nil slice;
//   - sha256 is the digest "sha256:<64 hex digits>" lowercased, else nil;
//     platform is release.ParseAsset of the name.
//
// The repository part of a URL must match repo exactly: another letter case
// is not trusted. ParseRelease is safe for concurrent use.
func ParseRelease(repo string, body []byte) (*release.Release, error) {
	var gr ghRelease
	if err := json.Unmarshal(body, &gr); err != nil {
		return nil, fmt.Errorf("decode release: %w", err)
	}
	switch tag := gr.TagName; {
	case gr.Draft:
		return nil, errors.New("release is a draft")
	case tag == "":
		return nil, errors.New("release has no tag_name")
	case len(tag) > MaxTag:
		return nil, fmt.Errorf("tag_name of %d bytes is over %d", len(tag), MaxTag)
	case !release.ValidTag(tag):
		return nil, fmt.Errorf("tag_name %q is not a valid git ref name", tag)
	}
	tag, version := gr.TagName, gr.TagName
	if tag[0] == 'v' || tag[0] == 'V' {
		version = tag[1:]
	}
	r := &release.Release{
		Tag:           tag,
		Version:       version,
		Name:          cut(gr.Name, MaxName),
		PublishedAt:   gr.PublishedAt,
		HTMLURL:       gr.HTMLURL,
		Prerelease:    gr.Prerelease,
		NotesMarkdown: cut(gr.Body, MaxNotes),
		Assets:        make([]release.Asset, 0, min(len(gr.Assets), MaxAssets)),
	}
	if r.Name == "" {
		r.Name = tag
	}
	if page, ok := release.PageRepo(r.HTMLURL); !ok || page != repo {
		r.HTMLURL = release.TagURL(repo, tag)
	}
	if r.PublishedAt != nil && r.PublishedAt.IsZero() {
		r.PublishedAt = nil
	}
	for _, a := range gr.Assets {
		if len(r.Assets) == MaxAssets {
			break
		}
		if !goodAssetName(a.Name) || a.Size < 0 || a.Size > release.MaxSizeBytes ||
			!trustedDownload(a.BrowserDownloadURL, repo, tag, a.Name) {
			continue
		}
		r.Assets = append(r.Assets, release.Asset{
			Name:        a.Name,
			SizeBytes:   a.Size,
			DownloadURL: a.BrowserDownloadURL,
			SHA256:      sha256Of(a.Digest),
			Platform:    release.ParseAsset(a.Name),
		})
	}
	return r, nil
}

// cut returns s when it fits in limit bytes, else its longest prefix of whole
// characters within limit bytes, followed by the ellipsis (github.md: "cut to
// N bytes … and appends …").
func cut(s string, limit int) string {
	if len(s) <= limit {
		return s
	}
	n := limit
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + ellipsis
}

// goodAssetName reports whether name may be offered as a file name.
func goodAssetName(name string) bool {
	if name == "" || len(name) > MaxAssetName || name[0] == '.' {
		return false
	}
	for _, r := range name {
		if unicode.IsControl(r) || release.Bidi(r) || strings.ContainsRune(`/\:<>"|?*`, r) {
			return false
		}
	}
	return true
}

// trustedDownload reports whether u is exactly the download URL of asset
// name of release tag of repo, the repository in the same letter case.
func trustedDownload(u, repo, tag, name string) bool {
	got, ok := release.DownloadRepo(u, tag, name)
	return ok && got == repo
}

// sha256Of reads a digest "sha256:<64 hex digits>" into lowercase hex, or nil.
func sha256Of(digest string) *string {
	h, ok := strings.CutPrefix(digest, "sha256:")
	if !ok || len(h) != 64 || strings.Trim(h, "0123456789abcdefABCDEF") != "" {
		return nil
	}
	h = strings.ToLower(h)
	return &h
}
