package metrics_test

import (
	"runtime"
	"testing"
	"time"

	"github.com/storytold/craft-releases/pkg/metrics"
	"github.com/storytold/craft-releases/test/scrape"
	"github.com/storytold/craft-releases/test/testkit"
)

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
			got := scrape.Samples(t, reg)
			testkit.WantSamples(t, got, map[string]float64{
				`craft_build_info{binary="` + tt.binary + `",goversion="` + runtime.Version() + `",version="` + tt.version + `"}`: 1,
				`craft_poll_interval_seconds`: tt.wantInterval,
			}, "craft_")
			for _, std := range []string{"go_goroutines", "process_resident_memory_bytes"} {
				if _, ok := got[std]; !ok {
					t.Errorf("%s: absent, want the standard collectors", std)
				}
			}
			scrape.Lint(t, reg)
		})
	}
	// No global state: two registries of one process live side by side.
	metrics.NewRegistry("api", "dev", time.Minute)
	metrics.NewRegistry("api", "dev", time.Minute)
}
