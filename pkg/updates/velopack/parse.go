package velopack

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/storytold/craft-releases/pkg/release"
)

// Bounds on a feed's values, in bytes except maxDepth.
const (
	// maxDepth bounds the nesting of arrays and objects: vpk writes three
	// levels (the feed, its Assets, each asset); the clients stop at 64
	// (System.Text.Json) and 128 (serde_json).
	maxDepth     = 32
	maxPackageID = 256
	maxFileName  = 2048
)

// The keys of the feed object and of an asset, spelt as vpk writes them
// ("NotesHtml" as Velopack's Rust library writes it).
var (
	feedKeys  = []string{"Assets"}
	assetKeys = []string{"PackageId", "Version", "Type", "FileName", "SHA1", "SHA256", "Size", "NotesMarkdown", "NotesHTML", "NotesHtml"}
)

// required are the keys that every asset has: what vpk always writes, and
// what either client needs to offer the package.
var required = []string{"PackageId", "Version", "Type", "FileName", "SHA1", "Size"}

// Parse reads body as a Velopack feed, releases.{channel}.json, refusing
// what either client (C# Velopack.UpdateManager, Rust velopack::UpdateManager)
// would reject or read differently from the other, and, beyond them, what
// vpk never writes (docs/updates.md, "Velopack"):
//
//   - more than MaxFeed bytes, a byte order mark, invalid UTF-8 or an
//     escaped lone surrogate; anything but one JSON object (no comments, no
//     trailing commas), nested deeper than 32;
//   - a key outside printable ASCII, a key twice in an object in any letter
//     case, or a key of the feed or of an asset in another letter case than
//     vpk's ("fileName"): C# reads keys in any case, Rust as written;
//   - a missing "Assets", or one that is not an array of objects;
//   - an asset without PackageId, Version, Type, FileName, SHA1 or Size, or
//     with a null or another type than its own for any of its keys;
//   - a PackageId that is not a NuGet id (letters, digits, marks, "_", "."
//     and "-"), a Version that is not SemVer 2.0.0 as both clients parse
//     it (validVersion), a Type other than "Full" or "Delta", an empty
//     FileName or one with control or bidirectional formatting characters,
//     a SHA1 that is not 40 hex digits or a SHA256 not 64, a Size that is
//     not an integer from 0 to release.MaxSizeBytes written in digits only,
//     notes with a control character other than tab, line feed and
//     carriage return;
//   - a number anywhere that overflows a float64 (serde_json refuses it).
//
// Other keys, which both clients ignore, are read and left to the file
// (Absolute keeps them). The error says what was refused, and where.
func Parse(body []byte) (Feed, error) {
	f, _, err := parse(body)
	return f, err
}

// span is where a value's JSON text is in a body: body[start:end].
type span struct{ start, end int }

// parse is Parse, returning also where each asset's FileName value is.
func parse(body []byte) (Feed, []span, error) {
	switch {
	case len(body) > MaxFeed:
		return Feed{}, nil, fmt.Errorf("%d bytes, over %d", len(body), MaxFeed)
	case bytes.HasPrefix(body, []byte("\uFEFF")):
		return Feed{}, nil, errors.New("a byte order mark")
	case !utf8.Valid(body):
		return Feed{}, nil, errors.New("not UTF-8")
	}
	d := &decoder{body: body, dec: json.NewDecoder(bytes.NewReader(body))}
	d.dec.UseNumber()
	f, spans, err := d.feed()
	if err != nil {
		return Feed{}, nil, err
	}
	if _, err := d.dec.Token(); !errors.Is(err, io.EOF) {
		return Feed{}, nil, errors.New("more after the feed's object")
	}
	return f, spans, nil
}

// decoder reads a body token by token, knowing where each token is, for
// Absolute to replace a value in place. It is encoding/json's Decoder, with
// what that lets through checked here (lone surrogates, depth, duplicate
// keys): encoding/json/jsontext, which would report offsets and refuse
// those itself, needs GOEXPERIMENT=jsonv2 in this Go.
type decoder struct {
	body  []byte
	dec   *json.Decoder
	end   int // offset just past the last token read
	depth int // arrays and objects open
}

// token reads the next token and where its text is. It refuses a token
// that opens an array or object deeper than maxDepth, a string with an
// escaped lone surrogate, and a number that overflows a float64.
func (d *decoder) token() (json.Token, span, error) {
	tok, err := d.dec.Token()
	if err != nil {
		if errors.Is(err, io.EOF) {
			err = io.ErrUnexpectedEOF
		}
		return nil, span{}, fmt.Errorf("not JSON: %w", err)
	}
	sp := span{d.end, int(d.dec.InputOffset())}
	// Between two tokens there is only white space, "," and ":".
	for sp.start < sp.end && strings.IndexByte(" \t\r\n,:", d.body[sp.start]) >= 0 {
		sp.start++
	}
	d.end = sp.end
	switch t := tok.(type) {
	case json.Delim:
		if t == '{' || t == '[' {
			if d.depth++; d.depth > maxDepth {
				return nil, span{}, fmt.Errorf("nested deeper than %d at byte %d", maxDepth, sp.start)
			}
		} else {
			d.depth--
		}
	case string:
		if !pairedSurrogates(d.body[sp.start:sp.end]) {
			return nil, span{}, fmt.Errorf("a lone surrogate escape at byte %d", sp.start)
		}
	case json.Number:
		if f, err := strconv.ParseFloat(t.String(), 64); err != nil && math.IsInf(f, 0) {
			return nil, span{}, fmt.Errorf("a number out of range at byte %d", sp.start)
		}
	}
	return tok, sp, nil
}

