// Package velopack is the Velopack update feed: which release assets are a
// feed (releases.{channel}.json, as vpk uploads them), the feed read
// strictly as Velopack's clients read it (the C# library and the Rust one,
// which the Node.js and other bindings wrap), the check that every package
// it names is an asset of the release that carries it, and the file as
// served, with each package's FileName made an absolute download URL and
// every other byte the publisher's. It is pure: the caller gives it the
// file fetched and digest-checked for a release, and the release
// (docs/updates.md, "Velopack"). Everything is safe for concurrent use.
//
// vpk also uploads, for Squirrel.Windows apps that move to Velopack, a
// legacy file in Squirrel's RELEASES format naming the newest full package:
// to GitHub as RELEASES, for the default Windows channel only; to other
// hosts as RELEASES or RELEASES-{channel}. That file is a Squirrel.Windows
// feed, read by Squirrel's package, not by this one.
package velopack

import (
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strings"

	"github.com/storytold/craft-releases/pkg/release"
)

// MaxFeed bounds a feed, in bytes: Parse refuses a longer one unread, and
// Absolute never returns one. vpk writes about 1 KB per package, its notes
// twice (Markdown and HTML).
const MaxFeed = 1 << 20

// maxChannel bounds a channel's name, in bytes.
const maxChannel = 64

// IsFeed reports whether name is the name of a Velopack feed asset,
// "releases.{channel}.json", and returns its channel. The channel is what
// vpk's --channel allows (a NuGet id: word characters, "." and "-") that
// GitHub keeps in an asset name: 1 to 64 ASCII letters, digits, "_", "."
// and "-", letter case kept ("win", "osx" and "linux" are the clients'
// defaults). Matching is exact and case-sensitive, as the clients request
// the name.
func IsFeed(name string) (channel string, ok bool) {
	c, ok := strings.CutPrefix(name, "releases.")
	if !ok {
		return "", false
	}
	if c, ok = strings.CutSuffix(c, ".json"); !ok || c == "" || len(c) > maxChannel {
		return "", false
	}
	for i := range len(c) {
		if b := c[i]; !alnum(b) && b != '_' && b != '.' && b != '-' {
			return "", false
		}
	}
	return c, true
}

func alnum(b byte) bool { return 'a' <= b && b <= 'z' || 'A' <= b && b <= 'Z' || '0' <= b && b <= '9' }

// The values of Asset.Type.
const (
	TypeFull  = "Full"
	TypeDelta = "Delta"
)

// Feed is a parsed feed: its packages, in the file's order.
type Feed struct {
	Assets []Asset
}

// Asset is one package of a feed, as Parse read it; each field is the
// value of the key of its name in the file ("PackageId" for PackageID), ""
// or 0 when the file leaves out an optional one.
type Asset struct {
	PackageID     string // the app's id: a NuGet id
	Version       string // SemVer 2.0.0, no leading "v"
	Type          string // TypeFull or TypeDelta
	FileName      string // the package: a file name, or an absolute URL
	SHA1          string // 40 hex digits, letter case as written
	SHA256        string // 64 hex digits, or "" when absent
	Size          int64  // bytes, 0 to release.MaxSizeBytes
	NotesMarkdown string
	NotesHTML     string // the value of "NotesHTML" (what vpk writes) or "NotesHtml"
}

// Check reports why f may not be served for the release rel, or nil when
// it may: every FileName names an asset of rel, either by its name
// exactly (a release.GoodAssetName) or by its download URL exactly
// (rel's Asset.DownloadURL), and agrees with what GitHub says of that
// asset: its Size is the asset's size and its SHA256, when both are known,
// the asset's digest (in either letter case). Anything else is an error
// naming the package: a URL on another host or into another repository, a
// path, "..", or a name that is no asset of rel. A nil rel is an error.
func Check(f Feed, rel *release.Release) error {
	_, err := resolve(f, rel)
	return err
}

