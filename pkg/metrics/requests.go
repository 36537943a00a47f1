package metrics

import (
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// requestBuckets span an answer from memory (tens of microseconds) to a slow
// client.
var requestBuckets = []float64{0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.1, 0.5, 1, 5}

// Requests holds craft_api_requests_total and
// craft_api_request_duration_seconds. It is a daemon.Observer, for
// pkg/api's server and daemon.NewHealth, and a prometheus.Collector; register it once. It is safe for concurrent use.
type Requests struct {
	total    *prometheus.CounterVec
	duration *prometheus.HistogramVec
}

// NewRequests returns the request series, with none yet.
func NewRequests() *Requests {
	return &Requests{
		total: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "craft_api_requests_total",
			Help: "Requests answered, by registered route path and status code.",
		}, []string{"route", "code"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "craft_api_request_duration_seconds",
			Help:    "Time to answer a request, by registered route path.",
			Buckets: requestBuckets,
		}, []string{"route"}),
	}
}

// Describe sends the descriptors of both series.
func (r *Requests) Describe(ch chan<- *prometheus.Desc) {
	r.total.Describe(ch)
	r.duration.Describe(ch)
}

// Collect sends the current value of both series.
func (r *Requests) Collect(ch chan<- prometheus.Metric) {
	r.total.Collect(ch)
	r.duration.Collect(ch)
}

// Route returns the recorder of the route registered as path, which the
// server calls once per answered request. Call Route once per route, when the
// server is built: the route's duration series appears then, and its
// counters with the first request of each status code. The recorder is safe
// for concurrent use and, once a code was seen, does not allocate.
func (r *Requests) Route(path string) func(code int, took time.Duration) {
	rt := &route{path: path, total: r.total, duration: r.duration.WithLabelValues(path)}
	return rt.observe
}

// route records the requests of one route path.
type route struct {
	path     string
	total    *prometheus.CounterVec
	duration prometheus.Observer
	// byCode caches each status code's counter; net/http allows 100 to 999.
	byCode [1000]atomic.Pointer[prometheus.Counter]
}

func (rt *route) observe(code int, took time.Duration) {
	if code < 0 || code >= len(rt.byCode) {
		code = 0
	}
	c := rt.byCode[code].Load()
	if c == nil {
		// Two requests may race here; both get the vector's one child.
		child := rt.total.WithLabelValues(rt.path, strconv.Itoa(code))
		c = &child
		rt.byCode[code].Store(c)
	}
	(*c).Inc()
	rt.duration.Observe(took.Seconds())
}

// Feeds holds craft_api_updates_total: the answers of the updater feeds by
// app, feed, the release decision they came from and status code, never by
// version or install. It is a pkg/api
// FeedObserver and a prometheus.Collector; register it once. It is safe for
// concurrent use.
type Feeds struct {
	total *prometheus.CounterVec

	mu    sync.RWMutex
	byKey map[feedKey]prometheus.Counter
}

type feedKey struct {
	app, feed, decision string
	code                int
}

// NewFeeds returns the feed series, with none yet: a series appears with
// its first answer.
func NewFeeds() *Feeds {
	return &Feeds{
		total: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "craft_api_updates_total",
			Help: "Answers of the updater feeds, by app, feed, the release decision they came from (none, staged, previous, client_side, below_minimum, withdrawn_skipped) and status code.",
		}, []string{"app", "feed", "decision", "code"}),
		byKey: map[feedKey]prometheus.Counter{},
	}
}

// Describe sends the series' descriptor.
func (f *Feeds) Describe(ch chan<- *prometheus.Desc) { f.total.Describe(ch) }

// Collect sends the series' values.
func (f *Feeds) Collect(ch chan<- prometheus.Metric) { f.total.Collect(ch) }

// Feed counts one answer of feed about app (a configured key, or pkg/api's
// UnknownApp, so that requests add no series) from decision (one of pkg/api's
// few) with status code. Once a series exists, counting allocates nothing.
func (f *Feeds) Feed(app, feed, decision string, code int) {
	k := feedKey{app, feed, decision, code}
	f.mu.RLock()
	c, ok := f.byKey[k]
	f.mu.RUnlock()
	if !ok {
		c = f.total.WithLabelValues(app, feed, decision, strconv.Itoa(code))
		f.mu.Lock()
		f.byKey[k] = c
		f.mu.Unlock()
	}
	c.Inc()
}
