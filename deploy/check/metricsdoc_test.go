package check

import (
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"

	"github.com/storytold/craft-releases/pkg/metrics"
	"github.com/storytold/craft-releases/pkg/metrics/apipod"
	"github.com/storytold/craft-releases/pkg/redis/hydrate"
	"github.com/storytold/craft-releases/pkg/release"
	"github.com/storytold/craft-releases/pkg/snapshot"
)

type connected struct{}

func (connected) Stats() hydrate.Stats { return hydrate.Stats{Connected: true} }

// TestMetricsDocMatchesTheBinaries gathers every craft_ series the binaries'
// collectors make, each one set once, and wants docs/metrics.md to document
// exactly those, with their types and labels: the rules and the dashboard
// are checked against the document, and the document against the code.
func TestMetricsDocMatchesTheBinaries(t *testing.T) {
	t.Parallel()
	apps := []release.App{{Key: "photocraft", Name: "PhotoCraft", Repo: "storytold/photocraft"}}
	reg := metrics.NewRegistry("poller", "dev", time.Minute)
	p := metrics.NewPoller(apps)
	p.Answer("photocraft", release.Answer{Outcome: release.Fetched, Remaining: 10, Reset: time.Now()})
	p.Fetched("photocraft", time.Now())
	p.Entry("photocraft", release.Entry{FetchedAt: time.Now(), Release: &release.Release{Tag: "v1"}})
	p.Schedule(26.4, 60)
	p.Companion("photocraft", "stored", release.Answer{Outcome: release.Fetched, Remaining: 9, Reset: time.Now()})
	snap := snapshot.New(apps, nil)
	v1 := &release.Release{Tag: "v1", PublishedAt: release.NewTime(time.Now())}
	snap.Set("photocraft", release.Entry{FetchedAt: time.Now(), ETag: `"e"`, Release: v1})
	snap.Set("photocraft:history", release.Entry{FetchedAt: time.Now(), ETag: `"h"`, History: release.NewHistory([]*release.Release{v1})})
	snap.SetMeta(release.Bulletin{Decisions: map[string]release.Decisions{"photocraft": {
		Rollout: &release.Rollout{Tag: "v1", Percent: 10}, Withdrawn: []release.Withdrawal{{Tag: "v0"}}}}})
	requests := metrics.NewRequests()
	requests.Route("/healthz")(200, time.Millisecond)
	purges := metrics.NewPurges()
	purges.Delay(time.Second)
	feeds := metrics.NewFeeds()
	feeds.Feed("photocraft", "tauri", "staged", 200)
	reg.MustRegister(p, apipod.NewAPI(snap, connected{}), requests, apipod.NewWebhook(), purges, feeds)
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	code := map[string]Metric{}
	for _, f := range families {
		if !strings.HasPrefix(f.GetName(), "craft_") {
			continue
		}
		m := Metric{Type: strings.ToLower(dto.MetricType_name[int32(f.GetType())]), Labels: map[string][]string{}}
		for _, s := range f.GetMetric() {
			for _, l := range s.GetLabel() {
				m.Labels[l.GetName()] = nil
			}
		}
		code[f.GetName()] = m
	}
	doc := metricsDoc(t)
	for _, name := range slices.Sorted(maps.Keys(code)) {
		d, ok := doc[name]
		switch {
		case !ok:
			t.Errorf("the binaries export %s, which docs/metrics.md does not document", name)
		case d.Type != code[name].Type:
			t.Errorf("%s: docs/metrics.md says %s, the code makes a %s", name, d.Type, code[name].Type)
		case !slices.Equal(slices.Sorted(maps.Keys(d.Labels)), slices.Sorted(maps.Keys(code[name].Labels))):
			t.Errorf("%s: docs/metrics.md gives the labels %v, the code %v", name, slices.Sorted(maps.Keys(d.Labels)), slices.Sorted(maps.Keys(code[name].Labels)))
		}
	}
	for _, name := range slices.Sorted(maps.Keys(doc)) {
		if _, ok := code[name]; !ok {
			t.Errorf("docs/metrics.md documents %s, which no collector makes", name)
		}
	}
}
