package electron

import (
	"bytes"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/storytold/craft-releases/pkg/release"
)

// Check reports whether every download of f (each files[i].url, the legacy
// path, each packages.<arch>.path) is an asset of rel: its name exactly
// (relative, as electron-builder writes it), or its DownloadURL exactly.
// Anything else is an error naming the download: a file the release does
// not carry, a URL to another host or another repository, a path with
// "..", a name escaped another way. A nil rel has no assets.
func Check(f File, rel *release.Release) error {
	if rel == nil {
		return errors.New("no release")
	}
	check := func(name, u string) error {
		if _, ok := asset(rel, u); !ok {
			return fmt.Errorf("%s %q: neither an asset of %s nor the download URL of one", name, clip(u), rel.Tag)
		}
		return nil
	}
	for i, d := range f.Files {
		if err := check(fmt.Sprintf("files[%d].url", i), d.URL); err != nil {
			return err
		}
	}
	if f.Path != "" {
		if err := check("path", f.Path); err != nil {
			return err
		}
	}
	for _, p := range f.Packages {
		if err := check("packages."+clip(p.Arch)+".path", p.Path); err != nil {
			return err
		}
	}
	return nil
}

// asset returns the download URL of the asset of rel whose name or
// download URL u is.
func asset(rel *release.Release, u string) (string, bool) {
	for _, a := range rel.Assets {
		if u == a.Name || u == a.DownloadURL {
			return a.DownloadURL, true
		}
	}
	return "", false
}

// Absolute returns body, a channel file of the release rel, as served: each
// download that is an asset's name replaced by that asset's DownloadURL,
// every other byte as the publisher wrote it (the sha512 values, the other
// keys, their order, the comments). The error is Parse's (body is more than
// MaxFile bytes, or refused) or Check's (a download is not rel's).
//
// The text is edited where each download's scalar is, in the scalar's
// style (a plain one becomes single-quoted only where the URL could not be
// plain), rather than the file re-serialised: a serialiser rewrites
// indentation, quoting, line breaks in long notes and comments, and what
// the updater then reads would be this package's YAML, not the
// publisher's. The result is parsed again and must say what body says with
// the absolute URLs, or Absolute fails. It may be longer than MaxFile.
func Absolute(body []byte, rel *release.Release) ([]byte, error) {
	if len(body) > MaxFile {
		return nil, fmt.Errorf("larger than %d bytes", MaxFile)
	}
	f, spans, err := parse(body)
	if err != nil {
		return nil, err
	}
	if err := Check(f, rel); err != nil {
		return nil, err
	}
	want := f
	want.Files, want.Packages = slices.Clone(f.Files), slices.Clone(f.Packages)
	var out bytes.Buffer
	last := 0
	for _, s := range spans {
		u := want.download(s)
		abs, _ := asset(rel, *u)
		if abs == *u {
			continue // already absolute: as written
		}
		*u = abs
		out.Write(body[last:s.start])
		out.WriteString(scalar(*u, s.style, s.flow))
		last = s.end
	}
	out.Write(body[last:])
	served := out.Bytes()
	got, _, err := parse(served)
	if err != nil {
		return nil, fmt.Errorf("the file with absolute URLs: %w", err)
	}
	if !reflect.DeepEqual(got, want) {
		return nil, errors.New("the file with absolute URLs reads as another")
	}
	return served, nil
}

// scalar returns u as a YAML scalar where a scalar of style was, in a
// flow collection or not: plain where it reads as itself, else in single
// quotes; in double quotes where it needs no escape.
func scalar(u string, style yaml.Style, flow bool) string {
	switch {
	case style == 0 && !flow && plain(u):
		return u
	case style == yaml.DoubleQuotedStyle && !strings.ContainsAny(u, `"\`):
		return `"` + u + `"`
	}
	return "'" + strings.ReplaceAll(u, "'", "''") + "'"
}

// plain reports whether u reads as the same string when written plain as a
// value in a block mapping: it is a URL ("scheme:…", which no parser reads
// as a number, a boolean or null) of letters, digits and -._~%/:@!$&'()*+;=
// only (no space, so no comment, and no flow indicator), and it does not
// end in ":", which would make it a key.
func plain(u string) bool {
	scheme, _, ok := strings.Cut(u, ":")
	if !ok || scheme == "" || !letter(u[0]) || strings.HasSuffix(u, ":") {
		return false
	}
	for i := range len(u) {
		if c := u[i]; !letter(c) && (c < '0' || c > '9') && !strings.ContainsRune("-._~%/:@!$&'()*+;=", rune(c)) {
			return false
		}
	}
	return true
}
