package testkit

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// WireExample returns the JSON of docs/wire.md's "Example" section, compacted:
// the one copy of the answer that the wire types and the snapshot must
// produce byte for byte, read from the document launcher developers read.
func WireExample(t testing.TB) []byte {
	t.Helper()
	_, here, _, _ := runtime.Caller(0)
	path := filepath.Join(filepath.Dir(here), "..", "..", "docs", "wire.md")
	doc, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("read the wire example: %v", err)
	}
	_, section, ok := strings.Cut(string(doc), "\n## Example\n")
	_, block, ok2 := strings.Cut(section, "\n```json\n")
	block, _, ok3 := strings.Cut(block, "\n```")
	if !ok || !ok2 || !ok3 {
		t.Fatalf("%s has no ```json block under ## Example", path)
	}
	var out bytes.Buffer
	if err := json.Compact(&out, []byte(block)); err != nil {
		t.Fatalf("the wire example is not JSON: %v", err)
	}
	return out.Bytes()
}
