package metrics_test

import (
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/storytold/craft-releases/pkg/metrics"
	"github.com/storytold/craft-releases/test/scrape"
	"github.com/storytold/craft-releases/test/testkit"
)

func TestRequests(t *testing.T) {
	tests := []struct {
		name     string
		requests map[string][]int // route → status codes answered, each in 250 µs
		want     map[string]float64
	}{
		{"a route's duration series exists from the start, its counters from the first request", map[string][]int{"/a": nil}, map[string]float64{
			`craft_api_request_duration_seconds_count{route="/a"}`: 0, `craft_api_request_duration_seconds_bucket{route="/a",le="+Inf"}`: 0,
		}},
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
		{"a code net/http never sends is 0", map[string][]int{"/a": {-1, 1000, 999}}, map[string]float64{
			`craft_api_requests_total{code="0",route="/a"}`: 2, `craft_api_requests_total{code="999",route="/a"}`: 1, `craft_api_request_duration_seconds_count{route="/a"}`: 3,
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := metrics.NewRequests()
			reg := pedantic(r)
			for route, codes := range tt.requests {
				record := r.Route(route)
				for _, code := range codes {
					record(code, 250*time.Microsecond)
				}
			}
			testkit.WantSamples(t, scrape.Samples(t, reg), tt.want, "craft_api_requests_total")
			scrape.Lint(t, reg)
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
	got := scrape.Samples(t, pedantic(r))
	var sum float64
	for _, v := range testkit.Family(got, "craft_api_requests_total") {
		sum += v
	}
	if sum != goroutines*each {
		t.Errorf("requests counted: got %v, want %d", sum, goroutines*each)
	}
	if n := len(testkit.Family(got, "craft_api_requests_total")); n != 3 {
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

func pedantic(cs ...prometheus.Collector) *prometheus.Registry {
	r := prometheus.NewPedanticRegistry()
	r.MustRegister(cs...)
	return r
}

// TestFeeds counts feed answers by app, feed, decision and code,
// concurrently.
func TestFeeds(t *testing.T) {
	f := metrics.NewFeeds()
	reg := pedantic(f)
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			f.Feed("photocraft", "tauri", "staged", 200)
			f.Feed("photocraft", "tauri", "none", 204)
			f.Feed("(unknown)", "tauri_static", "none", 404)
		})
	}
	wg.Wait()
	testkit.WantSamples(t, scrape.Samples(t, reg), map[string]float64{
		`craft_api_updates_total{app="photocraft",code="200",decision="staged",feed="tauri"}`:     8,
		`craft_api_updates_total{app="photocraft",code="204",decision="none",feed="tauri"}`:       8,
		`craft_api_updates_total{app="(unknown)",code="404",decision="none",feed="tauri_static"}`: 8,
	}, "craft_api_updates_total")
	scrape.Lint(t, reg)
}

func TestFeedsAllocs(t *testing.T) {
	if testkit.RaceEnabled {
		t.Skip("the race detector changes allocation counts: task test-allocs runs this without it")
	}
	f := metrics.NewFeeds()
	f.Feed("photocraft", "tauri", "staged", 200)
	if allocs := testing.AllocsPerRun(100, func() { f.Feed("photocraft", "tauri", "staged", 200) }); allocs != 0 {
		t.Errorf("allocations per answer: got %v, want 0", allocs)
	}
}
