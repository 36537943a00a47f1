package electron

import (
	"bytes"
	"errors"
	"fmt"
	"reflect"
	"strconv"
	"unicode/utf8"

	"go.yaml.in/yaml/v3"
)

// stagingKey is the top-level key electron-updater stages a rollout by.
const stagingKey = "stagingPercentage"

// Stage returns body, a channel file as Parse reads it (as Absolute
// serves it), staged to percent of installs: its top-level
// stagingPercentage set to percent, the key's value replaced where there
// is one and the key written once, before the first key, where there is
// none. At 100 there is no stagingPercentage, which electron-updater
// offers to every install (with 100 it would skip one install in 2^32):
// the key's line is removed, or, in a mapping written in braces, its
// value made null. Every other byte is body's.
//
// The error says that percent is not 0 to 100, that Parse refuses body
// (but for its bound on the size: a served file may be longer), or that
// the key cannot be written where body has it; Parse then reads the result
// as it reads body, but for the percentage, and so does YAML: the result
// holds the same values as body, but for stagingPercentage
// (docs/updates.md, "A staged rollout in a channel file").
func Stage(body []byte, percent int) ([]byte, error) {
	if percent < 0 || percent > 100 {
		return nil, fmt.Errorf("stagingPercentage %d: not 0 to 100", percent)
	}
	f, _, err := parse(body)
	if err != nil {
		return nil, err
	}
	root, err := document(body)
	if err != nil {
		return nil, err
	}
	out, err := stage(body, root, percent)
	if err != nil {
		return nil, err
	}
	want := f
	if want.StagingPercentage = nil; percent < 100 {
		want.StagingPercentage = &percent
	}
	got, _, err := parse(out)
	if err != nil {
		return nil, fmt.Errorf("the staged file: %w", err)
	}
	if !reflect.DeepEqual(got, want) || !sameValues(body, out, percent) {
		return nil, errors.New("the staged file reads as another")
	}
	return out, nil
}

// stage edits body, whose top-level mapping is root, to stage percent.
func stage(body []byte, root *yaml.Node, percent int) ([]byte, error) {
	lines := lineStarts(body)
	value := []byte(strconv.Itoa(percent))
	var key, val *yaml.Node
	for i := 0; i+1 < len(root.Content); i += 2 {
		if root.Content[i].Value == stagingKey {
			key, val = root.Content[i], root.Content[i+1]
		}
	}
	block := root.Style&yaml.FlowStyle == 0
	switch {
	case key == nil && percent == 100:
		return bytes.Clone(body), nil
	case key == nil && block:
		// A line of its own before the first key's, at its indentation.
		first := root.Content[0]
		start, ok := lineOf(body, lines, first)
		if !ok {
			return nil, fmt.Errorf("line %d: the first key does not start its line", first.Line)
		}
		line := append(bytes.Repeat([]byte{' '}, first.Column-1), stagingKey+": "...)
		line = append(line, value...)
		return splice(body, start, start, append(line, lineEnd(body, start)...)), nil
	case key == nil:
		// Just inside the brace, which the mapping's position is.
		at, ok := offset(body, lines, root)
		if !ok || at == len(body) || body[at] != '{' {
			return nil, fmt.Errorf("line %d: no brace where the mapping starts", root.Line)
		}
		return splice(body, at+1, at+1, append([]byte(stagingKey+": "), append(value, ", "...)...)), nil
	case null(val) && percent == 100:
		return bytes.Clone(body), nil
	}
	if percent == 100 && block {
		start, ok1 := lineOf(body, lines, key)
		end, ok2 := valueEnd(body, lines, val)
		if ok1 && ok2 && endsLine(body[end:]) {
			next := bytes.IndexByte(body[end:], '\n')
			if next < 0 {
				return splice(body, start, len(body), nil), nil
			}
			return splice(body, start, end+next+1, nil), nil
		}
	}
	if percent == 100 {
		value = []byte("null")
	}
	start, ok := offset(body, lines, val)
	end, ok2 := valueEnd(body, lines, val)
	if !ok || !ok2 {
		return nil, fmt.Errorf("line %d: %s's value cannot be replaced", key.Line, stagingKey)
	}
	if start == end {
		// An empty null is where the text after the colon starts.
		value = append([]byte(" "), value...)
	}
	return splice(body, start, end, value), nil
}

// offset returns the offset in body of the first byte of n's token, from
// its line and column (in characters, from 1): len(body) for an empty
// null at its end.
func offset(body []byte, lines []int, n *yaml.Node) (int, bool) {
	if n.Line < 1 || n.Line > len(lines) {
		return 0, false
	}
	i := lines[n.Line-1]
	for col := 1; col < n.Column; col++ {
		if i >= len(body) || body[i] == '\n' {
			return 0, false
		}
		_, size := utf8.DecodeRune(body[i:])
		i += size
	}
	return i, true
}

// lineOf returns the offset of the line n's token starts, when only
// spaces come before it on that line.
func lineOf(body []byte, lines []int, n *yaml.Node) (int, bool) {
	at, ok := offset(body, lines, n)
	if !ok {
		return 0, false
	}
	start := lines[n.Line-1]
	return start, len(bytes.Trim(body[start:at], " ")) == 0
}

// valueEnd returns the offset just past n's token, a scalar written plain
// (null or a number: what Parse lets stagingPercentage be, but "" for an
// empty null) on one line.
func valueEnd(body []byte, lines []int, n *yaml.Node) (int, bool) {
	at, ok := offset(body, lines, n)
	if !ok || n.Kind != yaml.ScalarNode || n.Style != 0 || !bytes.HasPrefix(body[at:], []byte(n.Value)) {
		return 0, false
	}
	return at + len(n.Value), true
}

// endsLine reports whether rest, what follows a value on its line and
// after, holds only spaces and tabs and perhaps a comment before the line
// ends.
func endsLine(rest []byte) bool {
	line, _, _ := bytes.Cut(rest, []byte("\n"))
	line = bytes.TrimSuffix(line, []byte("\r"))
	trimmed := bytes.TrimLeft(line, " \t")
	return len(trimmed) == 0 || trimmed[0] == '#' && len(trimmed) < len(line)
}

// lineEnd returns how the line at start ends: CR LF or LF.
func lineEnd(body []byte, start int) []byte {
	line, _, _ := bytes.Cut(body[start:], []byte("\n"))
	if bytes.HasSuffix(line, []byte("\r")) {
		return []byte("\r\n")
	}
	return []byte("\n")
}

// splice returns body with [start, end) replaced by b.
func splice(body []byte, start, end int, b []byte) []byte {
	out := make([]byte, 0, len(body)-(end-start)+len(b))
	out = append(out, body[:start]...)
	out = append(out, b...)
	return append(out, body[end:]...)
}

// sameValues reports whether YAML reads staged, body staged to percent, as
// it reads body but for the top-level stagingPercentage: so no other key
// was lost or changed with it.
func sameValues(body, staged []byte, percent int) bool {
	var before, after map[string]any
	if yaml.Unmarshal(body, &before) != nil || yaml.Unmarshal(staged, &after) != nil {
		return false
	}
	delete(before, stagingKey)
	v := after[stagingKey]
	delete(after, stagingKey)
	if percent < 100 && v != percent || percent == 100 && v != nil {
		return false
	}
	return reflect.DeepEqual(before, after)
}
