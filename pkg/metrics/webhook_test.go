package metrics_test

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/storytold/craft-releases/pkg/metrics"
	"github.com/storytold/craft-releases/pkg/webhook"
)

func TestWebhook(t *testing.T) {
	w := metrics.NewWebhook()
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(w)
	w.Delivery(webhook.EventRelease, webhook.Accepted)
	w.Delivery(webhook.EventRelease, webhook.Accepted)
	w.Delivery(webhook.EventOther, webhook.BadSignature)
	w.Delivery("push", webhook.Accepted)      // not a label value: ignored
	w.Delivery(webhook.EventPing, "whatever") // likewise
	// 3 events × 8 outcomes, all there from the start.
	if got, want := testutil.CollectAndCount(w), 24; got != want {
		t.Errorf("series: got %d, want %d", got, want)
	}
	got := scrape(t, reg)
	for series, want := range map[string]float64{
		`craft_api_webhook_deliveries_total{event="release",outcome="accepted"}`:    2,
		`craft_api_webhook_deliveries_total{event="other",outcome="bad_signature"}`: 1,
		`craft_api_webhook_deliveries_total{event="ping",outcome="accepted"}`:       0,
	} {
		if got[series] != want {
			t.Errorf("%s got %v, want %v", series, got[series], want)
		}
	}
	lint(t, reg)
}
