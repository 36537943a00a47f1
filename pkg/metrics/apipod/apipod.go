// Package apipod holds the Prometheus collectors that only an API pod has:
// what it serves, its Redis hydrator and its webhook (docs/metrics.md). They
// are apart from pkg/metrics so that the poller links neither the snapshot
// nor the hydrator nor the webhook.
package apipod

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/storytold/craft-releases/pkg/redis/hydrate"
	"github.com/storytold/craft-releases/pkg/snapshot"
)

// Renderings is what API reads from the served snapshot at each scrape:
// *snapshot.Snapshot.
type Renderings interface {
	Current() *snapshot.Rendering
	Renders() uint64
}

// Hydrator is what API reads from the Redis hydrator at each scrape:
// *hydrate.Hydrator.
type Hydrator interface {
	Stats() hydrate.Stats
}

// API is a prometheus.Collector of what an API pod serves, read at scrape
// time so that nothing on the request or render path changes:
// craft_api_app_fetched_timestamp_seconds, craft_api_last_fetched_timestamp_seconds,
// craft_api_apps_unfetched, craft_api_rollout_percent,
// craft_api_decision_unfound and craft_api_renders_total from the current
// rendering, and in split mode
// craft_api_hydrations_total, craft_api_invalidations_total,
// craft_api_redis_connected, craft_api_redis_reads_total,
// craft_api_redis_cache_hits_total, craft_api_redis_missing_total,
// craft_api_redis_failures_total, craft_api_redis_fallback,
// craft_api_meta_updates_total, craft_api_redis_entries_refused_total and
// craft_api_clock_offset_seconds from the hydrator. It is safe for concurrent use.
type API struct {
	renderings Renderings
	hydrator   Hydrator // nil: standalone, no hydrator series

	appFetched, lastFetched, unfetched   *prometheus.Desc
	renders                              *prometheus.Desc
	rollout, unfound                     *prometheus.Desc
	hydrations, invalidations, connected *prometheus.Desc
	reads, cacheHits, missing, failures  *prometheus.Desc
	fallback, metas                      *prometheus.Desc
	refused, clockOffset                 *prometheus.Desc
}

// NewAPI returns the collector of r and, when h is not nil, of h. Its app
// label takes the apps of r's renderings, which are the configured ones.
func NewAPI(r Renderings, h Hydrator) *API {
	return &API{
		renderings: r,
		hydrator:   h,
		appFetched: prometheus.NewDesc("craft_api_app_fetched_timestamp_seconds",
			"app_last_fetched of each app in the served snapshot (Unix seconds; absent while never fetched).", []string{"app"}, nil),
		lastFetched: prometheus.NewDesc("craft_api_last_fetched_timestamp_seconds",
			"release_info.last_fetched of the served snapshot (Unix seconds; absent while null).", nil, nil),
		unfetched: prometheus.NewDesc("craft_api_apps_unfetched",
			"Configured apps the served snapshot has no fetch of yet.", nil, nil),
		rollout: prometheus.NewDesc("craft_api_rollout_percent",
			"The share of installs offered each app's staged release, by app and tag (absent while no rollout is under way; 0 while halted).", []string{"app", "tag"}, nil),
		unfound: prometheus.NewDesc("craft_api_decision_unfound",
			"1 for each tag an operator's decision names that the pod cannot find among the app's releases: that decision is not applied.", []string{"app", "tag"}, nil),
		renders: prometheus.NewDesc("craft_api_renders_total",
			"Renderings of the response: at most one per change; changes that arrive during a render share the next.", nil, nil),
		hydrations: prometheus.NewDesc("craft_api_hydrations_total",
			"Reads from Redis that changed the snapshot.", nil, nil),
		invalidations: prometheus.NewDesc("craft_api_invalidations_total",
			"Invalidation pushes received from Redis.", nil, nil),
		connected: prometheus.NewDesc("craft_api_redis_connected",
			"1 while the hydrator's last exchange with Redis worked, else 0.", nil, nil),
		reads: prometheus.NewDesc("craft_api_redis_reads_total",
			"Hashes the hydrator read (the apps' and the meta hash), from Redis or from its client-side cache.", nil, nil),
		missing: prometheus.NewDesc("craft_api_redis_missing_total",
			"App hash reads that found nothing usable (flushed, expired, another format version, not a hash).", nil, nil),
		failures: prometheus.NewDesc("craft_api_redis_failures_total",
			"The hydrator's connection attempts and reads that failed.", nil, nil),
		metas: prometheus.NewDesc("craft_api_meta_updates_total",
			"Newer renames and notices the hydrator read from Redis and served.", nil, nil),
		cacheHits: prometheus.NewDesc("craft_api_redis_cache_hits_total",
			"Hash reads the hydrator's client-side cache answered without a round trip to Redis.", nil, nil),
		fallback: prometheus.NewDesc("craft_api_redis_fallback",
			"1 once Redis refused client tracking and the hydrator re-reads every app each second, else 0.", nil, nil),
		refused: prometheus.NewDesc("craft_api_redis_entries_refused_total",
			"App hash reads refused: a release that fails the trust check, an oversized field, a time in the future.", nil, nil),
		clockOffset: prometheus.NewDesc("craft_api_clock_offset_seconds",
			"How far the pod's clock ran ahead of Redis's (TIME) at the last full read; beyond 30 s it tells time by Redis.", nil, nil),
	}
}

