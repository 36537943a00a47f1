package config

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/storytold/craft-releases/pkg/release"
)

// DefaultApps returns the 13 Craft Apps of docs/config.md in that table's order.
// Each call returns a new slice.
func DefaultApps() []release.App {
	return []release.App{
		{Key: "photocraft", Name: "PhotoCraft", Repo: "storytold/photocraft"},
		{Key: "vectorcraft", Name: "VectorCraft", Repo: "storytold/vectorcraft"},
		{Key: "filmcraft", Name: "FilmCraft", Repo: "storytold/filmcraft"},
		{Key: "lightcraft", Name: "LightCraft", Repo: "storytold/lightcraft"},
		{Key: "pdfcraft", Name: "PdfCraft", Repo: "storytold/pdfcraft"},
		{Key: "effectcraft", Name: "EffectCraft", Repo: "storytold/effectcraft"},
		{Key: "designcraft", Name: "DesignCraft", Repo: "storytold/designcraft"},
		{Key: "wordcraft", Name: "WordCraft", Repo: "storytold/wordcraft"},
		{Key: "deckcraft", Name: "DeckCraft", Repo: "storytold/deckcraft"},
		{Key: "gridcraft", Name: "GridCraft", Repo: "storytold/gridcraft"},
		{Key: "cadcraft", Name: "CADCraft", Repo: "storytold/cadcraft"},
		{Key: "soundcraft", Name: "SoundCraft", Repo: "storytold/soundcraft"},
		{Key: "artcraft-launcher", Name: "ArtCraft Launcher", Repo: "storytold/craft-launcher"},
	}
}

// ParseApps parses an app list, "key=Name=org/repo,key=Name=org/repo,…", in
// its order. Entries and their parts are trimmed, and empty entries (a
// trailing comma) are skipped. The key is lowercased and may hold only
// a-z, 0-9, '.', '_' and '-', so that it is safe in a Redis key and a JSON
// key; the name must not be empty; the repo is exactly "org/project", each
// part of letters, digits, '.', '_' and '-' as GitHub allows. A blank s gives
// DefaultApps. A malformed entry or a repeated key is an error that quotes
// the entry.
func ParseApps(s string) ([]release.App, error) {
	if strings.TrimSpace(s) == "" {
		return DefaultApps(), nil
	}
	var apps []release.App
	seen := make(map[string]bool)
	for entry := range strings.SplitSeq(s, ",") {
		entry = strings.TrimSpace(entry)
		if entry == "" {
			continue
		}
		app, err := parseApp(entry)
		if err != nil {
			return nil, fmt.Errorf("entry %q: %w", entry, err)
		}
		if seen[app.Key] {
			return nil, fmt.Errorf("entry %q: key %q is already listed", entry, app.Key)
		}
		seen[app.Key] = true
		apps = append(apps, app)
	}
	if len(apps) == 0 {
		return nil, errors.New("no app listed; leave it empty for the default apps")
	}
	return apps, nil
}

func parseApp(entry string) (release.App, error) {
	parts := strings.Split(entry, "=")
	if len(parts) != 3 {
		return release.App{}, errors.New("want key=Name=org/repo")
	}
	key := strings.TrimSpace(parts[0])
	name := strings.TrimSpace(parts[1])
	repo := strings.TrimSpace(parts[2])
	switch {
	case key == "":
		return release.App{}, errors.New("empty key")
	case !release.SafeName(key):
		// Checked before lowercasing: strings.ToLower maps some non-ASCII
		// letters (the Kelvin sign) onto ASCII ones.
		return release.App{}, fmt.Errorf("key %q may hold only a-z, 0-9, '.', '_' and '-'", key)
	case name == "":
		return release.App{}, errors.New("empty name")
	case !validName(name):
		return release.App{}, fmt.Errorf("name %q holds a control character or invalid UTF-8", name)
	case !release.ValidRepo(repo):
		return release.App{}, fmt.Errorf("repo %q is not org/project", repo)
	}
	return release.App{Key: strings.ToLower(key), Name: name, Repo: repo}, nil
}

