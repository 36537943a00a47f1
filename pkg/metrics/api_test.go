package metrics_test

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/storytold/craft-releases/pkg/metrics"
	"github.com/storytold/craft-releases/pkg/redis/hydrate"
	"github.com/storytold/craft-releases/pkg/release"
	"github.com/storytold/craft-releases/pkg/snapshot"
	"github.com/storytold/craft-releases/test/fakeclock"
	"github.com/storytold/craft-releases/test/testkit"
)

func TestRequests(t *testing.T) {
	tests := []struct {
		name     string
		requests map[string][]int // route → status codes answered, each in 250 µs
		want     map[string]float64
	}{
		{
			name:     "a route's duration series exists from the start, its counters from the first request",
			requests: map[string][]int{"/a": nil},
			want: map[string]float64{
				`craft_api_request_duration_seconds_count{route="/a"}`:            0,
				`craft_api_request_duration_seconds_bucket{route="/a",le="+Inf"}`: 0,
			},
		},
		{
			name:     "by route and code",
			requests: map[string][]int{"/a": {200, 200, 304, 503}, "unmatched": {404, 404, 404}},
			want: map[string]float64{
				`craft_api_requests_total{code="200",route="/a"}`:                     2,
				`craft_api_requests_total{code="304",route="/a"}`:                     1,
				`craft_api_requests_total{code="503",route="/a"}`:                     1,
				`craft_api_requests_total{code="404",route="unmatched"}`:              3,
				`craft_api_request_duration_seconds_count{route="/a"}`:                4,
				`craft_api_request_duration_seconds_bucket{route="/a",le="0.00025"}`:  4,
				`craft_api_request_duration_seconds_bucket{route="/a",le="0.0001"}`:   0,
				`craft_api_request_duration_seconds_count{route="unmatched"}`:         3,
				`craft_api_request_duration_seconds_bucket{route="unmatched",le="1"}`: 3,
			},
		},
		{
			name:     "a code net/http never sends is 0",
			requests: map[string][]int{"/a": {-1, 1000, 999}},
			want: map[string]float64{
				`craft_api_requests_total{code="0",route="/a"}`:        2,
				`craft_api_requests_total{code="999",route="/a"}`:      1,
				`craft_api_request_duration_seconds_count{route="/a"}`: 3,
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := metrics.NewRequests()
			reg := prometheus.NewPedanticRegistry()
			reg.MustRegister(r)
			for route, codes := range tt.requests {
				record := r.Route(route)
				for _, code := range codes {
					record(code, 250*time.Microsecond)
				}
			}
			got := scrape(t, reg)
			for s, w := range tt.want {
				if v, ok := got[s]; !ok || v != w {
					t.Errorf("%s: got %v (present %v), want %v", s, v, ok, w)
				}
			}
			for s := range family(got, "craft_api_requests_total") {
				if _, ok := tt.want[s]; !ok {
					t.Errorf("unexpected series %s", s)
				}
			}
			lint(t, reg)
		})
	}
}

// TestRequestsConcurrent counts requests recorded from many goroutines, the
// first request of each code among them.
func TestRequestsConcurrent(t *testing.T) {
	r := metrics.NewRequests()
	record := r.Route("/a")
	const goroutines, each = 8, 500
	var wg sync.WaitGroup
	for g := range goroutines {
		wg.Go(func() {
			for i := range each {
				record(200+(g+i)%3, time.Millisecond)
			}
		})
	}
	wg.Wait()
	got := scrape(t, reg(r))
	var sum float64
	for _, v := range family(got, "craft_api_requests_total") {
		sum += v
	}
	if sum != goroutines*each {
		t.Errorf("requests counted: got %v, want %d", sum, goroutines*each)
	}
	if n := len(family(got, "craft_api_requests_total")); n != 3 {
		t.Errorf("series: got %d, want one per code (3)", n)
	}
}

