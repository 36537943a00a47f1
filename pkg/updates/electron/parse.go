package electron

import (
	"bytes"
	"crypto/sha512"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"go.yaml.in/yaml/v3"
)

// maxDepth bounds how deeply a channel file nests, the top-level mapping
// counting 1: electron-builder's files nest 4 deep (packages, an arch, its
// fields).
const maxDepth = 16

// Parse reads body, a channel file, as electron-updater does (js-yaml's
// load, then parseUpdateInfo, resolveFiles and the version check), and
// returns what it says, or an error saying why the updater would refuse it
// or why this package does:
//
//   - more than MaxFile bytes, not UTF-8, a control character (but tab and
//     line feed; carriage return only before a line feed), U+2028, U+2029
//     or U+FEFF, in the text or in a value once unescaped;
//   - not one YAML document holding a mapping; an anchor, an alias, a tag
//     or a merge key ("<<"); a key that is not a string, or twice in a
//     mapping; nesting deeper than 16;
//   - no version, or one node-semver does not read;
//   - no download: files empty or absent, and no legacy path;
//   - a download (files[i].url, the legacy path, packages.<arch>.path)
//     that is not a non-empty string on one line (a plain, single-quoted or
//     double-quoted scalar without escapes), or without its sha512: the
//     base64 of a SHA-512, which the updater compares with what it
//     downloads (an old updater's sha2 alone is not enough); a legacy path
//     and sha512 come together;
//   - stagingPercentage other than an integer from 0 to 100; a size or
//     blockMapSize other than a whole number; isAdminRightsRequired other
//     than a boolean; releaseDate other than a scalar; releaseName or
//     releaseNotes other than a text (notes may also be a list of version
//     and note).
//
// Keys it does not know are the publisher's and served as written. Parse
// does not say whether the downloads are the release's: Check does.
func Parse(body []byte) (File, error) {
	if len(body) > MaxFile {
		return File{}, fmt.Errorf("larger than %d bytes", MaxFile)
	}
	f, _, err := parse(body)
	return f, err
}

// The fields of File a span's scalar holds.
const (
	inFiles    = iota // Files[i].URL
	inPath            // Path
	inPackages        // Packages[i].Path
)

// span is where, in the text, the scalar of one of a File's downloads is:
// the bytes [start, end) of its token, quotes included, in its style.
type span struct {
	field, i   int
	start, end int
	style      yaml.Style
	flow       bool // in a flow collection ("{url: …}")
}

// download returns the download of f that s is the scalar of.
func (f *File) download(s span) *string {
	switch s.field {
	case inFiles:
		return &f.Files[s.i].URL
	case inPackages:
		return &f.Packages[s.i].Path
	}
	return &f.Path
}

// parse is Parse without the bound on the size, and with the spans of the
// downloads' scalars, in the order of the text.
func parse(body []byte) (File, []span, error) {
	if err := checkText(body); err != nil {
		return File{}, nil, err
	}
	root, err := document(body)
	if err != nil {
		return File{}, nil, err
	}
	if err := checkNode(root, 1); err != nil {
		return File{}, nil, err
	}
	r := reader{body: body, lines: lineStarts(body)}
	f, err := r.file(root)
	if err != nil {
		return File{}, nil, err
	}
	slices.SortFunc(r.spans, func(a, b span) int { return a.start - b.start })
	return f, r.spans, nil
}

// checkText refuses text that is not UTF-8 or holds a character badRune
// refuses; a carriage return only ends a line before a line feed. YAML
// parsers differ on the rest (js-yaml refuses most, yaml.v3 reads some as
// line breaks), and the updater has no use for any.
func checkText(b []byte) error {
	if !utf8.Valid(b) {
		return errors.New("not UTF-8")
	}
	for i := 0; i < len(b); {
		r, size := utf8.DecodeRune(b[i:])
		if r == '\r' && i+1 < len(b) && b[i+1] == '\n' {
			i++
			continue
		}
		if badRune(r) {
			return fmt.Errorf("character %U at byte %d", r, i)
		}
		i += size
	}
	return nil
}

// badRune reports whether a value may not hold r: a control character but
// tab and line feed, a line or paragraph separator, a byte-order mark or a
// noncharacter U+FFFE, U+FFFF.
func badRune(r rune) bool {
	switch {
	case r < 0x20:
		return r != '\t' && r != '\n'
	case 0x7f <= r && r <= 0x9f:
		return true
	}
	return r == '\u2028' || r == '\u2029' || r == '\ufeff' || r == '\ufffe' || r == '\uffff'
}