// pairedSurrogates reports whether every \u escape of a surrogate in the
// JSON string raw is a high one followed by an escaped low one. encoding/json
// reads a lone one as U+FFFD; serde_json and System.Text.Json refuse it.
func pairedSurrogates(raw []byte) bool {
	high := false // the previous escape was a high surrogate
	for i := 0; i < len(raw); i++ {
		if raw[i] != '\\' {
			if high {
				return false
			}
			continue
		}
		i++
		if i >= len(raw) || raw[i] != 'u' {
			if high {
				return false
			}
			continue
		}
		if i+5 > len(raw) {
			return false
		}
		r, err := strconv.ParseUint(string(raw[i+1:i+5]), 16, 32)
		if err != nil {
			return false
		}
		i += 4
		switch {
		case 0xD800 <= r && r < 0xDC00:
			if high {
				return false
			}
			high = true
		case 0xDC00 <= r && r < 0xE000:
			if !high {
				return false
			}
			high = false
		case high:
			return false
		}
	}
	return !high
}

// open reads the token that opens an array or object, delim, or fails
// with what.
func (d *decoder) open(delim json.Delim, what string) error {
	tok, _, err := d.token()
	if err != nil {
		return err
	}
	if tok != delim {
		return errors.New(what)
	}
	return nil
}

// members reads the members of an object whose "{" was read, and its "}",
// calling member with each key once the key is read, for it to read the
// value. A key must be printable ASCII, must not repeat another in any
// letter case, and must be one of known exactly or none in any case.
func (d *decoder) members(known []string, member func(key string) error) error {
	var seen []string
	for d.dec.More() {
		tok, _, err := d.token()
		if err != nil {
			return err
		}
		key, _ := tok.(string) // More and Token see to it that an object's key is a string
		if strings.ContainsFunc(key, func(r rune) bool { return r < ' ' || r > '~' }) {
			return fmt.Errorf("key %s: not printable ASCII", clip(key))
		}
		for _, s := range seen {
			if strings.EqualFold(s, key) {
				return fmt.Errorf("key %s twice", clip(key))
			}
		}
		seen = append(seen, key)
		for _, k := range known {
			if key != k && strings.EqualFold(key, k) && !slices.Contains(known, key) {
				return fmt.Errorf("key %s: write %q", clip(key), k)
			}
		}
		if err := member(key); err != nil {
			return err
		}
	}
	_, _, err := d.token()
	return err
}

// skip reads a value and drops it.
func (d *decoder) skip() error {
	tok, _, err := d.token()
	if err != nil || tok != json.Delim('{') && tok != json.Delim('[') {
		return err
	}
	for d.dec.More() {
		if tok == json.Delim('{') {
			if _, _, err := d.token(); err != nil { // the key
				return err
			}
		}
		if err := d.skip(); err != nil {
			return err
		}
	}
	_, _, err = d.token()
	return err
}

// feed reads the feed object.
func (d *decoder) feed() (Feed, []span, error) {
	if err := d.open('{', "not a JSON object"); err != nil {
		return Feed{}, nil, err
	}
	var (
		f      Feed
		spans  []span
		assets bool
	)
	err := d.members(feedKeys, func(key string) error {
		if key != "Assets" {
			return d.skip()
		}
		assets = true
		if err := d.open('[', `"Assets" is not an array`); err != nil {
			return err
		}
		for d.dec.More() {
			a, sp, err := d.asset()
			if err != nil {
				return fmt.Errorf("asset %d: %w", len(f.Assets), err)
			}
			f.Assets = append(f.Assets, a)
			spans = append(spans, sp)
		}
		_, _, err := d.token()
		return err
	})
	if err == nil && !assets {
		err = errors.New(`no "Assets"`)
	}
	if err != nil {
		return Feed{}, nil, err
	}
	return f, spans, nil
}

