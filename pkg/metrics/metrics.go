// Package metrics holds the service's Prometheus collectors, named as in
// docs/metrics.md. Each process builds its own registry with NewRegistry and
// registers the collectors of its parts: a Poller (the poller's Observer),
// Purges (the Cloudflare purger's) and Requests (the servers' daemon.Observer);
// what only an API pod has (its snapshot, hydrator and webhook) is in
// pkg/metrics/apipod, which the poller does not link. Label values come only
// from the configured app list and fixed sets, so the number of series is
// bounded.
//
// The other packages know nothing of Prometheus: they declare the small
// interfaces these types implement, or expose counters that are read here.
package metrics

import (
	"net/http"
	"runtime"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"go.uber.org/zap"
)

// NewRegistry returns a new registry holding craft_build_info for binary
// ("api" or "poller") and version, craft_poll_interval_seconds for interval,
// and the Go client's standard go_* and process_* collectors. It uses no
// global state, so several registries may live in one process.
func NewRegistry(binary, version string, interval time.Duration) *prometheus.Registry {
	build := prometheus.NewGauge(prometheus.GaugeOpts{
		Name:        "craft_build_info",
		Help:        "What is running: always 1, with the binary, its version and the Go version as labels.",
		ConstLabels: prometheus.Labels{"binary": binary, "version": version, "goversion": runtime.Version()},
	})
	build.Set(1)
	pollInterval := prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "craft_poll_interval_seconds",
		Help: "The configured poll interval I.",
	})
	pollInterval.Set(interval.Seconds())

	reg := prometheus.NewRegistry()
	reg.MustRegister(
		build,
		pollInterval,
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
	)
	return reg
}

// Handler serves g's metrics in the Prometheus text format, for GET /metrics.
// A collector that fails is logged to log and left out of the answer, so the
// other series are still served.
func Handler(g prometheus.Gatherer, log *zap.Logger) http.Handler {
	return promhttp.HandlerFor(g, promhttp.HandlerOpts{
		ErrorLog:      zap.NewStdLog(log.With(zap.String("handler", "metrics"))),
		ErrorHandling: promhttp.ContinueOnError,
	})
}

// seconds is t as Unix seconds, or 0 when t is zero (never).
func seconds(t time.Time) float64 {
	if t.IsZero() {
		return 0
	}
	return float64(t.UnixNano()) / 1e9
}
