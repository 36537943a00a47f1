package meta_test

import (
	"os/exec"
	"strings"
	"testing"
)

// TestAPINeverOpensMySQL: the API binary does not even link this package
// or the migration library, so MySQL's load stays with the pollers however
// many API pods run.
func TestAPINeverOpensMySQL(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "github.com/storytold/craft-releases/cmd/api").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	deps := strings.Fields(string(out))
	if len(deps) < 10 {
		t.Fatalf("go list found %d dependencies of cmd/api; the test would prove nothing", len(deps))
	}
	for _, d := range deps {
		if d == "github.com/storytold/craft-releases/pkg/meta" || strings.HasPrefix(d, "github.com/pressly/goose") {
			t.Errorf("cmd/api depends on %s", d)
		}
	}
}
