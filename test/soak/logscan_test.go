package soak

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"
)

// unsafeInLog reports whether r, raw in a log line, could act on the
// terminal that shows it or make the line read as something else: a control
// character (C0, DEL, C1), a format character (bidirectional controls,
// zero-width characters) or a line or paragraph separator. A JSON line holds
// none: each is written as an escape.
func unsafeInLog(r rune) bool {
	return unicode.In(r, unicode.Cc, unicode.Cf, unicode.Zl, unicode.Zp)
}

// scanLogs reads every file in dir and returns, for each one with lines that
// hold an unsafe character raw or bytes that are not UTF-8, how many and
// the first of them.
func scanLogs(dir string) ([]string, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*"))
	if err != nil {
		return nil, err
	}
	var found []string
	for _, path := range files {
		f, err := os.Open(path)
		if err != nil {
			return nil, err
		}
		sc := bufio.NewScanner(f)
		sc.Buffer(make([]byte, 64<<10), 32<<20)
		bad, first, firstAt := 0, "", 0
		for n := 1; sc.Scan(); n++ {
			line := sc.Text()
			unsafe := !utf8.ValidString(line)
			for _, r := range line {
				unsafe = unsafe || unsafeInLog(r)
			}
			if unsafe {
				if bad == 0 {
					first, firstAt = line, n
				}
				bad++
			}
		}
		err = sc.Err()
		f.Close()
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		if bad > 0 {
			if len(first) > 300 {
				first = first[:300] + "…"
			}
			found = append(found, fmt.Sprintf("%s: %d lines hold a control or format character raw, the first (line %d): %q",
				filepath.Base(path), bad, firstAt, first))
		}
	}
	return found, nil
}

// checkLogs fails the soak for every log of a process that holds a line a
// terminal could be made to misshow (docs/operations.md, "When something
// goes wrong").
func (s *soak) checkLogs(r *report) {
	found, err := scanLogs(s.logs)
	if err != nil {
		r.fail("scan the logs: %v", err)
	}
	for _, f := range found {
		r.fail("%s", f)
	}
}

func TestScanLogs(t *testing.T) {
	tests := []struct {
		name   string
		line   string
		unsafe bool
	}{
		{"json with escapes", `{"level":"warn","by":"\"EVIL\\u202eDENWO\"","err":"a\tb\u001b[2J\u0085"}`, false},
		{"non-ascii letters", `{"msg":"PhotoCraft é, версия"}`, false},
		{"right-to-left override", "{\"by\":\"EVIL\u202eDENWO\"}", true},
		{"other bidi controls", "\u200e\u200f\u202a\u2066\u2069\u061c", true},
		{"esc", "\x1b]0;pwned\a", true},
		{"tab", "a\tb", true},
		{"carriage return", "a\rb", true},
		{"del", "a\x7fb", true},
		{"c1", "a\u009b2J", true},
		{"next line", "a\u0085b", true},
		{"zero-width space", "ad\u200bmin", true},
		{"byte order mark", "\ufeff{}", true},
		{"line separator", "a\u2028b", true},
		{"not utf-8", "a\x9b2J", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			if err := os.WriteFile(filepath.Join(dir, "api-1.log"), []byte("{\"msg\":\"listening\"}\n"+tt.line+"\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			found, err := scanLogs(dir)
			if err != nil {
				t.Fatal(err)
			}
			if got := len(found) > 0; got != tt.unsafe {
				t.Errorf("scan of %q found %q, want unsafe %v", tt.line, found, tt.unsafe)
			}
			if tt.unsafe && len(found) == 1 && !strings.HasPrefix(found[0], "api-1.log: 1 lines hold a control or format character raw, the first (line 2): ") {
				t.Errorf("got %q, want the file, the count and the first line", found[0])
			}
		})
	}
}

// intruder is the writer that a tampered hash names: hostile, so that the
// scan of the logs sees what the refusal's log line makes of it.
const intruder = "intruder\u202e\x1b]0;pwned\a\u0085"