// asset reads one asset object, and where its FileName value is.
func (d *decoder) asset() (Asset, span, error) {
	if err := d.open('{', "not a JSON object"); err != nil {
		return Asset{}, span{}, err
	}
	var (
		a    Asset
		at   span
		seen []string
	)
	fields := map[string]*string{
		"PackageId": &a.PackageID, "Version": &a.Version, "Type": &a.Type, "FileName": &a.FileName,
		"SHA1": &a.SHA1, "SHA256": &a.SHA256, "NotesMarkdown": &a.NotesMarkdown,
		"NotesHTML": &a.NotesHTML, "NotesHtml": &a.NotesHTML,
	}
	err := d.members(assetKeys, func(key string) error {
		if !slices.Contains(assetKeys, key) {
			return d.skip()
		}
		seen = append(seen, key)
		tok, sp, err := d.token()
		if err != nil {
			return err
		}
		if key == "Size" {
			n, ok := tok.(json.Number)
			if !ok || !size(n.String()) {
				return fmt.Errorf(`"Size" is not an integer from 0 to %d in digits`, release.MaxSizeBytes)
			}
			a.Size, _ = strconv.ParseInt(n.String(), 10, 64) // size checked it
			return nil
		}
		s, ok := tok.(string)
		if !ok {
			return fmt.Errorf("%q is not a string", key)
		}
		*fields[key] = s
		if key == "FileName" {
			at = sp
		}
		return nil
	})
	if err != nil {
		return Asset{}, span{}, err
	}
	for _, k := range required {
		if !slices.Contains(seen, k) {
			return Asset{}, span{}, fmt.Errorf("no %q", k)
		}
	}
	if err := valid(a, slices.Contains(seen, "SHA256")); err != nil {
		return Asset{}, span{}, err
	}
	return a, at, nil
}

// size reports whether s, a JSON number, is a Size: digits without a
// leading zero (but "0"), at most release.MaxSizeBytes.
func size(s string) bool {
	if s == "" || len(s) > 1 && s[0] == '0' || !digits(s) {
		return false
	}
	n, err := strconv.ParseInt(s, 10, 64)
	return err == nil && n <= release.MaxSizeBytes
}

func digits(s string) bool {
	return !strings.ContainsFunc(s, func(r rune) bool { return r < '0' || r > '9' })
}

// valid reports why the values of a, read from JSON strings, are not an
// asset's, if they are not; hasSHA256 says whether a's object had one.
func valid(a Asset, hasSHA256 bool) error {
	switch {
	case !nugetID(a.PackageID):
		return fmt.Errorf("PackageId %s: not a NuGet id", clip(a.PackageID))
	case !validVersion(a.Version):
		return fmt.Errorf("version %s: not SemVer 2.0.0", clip(a.Version))
	case a.Type != TypeFull && a.Type != TypeDelta:
		return fmt.Errorf("type %s: want %q or %q", clip(a.Type), TypeFull, TypeDelta)
	case a.FileName == "" || len(a.FileName) > maxFileName:
		return fmt.Errorf("FileName of %d bytes: want 1 to %d", len(a.FileName), maxFileName)
	case strings.ContainsFunc(a.FileName, func(r rune) bool { return unicode.IsControl(r) || release.Bidi(r) }):
		return fmt.Errorf("FileName %s: a control or bidirectional formatting character", clip(a.FileName))
	case !hex(a.SHA1, 40):
		return fmt.Errorf("SHA1 %s: not 40 hex digits", clip(a.SHA1))
	case hasSHA256 && !hex(a.SHA256, 64):
		return fmt.Errorf("SHA256 %s: not 64 hex digits", clip(a.SHA256))
	case !notes(a.NotesMarkdown) || !notes(a.NotesHTML):
		return errors.New("notes with a control character")
	}
	return nil
}

// nugetID reports whether s is a package id as vpk's --packId takes one
// (NuGet's ^[\w.-]*$, \w as .NET reads it: letters, nonspacing marks,
// decimal digits, connector punctuation), non-empty and at most
// maxPackageID bytes.
func nugetID(s string) bool {
	return s != "" && len(s) <= maxPackageID && !strings.ContainsFunc(s, func(r rune) bool {
		return r != '.' && r != '-' && !unicode.IsLetter(r) && !unicode.In(r, unicode.Mn, unicode.Nd, unicode.Pc)
	})
}

// hex reports whether s is n hex digits, in either letter case.
func hex(s string, n int) bool {
	return len(s) == n && !strings.ContainsFunc(s, func(r rune) bool {
		return (r < '0' || r > '9') && (r < 'a' || r > 'f') && (r < 'A' || r > 'F')
	})
}

// notes reports whether s has no control character but tab, line feed
// and carriage return.
func notes(s string) bool {
	return !strings.ContainsFunc(s, func(r rune) bool { return unicode.IsControl(r) && r != '\t' && r != '\n' && r != '\r' })
}

// clip quotes s for an error, cut to 64 bytes of whole characters.
func clip(s string) string {
	if len(s) > 64 {
		i := 64
		for i > 0 && !utf8.RuneStart(s[i]) {
			i--
		}
		return strconv.Quote(s[:i]) + "…"
	}
	return strconv.Quote(s)
}

// appendString appends s to out as a JSON string: '"' and '\' escaped,
// control characters as \u escapes, everything else as it is.
func appendString(out []byte, s string) []byte {
	out = append(out, '"')
	for _, r := range s {
		switch {
		case r == '"' || r == '\\':
			out = append(out, '\\', byte(r))
		case r < ' ':
			out = fmt.Appendf(out, `\u%04x`, r)
		default:
			out = utf8.AppendRune(out, r)
		}
	}
	return append(out, '"')
}