// TestRequestsAllocs holds a recorder to no allocation once its code was seen,
// so that the endpoint's answers stay free of allocations.
func TestRequestsAllocs(t *testing.T) {
	if testkit.RaceEnabled {
		t.Skip("the race detector changes allocation counts: task test-allocs runs this without it")
	}
	record := metrics.NewRequests().Route("/a")
	record(200, time.Millisecond)
	if got := testing.AllocsPerRun(100, func() { record(200, time.Millisecond) }); got != 0 {
		t.Errorf("allocations per request: got %v, want 0", got)
	}
}

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
		hydrator metrics.Hydrator
		want     map[string]float64
	}{
		{
			// Never fetched is no fetch time at all, not 0 (data 56 years old).
			name: "cold standalone pod: never fetched, one render, no hydrator series",
			want: map[string]float64{
				`craft_api_apps_unfetched`: 2,
				`craft_api_renders_total`:  1,
			},
		},
		{
			name: "one app fetched: last_fetched is still null",
			entries: []map[string]release.Entry{
				{"a": {FetchedAt: t0, ETag: `"e"`, Release: v1}, "not-configured": {FetchedAt: t0}},
			},
			want: map[string]float64{
				`craft_api_app_fetched_timestamp_seconds{app="a"}`: unix(0),
				`craft_api_apps_unfetched`:                         1,
				`craft_api_renders_total`:                          2,
			},
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
				`craft_api_app_fetched_timestamp_seconds{app="a"}`: unix(time.Minute + time.Millisecond),
				`craft_api_app_fetched_timestamp_seconds{app="b"}`: unix(time.Second),
				`craft_api_last_fetched_timestamp_seconds`:         unix(time.Second),
				`craft_api_apps_unfetched`:                         0,
				`craft_api_renders_total`:                          3,
				`craft_api_hydrations_total`:                       7,
				`craft_api_invalidations_total`:                    11,
				`craft_api_redis_connected`:                        1,
				`craft_api_redis_reads_total`:                      120,
				`craft_api_redis_cache_hits_total`:                 99,
				`craft_api_redis_missing_total`:                    2,
				`craft_api_redis_failures_total`:                   3,
				`craft_api_redis_fallback`:                         0,
				`craft_api_meta_updates_total`:                     4,
				`craft_api_redis_entries_refused_total`:            5,
				`craft_api_clock_offset_seconds`:                   -90,
			},
		},
		{
			name:     "split mode, Redis lost",
			hydrator: stats{Connected: false, Fallback: true},
			want: map[string]float64{
				`craft_api_apps_unfetched`:              2,
				`craft_api_renders_total`:               1,
				`craft_api_hydrations_total`:            0,
				`craft_api_invalidations_total`:         0,
				`craft_api_redis_connected`:             0,
				`craft_api_redis_reads_total`:           0,
				`craft_api_redis_cache_hits_total`:      0,
				`craft_api_redis_missing_total`:         0,
				`craft_api_redis_failures_total`:        0,
				`craft_api_redis_fallback`:              1,
				`craft_api_meta_updates_total`:          0,
				`craft_api_redis_entries_refused_total`: 0,
				`craft_api_clock_offset_seconds`:        0,
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			snap := snapshot.New(apps, fakeclock.New(t0))
			for _, e := range tt.entries {
				snap.SetAll(e)
			}
			r := reg(metrics.NewAPI(snap, tt.hydrator))
			wantSamples(t, scrape(t, r), tt.want, "craft_api_")
			lint(t, r)
		})
	}
}

// TestAPIReadsAtScrapeTime checks that each scrape shows the snapshot of that
// moment, without anything telling the collector.
func TestAPIReadsAtScrapeTime(t *testing.T) {
	snap := snapshot.New([]release.App{{Key: "a"}}, nil)
	r := reg(metrics.NewAPI(snap, nil))
	for i := range 3 {
		at := t0.Add(time.Duration(i) * time.Hour)
		snap.Set("a", release.Entry{FetchedAt: at, ETag: fmt.Sprintf(`"e%d"`, i)})
		got := scrape(t, r)
		if v, want := got[`craft_api_app_fetched_timestamp_seconds{app="a"}`], float64(at.UnixNano())/1e9; v != want {
			t.Errorf("scrape %d: fetched got %v, want %v", i, v, want)
		}
		if v, want := got[`craft_api_renders_total`], float64(i+2); v != want {
			t.Errorf("scrape %d: renders got %v, want %v", i, v, want)
		}
	}
	if n := testutil.CollectAndCount(metrics.NewAPI(snap, nil)); n != 4 {
		t.Errorf("standalone series: got %d, want 4", n)
	}
}
