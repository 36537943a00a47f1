package apipod_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/storytold/craft-releases/pkg/metrics/apipod"
	"github.com/storytold/craft-releases/pkg/redis/hydrate"
	"github.com/storytold/craft-releases/pkg/release"
	"github.com/storytold/craft-releases/pkg/snapshot"
	"github.com/storytold/craft-releases/test/fakeclock"
	"github.com/storytold/craft-releases/test/scrape"
	"github.com/storytold/craft-releases/test/testkit"
)

func reg(cs ...prometheus.Collector) *prometheus.Registry {
	r := prometheus.NewPedanticRegistry()
	r.MustRegister(cs...)
	return r
}

// stats is a hydrator's counters.
type stats hydrate.Stats

func (s stats) Stats() hydrate.Stats { return hydrate.Stats(s) }

func TestAPI(t *testing.T) {
	apps := []release.App{{Key: "a", Name: "A", Repo: "o/a"}, {Key: "b", Name: "B", Repo: "o/b"}}
	v1 := &release.Release{Tag: "v1", Assets: []release.Asset{}}
	tests := []struct {
		name     string
		entries  []map[string]release.Entry // one SetAll each
		hydrator apipod.Hydrator
		want     map[string]float64
	}{
		// Never fetched is no fetch time at all, not 0 (data 56 years old).
		{name: "cold standalone pod: never fetched, one render, no hydrator series", want: map[string]float64{`craft_api_apps_unfetched`: 2, `craft_api_renders_total`: 1}},
		{
			name:    "one app fetched: last_fetched is still null",
			entries: []map[string]release.Entry{{"a": {FetchedAt: t0, ETag: `"e"`, Release: v1}, "not-configured": {FetchedAt: t0}}},
			want:    map[string]float64{`craft_api_app_fetched_timestamp_seconds{app="a"}`: unix(0), `craft_api_apps_unfetched`: 1, `craft_api_renders_total`: 2},
		},
		{
			name: "every app fetched, in split mode",
			entries: []map[string]release.Entry{
				{"a": {FetchedAt: t0.Add(time.Minute + time.Millisecond), ETag: `"e"`, Release: v1}},
				{"b": {FetchedAt: t0.Add(time.Second), ETag: `"e"`}},
				{"b": {FailedAt: t0.Add(time.Hour), Failures: 1}}, // a failure renders nothing
			},
			hydrator: stats{Connected: true, Hydrations: 7, Invalidations: 11, Reads: 120, CacheHits: 99, Missing: 2, Failures: 3, Metas: 4,
				Refused: 5, ClockOffset: -90 * time.Second},
			want: map[string]float64{
				`craft_api_app_fetched_timestamp_seconds{app="a"}`: unix(time.Minute + time.Millisecond), `craft_api_app_fetched_timestamp_seconds{app="b"}`: unix(time.Second),
				`craft_api_last_fetched_timestamp_seconds`: unix(time.Second), `craft_api_apps_unfetched`: 0, `craft_api_renders_total`: 3, `craft_api_hydrations_total`: 7, `craft_api_invalidations_total`: 11,
				`craft_api_redis_connected`: 1, `craft_api_redis_reads_total`: 120, `craft_api_redis_cache_hits_total`: 99,
				`craft_api_redis_missing_total`: 2, `craft_api_redis_failures_total`: 3, `craft_api_redis_fallback`: 0,
				`craft_api_meta_updates_total`: 4, `craft_api_redis_entries_refused_total`: 5, `craft_api_clock_offset_seconds`: -90,
			},
		},
		{
			name:     "split mode, Redis lost",
			hydrator: stats{Connected: false, Fallback: true},
			want: map[string]float64{`craft_api_apps_unfetched`: 2, `craft_api_renders_total`: 1, `craft_api_hydrations_total`: 0,
				`craft_api_invalidations_total`: 0, `craft_api_redis_connected`: 0, `craft_api_redis_reads_total`: 0,
				`craft_api_redis_cache_hits_total`: 0, `craft_api_redis_missing_total`: 0, `craft_api_redis_failures_total`: 0,
				`craft_api_redis_fallback`: 1, `craft_api_meta_updates_total`: 0, `craft_api_redis_entries_refused_total`: 0,
				`craft_api_clock_offset_seconds`: 0},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			snap := snapshot.New(apps, fakeclock.New(t0.Add(time.Hour)))
			for _, e := range tt.entries {
				snap.SetAll(e, time.Now())
			}
			r := reg(apipod.NewAPI(snap, tt.hydrator))
			testkit.WantSamples(t, scrape.Samples(t, r), tt.want, "craft_api_")
			scrape.Lint(t, r)
		})
	}
}

// TestAPIReadsAtScrapeTime checks that each scrape shows the snapshot of that
// moment, without anything telling the collector.
func TestAPIReadsAtScrapeTime(t *testing.T) {
	snap := snapshot.New([]release.App{{Key: "a"}}, nil)
	r := reg(apipod.NewAPI(snap, nil))
	for i := range 3 {
		at := t0.Add(time.Duration(i) * time.Hour)
		snap.Set("a", release.Entry{FetchedAt: at, ETag: fmt.Sprintf(`"e%d"`, i)})
		got := scrape.Samples(t, r)
		if v, want := got[`craft_api_app_fetched_timestamp_seconds{app="a"}`], float64(at.UnixNano())/1e9; v != want {
			t.Errorf("scrape %d: fetched got %v, want %v", i, v, want)
		}
		if v, want := got[`craft_api_renders_total`], float64(i+2); v != want {
			t.Errorf("scrape %d: renders got %v, want %v", i, v, want)
		}
	}
	if n := testutil.CollectAndCount(apipod.NewAPI(snap, nil)); n != 4 {
		t.Errorf("standalone series: got %d, want 4", n)
	}
}

var t0 = time.Date(2026, 10, 10, 12, 0, 0, 0, time.UTC)

// unix is t0 + d in Unix seconds.
func unix(d time.Duration) float64 { return float64(t0.Add(d).UnixNano()) / 1e9 }
