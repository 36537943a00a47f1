package metrics_test

import (
	"net/http"
	"net/http/httptest"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"go.uber.org/zap"

	"github.com/storytold/craft-releases/pkg/metrics"
)

// scrape serves g's metrics through Handler and returns every sample by its
// series as the text format prints it: name{label="value",...}.
func scrape(t testing.TB, g prometheus.Gatherer) map[string]float64 {
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

// family returns the samples of got whose series starts with prefix.
func family(got map[string]float64, prefix string) map[string]float64 {
	out := make(map[string]float64)
	for s, v := range got {
		if strings.HasPrefix(s, prefix) {
			out[s] = v
		}
	}
	return out
}

// wantSamples checks that got holds exactly want among the series starting
// with each of prefixes.
func wantSamples(t *testing.T, got map[string]float64, want map[string]float64, prefixes ...string) {
	t.Helper()
	for _, p := range prefixes {
		for s, v := range family(got, p) {
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

// lint fails the test on any problem promlint finds in g's metrics.
func lint(t *testing.T, g prometheus.Gatherer) {
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

func TestNewRegistry(t *testing.T) {
	tests := []struct {
		name, binary, version string
		interval              time.Duration
		wantInterval          float64
	}{
		{"api", "api", "v1.2.3", 30 * time.Minute, 1800},
		{"poller with a short interval", "poller", "dev", 1500 * time.Millisecond, 1.5},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			reg := metrics.NewRegistry(tt.binary, tt.version, tt.interval)
			got := scrape(t, reg)
			wantSamples(t, got, map[string]float64{
				`craft_build_info{binary="` + tt.binary + `",goversion="` + runtime.Version() + `",version="` + tt.version + `"}`: 1,
				`craft_poll_interval_seconds`: tt.wantInterval,
			}, "craft_")
			for _, std := range []string{"go_goroutines", "process_resident_memory_bytes"} {
				if _, ok := got[std]; !ok {
					t.Errorf("%s: absent, want the standard collectors", std)
				}
			}
			lint(t, reg)
		})
	}
	// No global state: two registries of one process live side by side.
	metrics.NewRegistry("api", "dev", time.Minute)
	metrics.NewRegistry("api", "dev", time.Minute)
}
