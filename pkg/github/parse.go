package github

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/storytold/craft-releases/pkg/release"
)

// Bounds on a parsed release, in bytes except MaxAssets: release's, which
// every release is held to.
const (
	MaxTag       = release.MaxTag
	MaxName      = release.MaxName
	MaxNotes     = release.MaxNotes
	MaxAssetName = release.MaxAssetName
	MaxAssets    = release.MaxAssets
)

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
	ID                 int64  `json:"id"`
	Name               string `json:"name"`
	Size               int64  `json:"size"`
	BrowserDownloadURL string `json:"browser_download_url"`
	Digest             string `json:"digest"`
}

// ParseRelease turns the body of GitHub's latest-release answer for app's
// repository into the release launchers see, under the rules of
// docs/github.md, "Parsing a 200": it fails on a body that is not a release
// (not a JSON object, a known field of the wrong type, a draft, a bad tag),
// and otherwise bounds every field and drops every asset it cannot trust.
// What it returns passes release.Verify for app, which it checks last.
// ParseRelease is safe for concurrent use.
func ParseRelease(app release.App, body []byte) (*release.Release, error) {
	rel, _, err := parseRelease(app, body)
	return rel, err
}

// parseRelease is ParseRelease that also returns what fetching each kept
// asset needs, by name, for the assets GitHub gave an id.
func parseRelease(app release.App, body []byte) (*release.Release, map[string]release.AssetRef, error) {
	var gr ghRelease
	if err := json.Unmarshal(body, &gr); err != nil {
		return nil, nil, fmt.Errorf("decode release: %w", err)
	}
	switch tag := gr.TagName; {
	case gr.Draft:
		return nil, nil, errors.New("release is a draft")
	case tag == "":
		return nil, nil, errors.New("release has no tag_name")
	case len(tag) > MaxTag:
		return nil, nil, fmt.Errorf("tag_name of %d bytes is over %d", len(tag), MaxTag)
	case !release.ValidTag(tag):
		return nil, nil, fmt.Errorf("tag_name %q is not a valid git ref name", tag)
	}
	tag, repo := gr.TagName, app.Repo
	r := &release.Release{
		Tag:           tag,
		Version:       release.VersionOf(tag, app.TagPrefix),
		Name:          release.CleanName(gr.Name, MaxName),
		PublishedAt:   gr.PublishedAt,
		HTMLURL:       gr.HTMLURL,
		Prerelease:    gr.Prerelease,
		NotesMarkdown: release.CleanNotes(gr.Body, MaxNotes),
		Assets:        make([]release.Asset, 0, min(len(gr.Assets), MaxAssets)),
	}
	refs := make(map[string]release.AssetRef)
	if r.Name == "" {
		r.Name = tag
	}
	if page, ok := release.PageRepo(r.HTMLURL, tag); !ok || page != repo {
		r.HTMLURL = release.TagURL(repo, tag)
	}
	if r.PublishedAt != nil && r.PublishedAt.IsZero() {
		r.PublishedAt = nil
	}
	for _, a := range gr.Assets {
		if len(r.Assets) == MaxAssets {
			break
		}
		if !release.GoodAssetName(a.Name) || a.Size < 0 || a.Size > release.MaxSizeBytes ||
			!trustedDownload(a.BrowserDownloadURL, repo, tag, a.Name) {
			continue
		}
		sum := sha256Of(a.Digest)
		r.Assets = append(r.Assets, release.Asset{
			Name:        a.Name,
			SizeBytes:   a.Size,
			DownloadURL: a.BrowserDownloadURL,
			SHA256:      sum,
			Platform:    release.ParseAsset(a.Name),
		})
		if _, dup := refs[a.Name]; a.ID > 0 && !dup {
			ref := release.AssetRef{ID: a.ID, Size: a.Size}
			if sum != nil {
				ref.SHA256 = *sum
			}
			refs[a.Name] = ref
		}
	}
	if err := release.Verify(app, r); err != nil {
		return nil, nil, fmt.Errorf("parsed release: %w", err)
	}
	return r, refs, nil
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
	if h = strings.ToLower(h); !ok || !release.GoodSHA256(h) {
		return nil
	}
	return &h
}

// listed is what ParsePrereleases reads of every release of a list before
// choosing one.
type listed struct {
	Draft       bool          `json:"draft"`
	Prerelease  bool          `json:"prerelease"`
	PublishedAt *release.Time `json:"published_at"`
}

