// Package companion knows the companion assets of a release that the
// updater feeds serve: which assets are companions, how many bytes each may
// have, and how each is read at the door, the way its client reads it
// (docs/updates.md, "What the service checks"). Pollers fetch what Names
// lists, keep what Check returns, and every reader checks it again. It is
// pure and safe for concurrent use.
package companion

import (
	"fmt"
	"slices"

	"github.com/storytold/craft-releases/pkg/minisign"
	"github.com/storytold/craft-releases/pkg/release"
	"github.com/storytold/craft-releases/pkg/updates/electron"
	"github.com/storytold/craft-releases/pkg/updates/squirrel"
	"github.com/storytold/craft-releases/pkg/updates/tauri"
	"github.com/storytold/craft-releases/pkg/updates/velopack"
)

// MaxStored bounds the companions of one release as stored, names and JSON
// included: a reader reads no more (docs/redis.md, "What a reader refuses").
const MaxStored = 4 << 20

// kind is one kind of companion: the names of rel's assets it takes, its
// bound, how its bytes are read into the text kept, and, for a file a feed
// serves, how that text is served and as what.
type kind struct {
	names func(rel *release.Release) []string
	limit int64
	check func(rel *release.Release, body []byte, key *minisign.PublicKey) (string, error)

	serve       func(rel *release.Release, text string) ([]byte, error) // nil: not served as a file
	contentType string
}

var kinds = [...]kind{
	{names: tauri.Companions, limit: minisign.MaxSignatureText, check: checkSignature},
	{names: assetsWhere(squirrel.IsReleases), limit: squirrel.MaxReleases, check: passedThrough(squirrel.Parse, squirrel.Releases.Check),
		serve: serveReleases, contentType: "text/plain; charset=utf-8"},
	{names: assetsWhere(isVelopackFeed), limit: velopack.MaxFeed, check: passedThrough(velopack.Parse, velopack.Check),
		serve: serveVelopack, contentType: "application/json"},
	{names: assetsWhere(electron.IsChannelFile), limit: electron.MaxFile, check: passedThrough(electron.Parse, electron.Check),
		serve: serveChannelFile, contentType: "text/yaml; charset=utf-8"},
}

// Names returns the companions of rel, every kind's, in rel's asset order
// and at most release.MaxCompanions of them: the assets to fetch for rel. A
// nil rel has none.
func Names(rel *release.Release) []string {
	if rel == nil {
		return nil
	}
	var names []string
	for _, k := range kinds {
		names = append(names, k.names(rel)...)
	}
	order := func(name string) int {
		return slices.IndexFunc(rel.Assets, func(a release.Asset) bool { return a.Name == name })
	}
	slices.SortStableFunc(names, func(a, b string) int { return order(a) - order(b) })
	return names[:min(len(names), release.MaxCompanions)]
}

// Files returns the companions of rel that a feed serves as files
// (Serve), in Names' order.
func Files(rel *release.Release) []string {
	var files []string
	for _, name := range Names(rel) {
		if k, _ := kindOf(rel, name); k.serve != nil {
			files = append(files, name)
		}
	}
	return files
}

// kindOf returns the kind of rel's companion name.
func kindOf(rel *release.Release, name string) (kind, bool) {
	for _, k := range kinds {
		if rel != nil && slices.Contains(k.names(rel), name) {
			return k, true
		}
	}
	return kind{}, false
}

// Limit returns the most bytes rel's companion name may have; 0 for a name
// that is no companion of rel.
func Limit(rel *release.Release, name string) int64 {
	k, _ := kindOf(rel, name)
	return k.limit
}

// Check reads body, the bytes of rel's companion name, as its client reads
// them, and returns the text to keep: for a Tauri .sig, the signature's
// line of base64, signed by key when key is not nil. Bytes its client would
// refuse, a name that is no companion of rel, or more than its Limit are an
// error saying why.
func Check(rel *release.Release, name string, body []byte, key *minisign.PublicKey) (string, error) {
	k, ok := kindOf(rel, name)
	switch {
	case !ok:
		return "", fmt.Errorf("%q is no companion of the release", name)
	case int64(len(body)) > k.limit:
		return "", fmt.Errorf("%d bytes, over %d", len(body), k.limit)
	}
	return k.check(rel, body, key)
}

// checkSignature reads a Tauri .sig: a minisign signature, by key when key
// is not nil.
func checkSignature(_ *release.Release, body []byte, key *minisign.PublicKey) (string, error) {
	s, err := minisign.ParseSignature(body)
	if err != nil {
		return "", err
	}
	if key != nil {
		if err := key.Check(s); err != nil {
			return "", err
		}
	}
	return s.Text, nil
}

// A File is a companion a feed serves as it is, but for its URLs, which are
// made absolute: Squirrel.Windows' RELEASES, Velopack's feeds,
// electron-updater's channel files.
type File struct {
	Body        []byte // what is served
	ContentType string
}

// Serve returns the file a feed serves for rel's companion name whose text
// is text (as Check returned it); ok is false for a companion that is not
// served as a file (a Tauri .sig). An error means text no longer passes,
// which Check rules out.
func Serve(rel *release.Release, name, text string) (f File, ok bool, err error) {
	k, found := kindOf(rel, name)
	if !found || k.serve == nil {
		return File{}, false, nil
	}
	body, err := k.serve(rel, text)
	return File{Body: body, ContentType: k.contentType}, true, err
}

// serveReleases is a RELEASES file with every package's GitHub URL.
func serveReleases(rel *release.Release, text string) ([]byte, error) {
	r, err := squirrel.Parse([]byte(text))
	if err != nil {
		return nil, err
	}
	return r.Absolute(rel)
}

// serveVelopack is a Velopack feed with every FileName a GitHub URL.
func serveVelopack(rel *release.Release, text string) ([]byte, error) {
	f, err := velopack.Parse([]byte(text))
	if err != nil {
		return nil, err
	}
	return velopack.Absolute([]byte(text), f, rel)
}

// serveChannelFile is a channel file with every relative download its
// asset's GitHub URL.
func serveChannelFile(rel *release.Release, text string) ([]byte, error) {
	return electron.Absolute([]byte(text), rel)
}

// assetsWhere lists, in rel's order, the names of rel's assets for which
// is reports true.
func assetsWhere(is func(name string) bool) func(rel *release.Release) []string {
	return func(rel *release.Release) []string {
		var names []string
		for _, a := range rel.Assets {
			if is(a.Name) {
				names = append(names, a.Name)
			}
		}
		return names
	}
}

func isVelopackFeed(name string) bool {
	_, ok := velopack.IsFeed(name)
	return ok
}

// passedThrough is the check of a file kept as it is: parse reads it as its
// client does, and check holds what it read to the release.
func passedThrough[T any](parse func([]byte) (T, error), check func(T, *release.Release) error) func(*release.Release, []byte, *minisign.PublicKey) (string, error) {
	return func(rel *release.Release, body []byte, _ *minisign.PublicKey) (string, error) {
		f, err := parse(body)
		if err == nil {
			err = check(f, rel)
		}
		if err != nil {
			return "", err
		}
		return string(body), nil
	}
}