// resolve returns, for each package of f, rel's asset that it names, or
// Check's error.
func resolve(f Feed, rel *release.Release) ([]*release.Asset, error) {
	if rel == nil {
		return nil, errors.New("no release")
	}
	found := make([]*release.Asset, len(f.Assets))
	for i, a := range f.Assets {
		x, err := assetOf(a.FileName, rel)
		if err != nil {
			return nil, fmt.Errorf("asset %d: FileName %s: %w", i, clip(a.FileName), err)
		}
		if err := agrees(a, x); err != nil {
			return nil, fmt.Errorf("asset %d: %w", i, err)
		}
		found[i] = x
	}
	return found, nil
}

// assetOf returns the asset of rel that name (a FileName) names, or why
// there is none.
func assetOf(name string, rel *release.Release) (*release.Asset, error) {
	for i := range rel.Assets {
		x := &rel.Assets[i]
		if name == x.Name && release.GoodAssetName(name) || name == x.DownloadURL {
			return x, nil
		}
	}
	u, err := url.Parse(name)
	if strings.Contains(name, "://") || strings.HasPrefix(name, "//") || err == nil && u.Scheme != "" {
		if err != nil || u.Scheme != "https" || u.Host != "github.com" {
			return nil, errors.New("not a URL on https://github.com")
		}
		if repo := repoOf(rel); repo == "" || !strings.HasPrefix(u.EscapedPath(), "/"+repo+"/") {
			return nil, errors.New("a URL outside the release's repository")
		}
		return nil, fmt.Errorf("the download URL of no asset of %s", rel.Tag)
	}
	if strings.ContainsAny(name, `/\`) || strings.Contains(name, "..") {
		return nil, errors.New("a path, not a file name")
	}
	return nil, fmt.Errorf("no asset of %s", rel.Tag)
}

// repoOf returns the repository ("org/project") of rel's download URLs, ""
// when it has none.
func repoOf(rel *release.Release) string {
	for _, x := range rel.Assets {
		if repo, ok := release.DownloadRepo(x.DownloadURL, rel.Tag, x.Name); ok {
			return repo
		}
	}
	return ""
}

// agrees reports why a does not describe the asset x, if it does not.
func agrees(a Asset, x *release.Asset) error {
	if a.Size != x.SizeBytes {
		return fmt.Errorf("its Size is %d, but %s is %d bytes", a.Size, clip(x.Name), x.SizeBytes)
	}
	if a.SHA256 != "" && x.SHA256 != nil && !strings.EqualFold(a.SHA256, *x.SHA256) {
		return fmt.Errorf("its SHA256 is %s, but %s has %s", a.SHA256, clip(x.Name), *x.SHA256)
	}
	return nil
}

// Absolute returns body, a feed that Parse read as f, with the value of
// each FileName replaced by the download URL of rel's asset it names
// (Check's rules): every other byte, the hashes, the notes, the keys and
// their order, white space and escapes, is body's. Absolute parses body
// again, so an f that is not body's is an error; so are Check's errors,
// and a result longer than MaxFeed. Parse reads the result as f with
// absolute FileNames.
//
// The values are replaced in place, at the offsets the JSON decoder read
// them from, rather than the feed re-encoded: an encoder would drop the
// keys the clients ignore but the publisher wrote, and rewrite escapes,
// indentation and key spellings ("NotesHTML" or "NotesHtml") that a client
// may depend on.
func Absolute(body []byte, f Feed, rel *release.Release) ([]byte, error) {
	g, spans, err := parse(body)
	if err != nil {
		return nil, err
	}
	if !slices.Equal(g.Assets, f.Assets) {
		return nil, errors.New("the feed is not the file's")
	}
	found, err := resolve(f, rel)
	if err != nil {
		return nil, err
	}
	out := make([]byte, 0, len(body)+len(found)*128)
	last := 0
	for i, sp := range spans {
		out = append(out, body[last:sp.start]...)
		out = appendString(out, found[i].DownloadURL)
		last = sp.end
	}
	out = append(out, body[last:]...)
	if len(out) > MaxFeed {
		return nil, fmt.Errorf("%d bytes with absolute URLs, over %d", len(out), MaxFeed)
	}
	return out, nil
}
