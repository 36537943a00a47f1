// Package scrape reads a Prometheus registry as a scrape does, for tests:
// every sample by its series (checked with testkit.WantSamples), and
// promlint's findings.
package scrape

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"go.uber.org/zap"

	"github.com/storytold/craft-releases/pkg/metrics"
	"github.com/storytold/craft-releases/test/testkit"
)

// Samples serves g's metrics through Handler and returns every sample by its
// series, as testkit.Samples reads them.
func Samples(t testing.TB, g prometheus.Gatherer) map[string]float64 {
	t.Helper()
	rec := httptest.NewRecorder()
	metrics.Handler(g, zap.NewNop()).ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	if rec.Code != http.StatusOK {
		t.Fatalf("metrics handler: got %d, want 200: %s", rec.Code, rec.Body)
	}
	return testkit.Samples(t, rec.Body.String())
}

// Lint fails the test on any problem promlint finds in g's metrics.
func Lint(t *testing.T, g prometheus.Gatherer) {
	t.Helper()
	problems, err := testutil.GatherAndLint(g)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		if strings.HasPrefix(p.Metric, "craft_") {
			t.Errorf("lint %s: %s", p.Metric, p.Text)
		}
	}
}
