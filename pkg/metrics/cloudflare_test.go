package metrics_test

import (
	"testing"
	"time"

	"github.com/storytold/craft-releases/pkg/cloudflare"
	"github.com/storytold/craft-releases/pkg/metrics"
	"github.com/storytold/craft-releases/test/scrape"
	"github.com/storytold/craft-releases/test/testkit"
)

func TestPurges(t *testing.T) {
	p := metrics.NewPurges()
	reg := pedantic(p)
	p.Purge(cloudflare.Failed, 11)
	p.Purge(cloudflare.Purged, 11)
	p.Purge(cloudflare.Dropped, 4)
	p.Purge("other", 1) // not an outcome: ignored
	p.Delay(1200 * time.Millisecond)
	testkit.WantSamples(t, scrape.Samples(t, reg), map[string]float64{
		`craft_cloudflare_purges_total{outcome="purged"}`: 1,
		`craft_cloudflare_purges_total{outcome="failed"}`: 1,
		`craft_cloudflare_purge_urls_dropped_total`:       4,
		`craft_cloudflare_purge_delay_seconds_count`:      1,
	})
	scrape.Lint(t, reg)
}
