package metrics_test

import (
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/storytold/craft-releases/pkg/cloudflare"
	"github.com/storytold/craft-releases/pkg/metrics"
	"github.com/storytold/craft-releases/test/scrape"
)

func TestPurges(t *testing.T) {
	p := metrics.NewPurges()
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(p)
	p.Purge(cloudflare.Failed, 11)
	p.Purge(cloudflare.Purged, 11)
	p.Purge(cloudflare.Dropped, 4)
	p.Purge("other", 1) // not an outcome: ignored
	p.Delay(1200 * time.Millisecond)
	got := scrape.Samples(t, reg)
	for series, want := range map[string]float64{
		`craft_cloudflare_purges_total{outcome="purged"}`: 1,
		`craft_cloudflare_purges_total{outcome="failed"}`: 1,
		`craft_cloudflare_purge_urls_dropped_total`:       4,
		`craft_cloudflare_purge_delay_seconds_count`:      1,
	} {
		if got[series] != want {
			t.Errorf("%s got %v, want %v", series, got[series], want)
		}
	}
	scrape.Lint(t, reg)
}
