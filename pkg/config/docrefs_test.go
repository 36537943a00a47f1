package config_test

import (
	"bufio"
	"go/parser"
	gotoken "go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// docRef is a comment's reference to a section of the docs, the way doc
// comments link the contract's details: the file's path under docs/, a
// comma, and the section's heading in double quotes.
var docRef = regexp.MustCompile(`docs/([a-z0-9-]+\.md),?\s+"([^"]+)"`)

// TestDocReferences fails when a Go comment anywhere in the module names a
// section of docs/ that does not exist: a heading of that file, word for
// word.
func TestDocReferences(t *testing.T) {
	root := filepath.Join("..", "..")
	headings := map[string]map[string]bool{} // file → its headings
	sections := func(file string) map[string]bool {
		if h, ok := headings[file]; ok {
			return h
		}
		h := map[string]bool{}
		f, err := os.Open(filepath.Join(root, "docs", file))
		if err == nil {
			s := bufio.NewScanner(f)
			for s.Scan() {
				if line := s.Text(); strings.HasPrefix(line, "#") {
					h[strings.TrimSpace(strings.TrimLeft(line, "#"))] = true
				}
			}
			f.Close()
		}
		headings[file] = h
		return h
	}
	refs := 0
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == "node_modules" || d.Name() == "testdata" || strings.HasPrefix(d.Name(), ".")) && path != root {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") {
			return nil
		}
		f, err := parser.ParseFile(gotoken.NewFileSet(), path, nil, parser.ParseComments)
		if err != nil {
			return err
		}
		for _, g := range f.Comments {
			// A reference may be wrapped over two comment lines.
			text := strings.Join(strings.Fields(g.Text()), " ")
			for _, m := range docRef.FindAllStringSubmatch(text, -1) {
				refs++
				if !sections(m[1])[m[2]] {
					t.Errorf("%s: docs/%s has no section %q", path, m[1], m[2])
				}
			}
		}
		return nil
	})
	must(t, err)
	if refs == 0 {
		t.Fatal("found no reference to a section of docs/: the pattern no longer matches how comments link them")
	}
}
