package fakegithub

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/storytold/craft-releases/pkg/release"
)

// Release is a release as GitHub's REST API returns it: the fields the
// service reads, and a few it ignores, as GitHub spells them.
type Release struct {
	ID              int64      `json:"id"`
	NodeID          string     `json:"node_id"`
	URL             string     `json:"url"`
	HTMLURL         string     `json:"html_url"`
	TagName         string     `json:"tag_name"`
	TargetCommitish string     `json:"target_commitish"`
	Name            string     `json:"name"`
	Body            string     `json:"body"`
	Draft           bool       `json:"draft"`
	Prerelease      bool       `json:"prerelease"`
	CreatedAt       *time.Time `json:"created_at"`
	PublishedAt     *time.Time `json:"published_at"`
	Author          *User      `json:"author,omitempty"`
	Assets          []Asset    `json:"assets"`
	TarballURL      string     `json:"tarball_url"`
	ZipballURL      string     `json:"zipball_url"`
}

// Asset is one file of a Release. An empty Digest is left out of the JSON.
type Asset struct {
	ID                 int64  `json:"id"`
	Name               string `json:"name"`
	Label              string `json:"label"`
	ContentType        string `json:"content_type"`
	State              string `json:"state"`
	Size               int64  `json:"size"`
	Digest             string `json:"digest,omitempty"` // "sha256:<64 hex>"
	DownloadCount      int64  `json:"download_count"`
	BrowserDownloadURL string `json:"browser_download_url"`

	// Content, when not nil, is what the asset endpoint serves for the
	// asset (GET /repos/{org}/{project}/releases/assets/{id}); an asset
	// without it answers 404 there.
	Content []byte `json:"-"`
}

// User is a release's author.
type User struct {
	Login string `json:"login"`
	ID    int64  `json:"id"`
	Type  string `json:"type"`
}

// JSON returns the bytes the fake serves for r.
func (r Release) JSON() []byte {
	b, err := json.Marshal(r)
	if err != nil {
		panic(fmt.Sprintf("fakegithub: encode release: %v", err))
	}
	return b
}

// NewRelease returns a well-formed, published release of repo ("org/project")
// tagged tag, with notes and one asset per kind of package a Craft App ships
// plus a checksum file, each named as docs/assets.md expects, with a download URL
// under the repository and a sha256 digest. The same repo and tag always give
// the same release.
func NewRelease(repo, tag string) Release {
	_, project, _ := strings.Cut(repo, "/")
	version := strings.TrimPrefix(strings.TrimPrefix(tag, "v"), "V")
	published := time.Date(2026, 10, 8, 14, 52, 50, 0, time.UTC)
	created := published.Add(-10 * time.Minute)
	names := []string{
		project + "-" + version + "-windows-x64.msi",
		project + "-" + version + "-windows-arm64.msi",
		project + "-" + version + "-windows-x64-portable.zip",
		project + "-" + version + "-macos-universal.dmg",
		project + "-cli-" + version + "-macos-universal.zip",
		project + "-" + version + "-linux-x86_64.AppImage",
		project + "-" + version + "-linux-x86_64.AppImage.zsync",
		project + "-" + version + "-linux-aarch64.deb",
		project + "-" + version + "-linux-x86_64.tar.gz",
		project + "-web-" + version + ".zip",
		"SHA256SUMS.txt",
	}
	assets := make([]Asset, len(names))
	for i, name := range names {
		sum := sha256.Sum256([]byte(repo + "/" + tag + "/" + name))
		assets[i] = Asset{
			ID:                 int64(1000 + i),
			Name:               name,
			ContentType:        "application/octet-stream",
			State:              "uploaded",
			Size:               int64(1<<20 + 4096*i),
			Digest:             "sha256:" + hex.EncodeToString(sum[:]),
			DownloadCount:      int64(7 * i),
			BrowserDownloadURL: release.DownloadURL(repo, tag, name),
		}
	}
	return Release{
		ID:              42,
		NodeID:          "RE_kwDOFake",
		URL:             "https://api.github.com/repos/" + repo + "/releases/42",
		HTMLURL:         release.TagURL(repo, tag),
		TagName:         tag,
		TargetCommitish: "main",
		Name:            project + " " + tag,
		Body: "## What's changed\n\n* Faster start-up\n* Fixed a crash when opening large files\n\n" +
			"**Full Changelog**: https://github.com/" + repo + "/commits/" + tag,
		CreatedAt:   &created,
		PublishedAt: &published,
		Author:      &User{Login: "github-actions[bot]", ID: 41898282, Type: "Bot"},
		Assets:      assets,
		TarballURL:  "https://api.github.com/repos/" + repo + "/tarball/" + tag,
		ZipballURL:  "https://api.github.com/repos/" + repo + "/zipball/" + tag,
	}
}
