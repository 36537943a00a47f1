package apipod_test

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/storytold/craft-releases/pkg/metrics/apipod"
	"github.com/storytold/craft-releases/pkg/webhook"
	"github.com/storytold/craft-releases/test/scrape"
	"github.com/storytold/craft-releases/test/testkit"
)

func TestWebhook(t *testing.T) {
	w := apipod.NewWebhook()
	reg := reg(w)
	w.Delivery(webhook.EventRelease, webhook.Accepted)
	w.Delivery(webhook.EventRelease, webhook.Accepted)
	w.Delivery(webhook.EventOther, webhook.BadSignature)
	w.Delivery("push", webhook.Accepted)      // not a label value: ignored
	w.Delivery(webhook.EventPing, "whatever") // likewise
	// 3 events × 8 outcomes, all there from the start.
	if got, want := testutil.CollectAndCount(w), 24; got != want {
		t.Errorf("series: got %d, want %d", got, want)
	}
	testkit.WantSamples(t, scrape.Samples(t, reg), map[string]float64{
		`craft_api_webhook_deliveries_total{event="release",outcome="accepted"}`:    2,
		`craft_api_webhook_deliveries_total{event="other",outcome="bad_signature"}`: 1,
		`craft_api_webhook_deliveries_total{event="ping",outcome="accepted"}`:       0,
	})
	scrape.Lint(t, reg)
}