// document returns the mapping that body's one YAML document holds. The
// document is read into yaml.v3's node tree, which keeps an alias as a
// pointer to its anchor's node rather than expanding it, so that no alias
// is ever followed: checkNode refuses them.
func document(body []byte) (*yaml.Node, error) {
	dec := yaml.NewDecoder(bytes.NewReader(body))
	var doc yaml.Node
	if err := dec.Decode(&doc); errors.Is(err, io.EOF) {
		return nil, errors.New("empty")
	} else if err != nil {
		return nil, fmt.Errorf("not YAML: %w", err)
	}
	// js-yaml's load refuses a second document; yaml.v3 would read the first.
	if err := dec.Decode(new(yaml.Node)); !errors.Is(err, io.EOF) {
		return nil, errors.New("more than one YAML document")
	}
	if doc.Kind != yaml.DocumentNode || len(doc.Content) != 1 || doc.Content[0].Kind != yaml.MappingNode {
		return nil, errors.New("not a YAML mapping")
	}
	return doc.Content[0], nil
}

// checkNode refuses, in n at depth depth and below it, what no channel
// file needs and YAML parsers may read differently: anchors and aliases
// (an alias expands into a copy of its anchor's node, so a few of them
// nested make a file of a few bytes into gigabytes), tags, merge keys,
// keys that are not strings or appear twice in a mapping (js-yaml refuses
// a duplicate, yaml.v3 keeps both), nesting deeper than maxDepth, and
// values with a character badRune refuses.
func checkNode(n *yaml.Node, depth int) error {
	switch {
	case depth > maxDepth:
		return fmt.Errorf("line %d: nested deeper than %d", n.Line, maxDepth)
	case n.Kind == yaml.AliasNode:
		return fmt.Errorf("line %d: an alias", n.Line)
	case n.Anchor != "":
		return fmt.Errorf("line %d: an anchor", n.Line)
	case n.Style&yaml.TaggedStyle != 0:
		return fmt.Errorf("line %d: a tag", n.Line)
	case n.Tag == "!!merge":
		return fmt.Errorf("line %d: a merge key", n.Line)
	case n.Kind == yaml.ScalarNode && strings.ContainsFunc(n.Value, badRune):
		return fmt.Errorf("line %d: a control character in a value", n.Line)
	}
	if n.Kind != yaml.MappingNode {
		for _, c := range n.Content {
			if err := checkNode(c, depth+1); err != nil {
				return err
			}
		}
		return nil
	}
	seen := make(map[string]bool, len(n.Content)/2)
	for i, c := range n.Content {
		if err := checkNode(c, depth+1); err != nil {
			return err
		}
		if i%2 == 1 {
			continue
		}
		if c.Kind != yaml.ScalarNode || c.Tag != "!!str" {
			return fmt.Errorf("line %d: a key that is not a string", c.Line)
		}
		if seen[c.Value] {
			return fmt.Errorf("line %d: key %q twice", c.Line, clip(c.Value))
		}
		seen[c.Value] = true
	}
	return nil
}

// reader reads a checked document into a File, noting the spans of its
// downloads.
type reader struct {
	body  []byte
	lines []int // the offset of each line's first byte
	spans []span

	// The line, column and offset where token last found a scalar, from
	// where it goes on when the next is further on the same line: a flow
	// collection may hold every download on one long line.
	line, col, off int
}

// lineStarts returns the offset of each line's first byte in b, lines
// ending at a line feed (checkText leaves no other line break).
func lineStarts(b []byte) []int {
	lines := []int{0}
	for i, c := range b {
		if c == '\n' {
			lines = append(lines, i+1)
		}
	}
	return lines
}

func (r *reader) file(m *yaml.Node) (File, error) {
	var f File
	v := get(m, "version")
	switch {
	case null(v):
		return File{}, errors.New("no version")
	case !isString(v) || !nodeVersion(v.Value):
		return File{}, fmt.Errorf("version %q: not a version node-semver reads", clip(v.Value))
	}
	f.Version = v.Value

	if n := get(m, "files"); !null(n) {
		if n.Kind != yaml.SequenceNode {
			return File{}, errors.New("files: not a list")
		}
		for i, e := range n.Content {
			d, err := r.download(e, i)
			if err != nil {
				return File{}, err
			}
			f.Files = append(f.Files, d)
		}
	}

	path, sum := get(m, "path"), get(m, "sha512")
	switch {
	case !null(path) && !null(sum):
		var err error
		if f.Path, err = r.url(m, path, "path", inPath, 0); err != nil {
			return File{}, err
		}
		if f.SHA512, err = checksum(sum, "sha512"); err != nil {
			return File{}, err
		}
	case !null(path):
		return File{}, errors.New("path without sha512")
	case !null(sum):
		return File{}, errors.New("sha512 without path")
	}
	if len(f.Files) == 0 && f.Path == "" {
		return File{}, errors.New("no files and no path: nothing to download")
	}

	if n := get(m, "packages"); !null(n) {
		if n.Kind != yaml.MappingNode {
			return File{}, errors.New("packages: not a mapping")
		}
		for i := 0; i < len(n.Content); i += 2 {
			p, err := r.pack(n.Content[i].Value, n.Content[i+1], i/2)
			if err != nil {
				return File{}, err
			}
			f.Packages = append(f.Packages, p)
		}
	}

	if err := r.info(m, &f); err != nil {
		return File{}, err
	}
	return f, nil
}

