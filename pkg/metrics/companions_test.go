package metrics_test

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/storytold/craft-releases/pkg/metrics"
	"github.com/storytold/craft-releases/pkg/poller"
	"github.com/storytold/craft-releases/pkg/release"
	"github.com/storytold/craft-releases/test/scrape"
	"github.com/storytold/craft-releases/test/testkit"
)

// TestPollerCompanions checks that companion requests are counted by app
// and outcome, only for configured apps, and that their quota is kept like
// a release request's.
func TestPollerCompanions(t *testing.T) {
	p := metrics.NewPoller([]release.App{{Key: "a", Repo: "o/a"}})
	var _ poller.CompanionObserver = p
	p.Companion("a", poller.CompanionStored, release.Answer{Remaining: 41})
	p.Companion("a", poller.CompanionRefused, release.Answer{Remaining: 40})
	p.Companion("a", poller.CompanionRefused, release.Answer{Remaining: -1})
	p.Companion("unknown", poller.CompanionStored, release.Answer{Remaining: -1})
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(p)
	got := scrape.Samples(t, reg)
	testkit.WantSamples(t, got, map[string]float64{
		`craft_poller_companions_total{app="a",outcome="stored"}`:  1,
		`craft_poller_companions_total{app="a",outcome="refused"}`: 2,
		`craft_poller_github_quota_remaining`:                      40,
	}, "craft_poller_companions_total", "craft_poller_github_quota_remaining")
	scrape.Lint(t, reg)
}
