package apipod

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/storytold/craft-releases/pkg/webhook"
)

var (
	webhookEvents   = []string{webhook.EventPing, webhook.EventRelease, webhook.EventOther}
	webhookOutcomes = []string{webhook.Accepted, webhook.Ignored, webhook.Duplicate, webhook.BadSignature,
		webhook.TooLarge, webhook.Busy, webhook.Unavailable, webhook.Invalid}
)

var _ webhook.Observer = (*Webhook)(nil)

// Webhook holds craft_api_webhook_deliveries_total. It is a
// webhook.Observer and a prometheus.Collector; register it once. Its
// methods are safe for concurrent use; events and outcomes outside
// pkg/webhook's constants are ignored.
type Webhook struct {
	deliveries *prometheus.CounterVec
	series     map[[2]string]prometheus.Counter
}

// NewWebhook returns the webhook's counters, every event and outcome at 0.
func NewWebhook() *Webhook {
	w := &Webhook{
		deliveries: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "craft_api_webhook_deliveries_total",
			Help: "GitHub webhook deliveries by event and outcome.",
		}, []string{"event", "outcome"}),
		series: make(map[[2]string]prometheus.Counter),
	}
	for _, e := range webhookEvents {
		for _, o := range webhookOutcomes {
			w.series[[2]string{e, o}] = w.deliveries.WithLabelValues(e, o)
		}
	}
	return w
}

// Describe sends the descriptor of the counter.
func (w *Webhook) Describe(ch chan<- *prometheus.Desc) { w.deliveries.Describe(ch) }

// Collect sends every series.
func (w *Webhook) Collect(ch chan<- prometheus.Metric) { w.deliveries.Collect(ch) }

// Delivery counts one delivery.
func (w *Webhook) Delivery(event, outcome string) {
	if c, ok := w.series[[2]string{event, outcome}]; ok {
		c.Inc()
	}
}
