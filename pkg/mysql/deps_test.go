package mysql_test

import (
	"os/exec"
	"strings"
	"testing"
)

// TestAPINeverOpensMySQL: the API binary does not even link this package,
// the MySQL driver (whose init registers it) or the migration library, so
// MySQL's load stays with the pollers however many API pods run, and the
// settings the API reads validate nothing of MySQL's.
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
		if forbidden(d) {
			t.Errorf("cmd/api depends on %s", d)
		}
	}
	// The poller does link them: the test sees them when they are there.
	out, err = exec.Command("go", "list", "-deps", "github.com/storytold/craft-releases/cmd/poller").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	var found []string
	for _, d := range strings.Fields(string(out)) {
		if forbidden(d) {
			found = append(found, d)
		}
	}
	if len(found) < 3 {
		t.Errorf("cmd/poller links %q of this package, the driver and goose; the test would prove nothing", found)
	}
}

// forbidden reports whether the API must not link the package d.
func forbidden(d string) bool {
	return d == "github.com/storytold/craft-releases/pkg/mysql" ||
		d == "github.com/go-sql-driver/mysql" || strings.HasPrefix(d, "github.com/go-sql-driver/mysql/") ||
		strings.HasPrefix(d, "github.com/pressly/goose")
}
