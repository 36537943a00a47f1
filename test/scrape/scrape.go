// Package scrape reads a Prometheus registry as a scrape does, for tests:
// every sample by its series, and checks of them.
package scrape

import (
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"go.uber.org/zap"

	"github.com/storytold/craft-releases/pkg/metrics"
)

// Samples serves g's metrics through Handler and returns every sample by its
// series as the text format prints it: name{label="value",...}.
func Samples(t testing.TB, g prometheus.Gatherer) map[string]float64 {
	t.Helper()
	rec := httptest.NewRecorder()
	metrics.Handler(g, zap.NewNop()).ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	if rec.Code != http.StatusOK {
		t.Fatalf("metrics handler: got %d, want 200: %s", rec.Code, rec.Body)
	}
	samples := make(map[string]float64)
	for line := range strings.Lines(rec.Body.String()) {
		line = strings.TrimSuffix(line, "\n")
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		v, err := strconv.ParseFloat(line[i+1:], 64)
		if i < 0 || err != nil {
			t.Fatalf("unreadable sample %q", line)
		}
		samples[line[:i]] = v
	}
	return samples
}

// Family returns the samples of got whose series starts with prefix.
func Family(got map[string]float64, prefix string) map[string]float64 {
	out := make(map[string]float64)
	for s, v := range got {
		if strings.HasPrefix(s, prefix) {
			out[s] = v
		}
	}
	return out
}

// Want checks that got holds exactly want among the series starting
// with each of prefixes.
func Want(t *testing.T, got map[string]float64, want map[string]float64, prefixes ...string) {
	t.Helper()
	for _, p := range prefixes {
		for s, v := range Family(got, p) {
			if w, ok := want[s]; !ok {
				t.Errorf("unexpected series %s = %v", s, v)
			} else if v != w {
				t.Errorf("%s: got %v, want %v", s, v, w)
			}
		}
	}
	for s, w := range want {
		if _, ok := got[s]; !ok {
			t.Errorf("%s: absent, want %v", s, w)
		}
	}
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