// info reads m's optional fields the updater shows or decides by into f.
func (r *reader) info(m *yaml.Node, f *File) error {
	if n := get(m, "releaseDate"); !null(n) {
		if n.Kind != yaml.ScalarNode {
			return errors.New("releaseDate: not a scalar")
		}
		f.ReleaseDate = n.Value
	}
	if n := get(m, "releaseName"); !null(n) {
		if !isString(n) {
			return errors.New("releaseName: not a text")
		}
		f.ReleaseName = n.Value
	}
	if n := get(m, "releaseNotes"); !null(n) {
		switch {
		case isString(n):
			f.ReleaseNotes = n.Value
		case n.Kind == yaml.SequenceNode:
			for i, e := range n.Content {
				v, note := get(e, "version"), get(e, "note")
				if e.Kind != yaml.MappingNode || !isString(v) || !null(note) && !isString(note) {
					return fmt.Errorf("releaseNotes[%d]: not a version and a note", i)
				}
				f.NotesList = append(f.NotesList, Note{Version: v.Value})
				if !null(note) {
					f.NotesList[i].Note = note.Value
				}
			}
		default:
			return errors.New("releaseNotes: neither a text nor a list")
		}
	}
	if n := get(m, "stagingPercentage"); !null(n) {
		p, ok := count(n)
		if !ok || p > 100 {
			return fmt.Errorf("stagingPercentage %q: not an integer from 0 to 100", clip(n.Value))
		}
		pct := int(p)
		f.StagingPercentage = &pct
	}
	return nil
}

// download reads e, files[i].
func (r *reader) download(e *yaml.Node, i int) (Download, error) {
	name := fmt.Sprintf("files[%d]", i)
	if e.Kind != yaml.MappingNode {
		return Download{}, fmt.Errorf("%s: not a mapping", name)
	}
	u, sum := get(e, "url"), get(e, "sha512")
	switch {
	case null(u):
		return Download{}, fmt.Errorf("%s: no url", name)
	case null(sum):
		return Download{}, fmt.Errorf("%s: no sha512", name)
	}
	var d Download
	var err error
	if d.URL, err = r.url(e, u, name+".url", inFiles, i); err != nil {
		return Download{}, err
	}
	if d.SHA512, err = checksum(sum, name+".sha512"); err != nil {
		return Download{}, err
	}
	if err := sizes(e, name); err != nil {
		return Download{}, err
	}
	if n := get(e, "isAdminRightsRequired"); !null(n) && n.Tag != "!!bool" {
		return Download{}, fmt.Errorf("%s.isAdminRightsRequired: not true or false", name)
	}
	return d, nil
}

// pack reads e, the i-th of packages, under key arch.
func (r *reader) pack(arch string, e *yaml.Node, i int) (Package, error) {
	name := "packages." + clip(arch)
	if e.Kind != yaml.MappingNode {
		return Package{}, fmt.Errorf("%s: not a mapping", name)
	}
	path, sum := get(e, "path"), get(e, "sha512")
	switch {
	case null(path):
		return Package{}, fmt.Errorf("%s: no path", name)
	case null(sum):
		return Package{}, fmt.Errorf("%s: no sha512", name)
	}
	p := Package{Arch: arch}
	var err error
	if p.Path, err = r.url(e, path, name+".path", inPackages, i); err != nil {
		return Package{}, err
	}
	if p.SHA512, err = checksum(sum, name+".sha512"); err != nil {
		return Package{}, err
	}
	return p, sizes(e, name)
}

// sizes refuses a size or blockMapSize of m that is not a whole number.
func sizes(m *yaml.Node, name string) error {
	for _, key := range [...]string{"size", "blockMapSize"} {
		if n := get(m, key); !null(n) {
			if _, ok := count(n); !ok {
				return fmt.Errorf("%s.%s %q: not a whole number", name, key, clip(n.Value))
			}
		}
	}
	return nil
}