func validName(name string) bool {
	return utf8.ValidString(name) && strings.IndexFunc(name, unicode.IsControl) < 0
}

// WithPrereleases returns apps with the pre-release channel
// (App.Prereleases) of the apps that s lists: their keys separated by
// commas, each trimmed and compared in lowercase, or "*" for every app; a
// blank s lists none. A key that is not one of apps, or listed twice, is an
// error that names it.
func WithPrereleases(apps []release.App, s string) ([]release.App, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return apps, nil
	}
	out := slices.Clone(apps)
	if s == "*" {
		for i := range out {
			out[i].Prereleases = true
		}
		return out, nil
	}
	for key := range strings.SplitSeq(s, ",") {
		key = strings.TrimSpace(key)
		if key == "" {
			continue
		}
		i := slices.IndexFunc(out, func(a release.App) bool { return release.SafeName(key) && a.Key == strings.ToLower(key) })
		switch {
		case key == "*":
			return nil, errors.New("* stands alone: every app, or a list of keys")
		case i < 0:
			return nil, fmt.Errorf("key %q is not one of CRAFT_APPS_RELEASE_APPS's", key)
		case out[i].Prereleases:
			return nil, fmt.Errorf("key %q is listed twice", key)
		}
		out[i].Prereleases = true
	}
	return out, nil
}

// WithTagPrefixes returns apps with the tag prefixes (App.TagPrefix) that s
// gives: "key=prefix" entries separated by commas, each part trimmed, the
// key compared in lowercase; a blank s gives none, and an app without a
// prefix keeps the version rule of an app without one
// (release.VersionOf). A malformed entry, a key that is not one of apps or
// is listed twice, and an empty prefix or one that is not
// release.GoodTagPrefix are errors that name the key or quote the entry.
func WithTagPrefixes(apps []release.App, s string) ([]release.App, error) {
	entries, err := appEntries(apps, s, "key=prefix")
	if err != nil || len(entries) == 0 {
		return apps, err
	}
	out := slices.Clone(apps)
	for _, e := range entries {
		switch {
		case e.value == "":
			return nil, fmt.Errorf("key %q: empty prefix", e.given)
		case !release.GoodTagPrefix(e.value):
			return nil, fmt.Errorf("key %q: prefix %q is not 1 to %d bytes of printable ASCII without space, ',' or '=' that can begin a git tag",
				e.given, e.value, release.MaxTagPrefix)
		}
		out[e.app].TagPrefix = e.value
	}
	return out, nil
}

// appEntry is one key=value entry of a per-app list: the app's index, the
// key as given, and the value.
type appEntry struct {
	app          int
	given, value string
}

// appEntries reads s, "key=value" entries of apps separated by commas, each
// part trimmed and the key compared in lowercase; a blank s gives none. An
// entry without '=' (want names the form, such as "key=prefix"), a key that
// is not one of apps and a key listed twice are errors naming the entry or
// the key.
func appEntries(apps []release.App, s, want string) ([]appEntry, error) {
	var out []appEntry
	seen := map[int]bool{}
	for entry := range strings.SplitSeq(s, ",") {
		entry = strings.TrimSpace(entry)
		if entry == "" {
			continue
		}
		key, value, ok := strings.Cut(entry, "=")
		if !ok {
			return nil, fmt.Errorf("entry %q: want %s", entry, want)
		}
		key, value = strings.TrimSpace(key), strings.TrimSpace(value)
		i := slices.IndexFunc(apps, func(a release.App) bool { return release.SafeName(key) && a.Key == strings.ToLower(key) })
		switch {
		case i < 0:
			return nil, fmt.Errorf("key %q is not one of CRAFT_APPS_RELEASE_APPS's", key)
		case seen[i]:
			return nil, fmt.Errorf("key %q is listed twice", key)
		}
		seen[i] = true
		out = append(out, appEntry{app: i, given: key, value: value})
	}
	return out, nil
}