// ParsePrereleases turns the body of GitHub's release list for app (GET
// …/releases?per_page=ListSize) into its newest pre-release, as
// ParseRelease returns it, or nil when there is none: of the first
// ListSize releases, the one with the latest published_at among those that
// are not drafts, are marked prerelease and have a published_at (the first
// listed of equals), unless a dated stable release of the list (no draft,
// no prerelease) was published at the same time or after it. The list is
// then its own proof that the pre-release is superseded, even while
// releases/latest still serves an older stable release (a pre-release
// promoted in place). It fails on anything but a JSON array of objects, on
// a draft, prerelease or published_at of the wrong JSON type in any of
// them, and when the one chosen fails ParseRelease, so that a bad answer
// never replaces a good pre-release with an older one. Releases past
// ListSize are not read. It is safe for concurrent use; see docs/github.md,
// "Parsing the release list".
func ParsePrereleases(app release.App, body []byte) (*release.Release, error) {
	rel, _, err := parsePrereleases(app, body)
	return rel, err
}

// parsePrereleases is ParsePrereleases that also returns the chosen
// release's asset refs, as parseRelease.
func parsePrereleases(app release.App, body []byte) (*release.Release, map[string]release.AssetRef, error) {
	list, err := decodeList(body)
	if err != nil {
		return nil, nil, err
	}
	newest, stable := -1, false
	var newestAt, stableAt release.Time
	for i, l := range list {
		if l.Draft || l.PublishedAt == nil || l.PublishedAt.IsZero() {
			continue
		}
		if !l.Prerelease {
			if !stable || l.PublishedAt.After(stableAt.Time) {
				stable, stableAt = true, *l.PublishedAt
			}
			continue
		}
		if newest < 0 || l.PublishedAt.After(newestAt.Time) {
			newest, newestAt = i, *l.PublishedAt
		}
	}
	if newest < 0 || stable && !newestAt.After(stableAt.Time) {
		return nil, nil, nil
	}
	rel, refs, err := parseRelease(app, list[newest].raw)
	if err != nil {
		return nil, nil, fmt.Errorf("release %d of the list: %w", newest, err)
	}
	return rel, refs, nil
}

// listedRelease is one release of a list: what is read of it before
// choosing, and its JSON.
type listedRelease struct {
	listed
	raw json.RawMessage
}

// decodeList reads the first ListSize releases of a release list. It fails
// on anything but a JSON array of objects, and on a draft, prerelease or
// published_at of the wrong JSON type in any of those read.
func decodeList(body []byte) ([]listedRelease, error) {
	var list []json.RawMessage
	if err := json.Unmarshal(body, &list); err != nil {
		return nil, fmt.Errorf("decode release list: %w", err)
	}
	if list == nil {
		return nil, errors.New("decode release list: null, not an array")
	}
	out := make([]listedRelease, 0, min(len(list), ListSize))
	for i, raw := range list[:min(len(list), ListSize)] {
		l := listedRelease{raw: raw}
		if len(raw) == 0 || raw[0] != '{' {
			return nil, fmt.Errorf("decode release %d of the list: not an object", i)
		}
		if err := json.Unmarshal(raw, &l.listed); err != nil {
			return nil, fmt.Errorf("decode release %d of the list: %w", i, err)
		}
		out = append(out, l)
	}
	return out, nil
}

// ParseHistory turns the body of GitHub's release list for app (GET
// …/releases?per_page=ListSize) into its history: of the first ListSize
// releases, those that are not drafts and have a published_at, each as
// ParseRelease returns it, newest first (release.NewHistory). A release of
// the list that ParseRelease refuses (a bad tag, say) is left out, and the
// others kept; an asset it cannot trust is dropped from its release, as
// ParseRelease drops it. It fails, as ParsePrereleases does, on anything
// but a JSON array of objects and on a draft, prerelease or published_at of
// the wrong JSON type in any of them, so that a bad answer never replaces a
// good history. It is safe for concurrent use; see docs/github.md,
// "Parsing the release list".
func ParseHistory(app release.App, body []byte) (*release.History, error) {
	h, _, err := parseHistory(app, body)
	return h, err
}

// parseHistory is ParseHistory that also returns the asset refs of each
// release kept, by tag.
func parseHistory(app release.App, body []byte) (*release.History, map[string]map[string]release.AssetRef, error) {
	list, err := decodeList(body)
	if err != nil {
		return nil, nil, err
	}
	var rels []*release.Release
	refs := make(map[string]map[string]release.AssetRef)
	for _, l := range list {
		if l.Draft || l.PublishedAt == nil || l.PublishedAt.IsZero() {
			continue
		}
		rel, r, err := parseRelease(app, l.raw)
		if err != nil {
			continue
		}
		if _, dup := refs[rel.Tag]; dup {
			continue
		}
		rels = append(rels, rel)
		refs[rel.Tag] = r
	}
	h := release.NewHistory(rels)
	for tag := range refs {
		if !slices.Contains(h.Tags(), tag) {
			delete(refs, tag)
		}
	}
	return h, refs, nil
}
