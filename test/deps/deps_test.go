// Package deps checks what each binary links: each only what it runs.
package deps

import (
	"os/exec"
	"slices"
	"strings"
	"testing"
)

const module = "github.com/storytold/craft-releases/"

// deps returns the packages pkg depends on, itself included.
func deps(t *testing.T, pkg string) []string {
	t.Helper()
	out, err := exec.Command("go", "list", "-deps", module+pkg).CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	d := strings.Fields(string(out))
	if len(d) < 10 && pkg != "pkg/daemon" {
		t.Fatalf("go list found %d dependencies of %s; the test would prove nothing", len(d), pkg)
	}
	return d
}

// matching returns the packages of ds that are one of want or below one.
func matching(ds, want []string) []string {
	var found []string
	for _, d := range ds {
		if slices.ContainsFunc(want, func(w string) bool { return d == w || strings.HasPrefix(d, w+"/") }) {
			found = append(found, d)
		}
	}
	return found
}

var (
	// MySQL stays with the pollers however many API pods run, and the
	// settings the API reads validate nothing of MySQL's.
	mysql = []string{module + "pkg/mysql", "github.com/go-sql-driver/mysql", "github.com/pressly/goose"}
	// The poller serves health and metrics only: no router, no rendering,
	// no page, no webhook, no hydrator.
	apiOnly = []string{"github.com/labstack/echo", "github.com/yuin/goldmark", "github.com/microcosm-cc/bluemonday",
		module + "pkg/api", module + "pkg/page", module + "pkg/snapshot", module + "pkg/webhook",
		module + "pkg/redis/hydrate", module + "pkg/metrics/apipod"}
)

// TestEachBinaryLinksOnlyWhatItRuns: cmd/api links nothing of MySQL,
// cmd/poller nothing of the API, and each does link what the other must
// not, so that the test sees them when they are there.
func TestEachBinaryLinksOnlyWhatItRuns(t *testing.T) {
	api, poller := deps(t, "cmd/api"), deps(t, "cmd/poller")
	if found := matching(api, mysql); len(found) > 0 {
		t.Errorf("cmd/api links %q", found)
	}
	if found := matching(poller, apiOnly); len(found) > 0 {
		t.Errorf("cmd/poller links %q", found)
	}
	if found := matching(poller, mysql); len(found) < len(mysql) {
		t.Errorf("cmd/poller links only %q of %q; the test would prove nothing", found, mysql)
	}
	if found := matching(api, apiOnly); len(found) < len(apiOnly) {
		t.Errorf("cmd/api links only %q of %q; the test would prove nothing", found, apiOnly)
	}
}

// TestProcessLayerKnowsNoProduct: pkg/daemon (running, health, readiness,
// shutdown) depends on no other package of the service but pkg/logsafe,
// which itself imports none.
func TestProcessLayerKnowsNoProduct(t *testing.T) {
	for _, d := range deps(t, "pkg/daemon") {
		if strings.HasPrefix(d, module) && d != module+"pkg/daemon" && d != module+"pkg/logsafe" {
			t.Errorf("pkg/daemon depends on %s", d)
		}
	}
}