// Describe sends the descriptors of the series a collects.
func (a *API) Describe(ch chan<- *prometheus.Desc) {
	ch <- a.appFetched
	ch <- a.lastFetched
	ch <- a.unfetched
	ch <- a.rollout
	ch <- a.unfound
	ch <- a.renders
	if a.hydrator != nil {
		ch <- a.hydrations
		ch <- a.invalidations
		ch <- a.connected
		ch <- a.reads
		ch <- a.cacheHits
		ch <- a.missing
		ch <- a.failures
		ch <- a.fallback
		ch <- a.metas
		ch <- a.refused
		ch <- a.clockOffset
	}
}

// Collect reads the current rendering and the hydrator's counters.
func (a *API) Collect(ch chan<- prometheus.Metric) {
	cur := a.renderings.Current()
	// A time that is not there is no series rather than 0, which would read
	// as data 56 years old.
	unfetched := 0
	for key, app := range cur.Apps {
		if app.Rollout != nil {
			ch <- prometheus.MustNewConstMetric(a.rollout, prometheus.GaugeValue, float64(app.Rollout.Percent), key, app.Rollout.Tag)
		}
		for _, tag := range app.Unfound {
			ch <- prometheus.MustNewConstMetric(a.unfound, prometheus.GaugeValue, 1, key, tag)
		}
		if app.FetchedAt.IsZero() {
			unfetched++
			continue
		}
		ch <- prometheus.MustNewConstMetric(a.appFetched, prometheus.GaugeValue, seconds(app.FetchedAt), key)
	}
	if !cur.LastFetched.IsZero() {
		ch <- prometheus.MustNewConstMetric(a.lastFetched, prometheus.GaugeValue, seconds(cur.LastFetched))
	}
	ch <- prometheus.MustNewConstMetric(a.unfetched, prometheus.GaugeValue, float64(unfetched))
	ch <- prometheus.MustNewConstMetric(a.renders, prometheus.CounterValue, float64(a.renderings.Renders()))
	if a.hydrator == nil {
		return
	}
	st := a.hydrator.Stats()
	gauge := func(b bool) float64 {
		if b {
			return 1
		}
		return 0
	}
	ch <- prometheus.MustNewConstMetric(a.hydrations, prometheus.CounterValue, float64(st.Hydrations))
	ch <- prometheus.MustNewConstMetric(a.invalidations, prometheus.CounterValue, float64(st.Invalidations))
	ch <- prometheus.MustNewConstMetric(a.connected, prometheus.GaugeValue, gauge(st.Connected))
	ch <- prometheus.MustNewConstMetric(a.reads, prometheus.CounterValue, float64(st.Reads))
	ch <- prometheus.MustNewConstMetric(a.cacheHits, prometheus.CounterValue, float64(st.CacheHits))
	ch <- prometheus.MustNewConstMetric(a.missing, prometheus.CounterValue, float64(st.Missing))
	ch <- prometheus.MustNewConstMetric(a.failures, prometheus.CounterValue, float64(st.Failures))
	ch <- prometheus.MustNewConstMetric(a.fallback, prometheus.GaugeValue, gauge(st.Fallback))
	ch <- prometheus.MustNewConstMetric(a.metas, prometheus.CounterValue, float64(st.Metas))
	ch <- prometheus.MustNewConstMetric(a.refused, prometheus.CounterValue, float64(st.Refused))
	ch <- prometheus.MustNewConstMetric(a.clockOffset, prometheus.GaugeValue, st.ClockOffset.Seconds())
}

// seconds is t as Unix seconds.
func seconds(t time.Time) float64 { return float64(t.UnixNano()) / 1e9 }
