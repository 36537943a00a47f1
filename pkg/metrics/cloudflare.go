package metrics

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/storytold/craft-releases/pkg/cloudflare"
)

var _ cloudflare.Observer = (*Purges)(nil)

// purgeBuckets span a purge sent after its delay (1 s) to one retried for
// minutes.
var purgeBuckets = []float64{0.5, 1, 1.5, 2, 3, 5, 10, 30, 60, 120, 300}

// Purges holds the Cloudflare purger's series: craft_cloudflare_purges_total,
// craft_cloudflare_purge_urls_dropped_total and
// craft_cloudflare_purge_delay_seconds. It is a cloudflare.Observer and a
// prometheus.Collector; register it once. Its methods are safe for
// concurrent use.
type Purges struct {
	calls          *prometheus.CounterVec
	purged, failed prometheus.Counter
	dropped        prometheus.Counter
	delay          prometheus.Histogram
}

// NewPurges returns the purger's series, every outcome at 0.
func NewPurges() *Purges {
	p := &Purges{
		calls: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "craft_cloudflare_purges_total",
			Help: "Cloudflare purge calls, by outcome: purged (accepted) or failed (retried with backoff).",
		}, []string{"outcome"}),
		dropped: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "craft_cloudflare_purge_urls_dropped_total",
			Help: "URLs never purged: their batch failed every attempt, or the queue was full.",
		}),
		delay: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "craft_cloudflare_purge_delay_seconds",
			Help:    "From a change of a release served to Cloudflare accepting its purge.",
			Buckets: purgeBuckets,
		}),
	}
	p.purged = p.calls.WithLabelValues(cloudflare.Purged)
	p.failed = p.calls.WithLabelValues(cloudflare.Failed)
	return p
}

// Purge counts a call, or dropped URLs.
func (p *Purges) Purge(outcome string, files int) {
	switch outcome {
	case cloudflare.Purged:
		p.purged.Inc()
	case cloudflare.Failed:
		p.failed.Inc()
	case cloudflare.Dropped:
		p.dropped.Add(float64(files))
	}
}

// Delay observes the time from a change to its purge.
func (p *Purges) Delay(d time.Duration) { p.delay.Observe(d.Seconds()) }

// Describe sends the descriptors of every series.
func (p *Purges) Describe(ch chan<- *prometheus.Desc) {
	p.calls.Describe(ch)
	p.dropped.Describe(ch)
	p.delay.Describe(ch)
}

// Collect sends every series.
func (p *Purges) Collect(ch chan<- prometheus.Metric) {
	p.calls.Collect(ch)
	p.dropped.Collect(ch)
	p.delay.Collect(ch)
}