// url returns the text of n, a download named name (the field'th field of
// File, the i'th entry of its list) in the mapping in, and notes its span.
func (r *reader) url(in, n *yaml.Node, name string, field, i int) (string, error) {
	if !isString(n) || n.Value == "" {
		return "", fmt.Errorf("%s: not a file name or URL", name)
	}
	start, end, ok := r.token(n)
	if !ok {
		return "", fmt.Errorf("%s %q: not a plain or quoted scalar on one line without escapes", name, clip(n.Value))
	}
	r.spans = append(r.spans, span{field: field, i: i, start: start, end: end, style: n.Style, flow: in.Style&yaml.FlowStyle != 0})
	return n.Value, nil
}

// token returns the bytes [start, end) of the token of scalar n in the
// text, when its value is exactly what the token says: plain, or quoted
// without escapes (but a doubled quote in single quotes), on one line.
// yaml.v3 gives a node's line and column (1-based, in characters), not its
// offset.
func (r *reader) token(n *yaml.Node) (start, end int, ok bool) {
	if n.Line < 1 || n.Line > len(r.lines) {
		return 0, 0, false
	}
	i, col := r.lines[n.Line-1], 1
	if n.Line == r.line && r.col <= n.Column {
		i, col = r.off, r.col
	}
	for ; col < n.Column; col++ {
		if i >= len(r.body) || r.body[i] == '\n' {
			return 0, 0, false
		}
		_, size := utf8.DecodeRune(r.body[i:])
		i += size
	}
	r.line, r.col, r.off = n.Line, n.Column, i
	rest := r.body[i:]
	switch n.Style {
	case 0:
		// A plain scalar folded over lines has a space where its text has a
		// line break, so its value is no prefix of the text.
		if !bytes.HasPrefix(rest, []byte(n.Value)) {
			return 0, 0, false
		}
		return i, i + len(n.Value), true
	case yaml.SingleQuotedStyle, yaml.DoubleQuotedStyle:
		q := byte('\'')
		if n.Style == yaml.DoubleQuotedStyle {
			q = '"'
		}
		if len(rest) == 0 || rest[0] != q {
			return 0, 0, false
		}
		j := 1
		for ; ; j++ {
			if j == len(rest) || rest[j] == '\n' || q == '"' && rest[j] == '\\' {
				return 0, 0, false
			}
			if rest[j] != q {
				continue
			}
			if q == '\'' && j+1 < len(rest) && rest[j+1] == '\'' {
				j++ // "''" is one quote
				continue
			}
			break
		}
		text := string(rest[1:j])
		if q == '\'' {
			text = strings.ReplaceAll(text, "''", "'")
		}
		if text != n.Value {
			return 0, 0, false
		}
		return i, i + j + 1, true
	}
	return 0, 0, false
}

// checksum returns the text of n, named name, when it is the base64 of a
// SHA-512 as Node's digest("base64") writes it (88 characters, padded, no
// line break, which Go's decoder would skip): anything else never equals
// what the updater computes, so the download would fail.
func checksum(n *yaml.Node, name string) (string, error) {
	if !isString(n) || len(n.Value) != base64.StdEncoding.EncodedLen(sha512.Size) {
		return "", fmt.Errorf("%s: not the base64 of a SHA-512", name)
	}
	if b, err := base64.StdEncoding.Strict().DecodeString(n.Value); err != nil || len(b) != sha512.Size {
		return "", fmt.Errorf("%s: not the base64 of a SHA-512", name)
	}
	return n.Value, nil
}

// count returns the value of n when it is a plain decimal integer from 0 to
// 2^53 − 1, as JavaScript reads one exactly.
func count(n *yaml.Node) (uint64, bool) {
	if n.Kind != yaml.ScalarNode || n.Tag != "!!int" || !numeric(n.Value) {
		return 0, false
	}
	v, err := strconv.ParseUint(n.Value, 10, 64)
	return v, err == nil && v <= maxSafeInteger
}

// get returns the value of key in mapping m, or nil.
func get(m *yaml.Node, key string) *yaml.Node {
	if m == nil || m.Kind != yaml.MappingNode {
		return nil
	}
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			return m.Content[i+1]
		}
	}
	return nil
}

// null reports whether n is absent or null: the updater reads both alike.
func null(n *yaml.Node) bool {
	return n == nil || n.Kind == yaml.ScalarNode && n.Tag == "!!null"
}

// isString reports whether n is a scalar both YAML parsers read as a string.
func isString(n *yaml.Node) bool { return n != nil && n.Kind == yaml.ScalarNode && n.Tag == "!!str" }

// maxQuoted bounds a value quoted in an error.
const maxQuoted = 64

// clip returns s, cut to maxQuoted bytes on a character boundary, for an
// error that quotes it.
func clip(s string) string {
	if len(s) <= maxQuoted {
		return s
	}
	i := maxQuoted
	for i > 0 && !utf8.RuneStart(s[i]) {
		i--
	}
	return s[:i] + "…"
}
