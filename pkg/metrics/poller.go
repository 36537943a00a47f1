package metrics

import (
	"slices"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/storytold/craft-releases/pkg/poller"
	"github.com/storytold/craft-releases/pkg/redis/store"
	"github.com/storytold/craft-releases/pkg/release"
	"github.com/storytold/craft-releases/pkg/schedule"
)

// The label values of the poller's fixed sets, every one of them exposed
// from the start so that rate() and alerts see the zeros.
var (
	outcomes = []release.Outcome{release.Fetched, release.NotModified, release.Failed, release.RateLimited}
	modes    = []poller.Mode{poller.Coordinated, poller.Standalone, poller.Uncoordinated}
	// deferReasons are the reasons a refresh request waits.
	deferReasons = []string{poller.Coalesced, poller.AppBudget, poller.FleetBudget}
	ops          = []poller.Op{poller.OpLoad, poller.OpLoadApp, poller.OpClaim,
		poller.OpPutFetch, poller.OpPutNotModified, poller.OpPutFailure, poller.OpPutBackoff}
	// writeKinds names the guarded writes a Fleet may refuse.
	writeKinds = map[poller.Op]string{
		poller.OpPutFetch:       "fetch",
		poller.OpPutNotModified: "not_modified",
		poller.OpPutFailure:     "failure",
	}
)

var _ poller.Observer = (*Poller)(nil)

// roundBuckets spans an idle tick (one Redis read) to a full round of
// requests spaced a second apart.
var roundBuckets = []float64{0.001, 0.005, 0.025, 0.1, 0.5, 1, 2.5, 5, 10, 20, 30, 60, 120}

// refreshBuckets span a fetch made at once after a webhook delivery to the
// last retry 15 s later, and a per-app retry beyond.
var refreshBuckets = []float64{0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 20, 30, 60}

// Poller holds the craft_poller_* series. It is a poller.Observer and a
// prometheus.Collector; register it once. Its methods are safe for
// concurrent use. Apps outside the list given to NewPoller, and modes and
// operations outside pkg/poller's constants, are ignored.
type Poller struct {
	apps map[string]*appSeries

	requests       *prometheus.CounterVec
	quotaRemaining *prometheus.GaugeVec // no labels: absent until an answer had it
	quotaReset     *prometheus.GaugeVec // no labels: absent until an answer had it
	claims         *prometheus.CounterVec
	claimsWon      prometheus.Counter
	claimsLost     prometheus.Counter
	refused        *prometheus.CounterVec
	redisErrors    *prometheus.CounterVec
	mode           *prometheus.GaugeVec
	writePath      *prometheus.GaugeVec
	backoffUntil   prometheus.Gauge
	roundDuration  prometheus.Histogram
	fetched        *prometheus.GaugeVec
	scheduleRate   *prometheus.GaugeVec // no labels: absent until Schedule
	quotaPerHour   *prometheus.GaugeVec // no labels: absent unless the quota is known
	refreshed      prometheus.Histogram
	clockOffset    prometheus.Gauge
	interval       prometheus.Gauge
	entriesRefused *prometheus.CounterVec
	deferred       *prometheus.CounterVec
	failures       *prometheus.GaugeVec
	hasRelease     *prometheus.GaugeVec
	companions     *prometheus.CounterVec
}

// appSeries are one app's series, resolved once.
type appSeries struct {
	repo     string
	requests map[release.Outcome]prometheus.Counter // nil for a history entry: made when counted
	failures prometheus.Gauge                       // nil for a history entry: made when set
}

// NewPoller returns the poller's series for the configured apps, every
// counter at 0 and no app's fetch time (absent until one is known). A
// history entry's series appear only once it is asked about, as only the
// apps with decisions have theirs polled.
func NewPoller(apps []release.App) *Poller {
	p := &Poller{
		apps: make(map[string]*appSeries, len(apps)),
		requests: counterVec("craft_poller_github_requests_total",
			"GitHub requests and how they were classified.", "app", "outcome"),
		quotaRemaining: gaugeVec("craft_poller_github_quota_remaining",
			"x-ratelimit-remaining of the last GitHub answer that had it."),
		quotaReset: gaugeVec("craft_poller_github_quota_reset_timestamp_seconds",
			"x-ratelimit-reset of the last GitHub answer that had it (Unix seconds)."),
		claims: counterVec("craft_poller_claims_total",
			"Soft claims taken (won) or refused (lost).", "result"),
		refused: counterVec("craft_poller_writes_refused_total",
			"Guarded writes that Redis refused because another poller was newer.", "kind"),
		redisErrors: counterVec("craft_poller_redis_errors_total",
			"Redis calls that failed.", "op"),
		mode: gaugeVec("craft_poller_mode",
			"How the last round ran: 1 for its mode, 0 for the others.", "mode"),
		writePath: gaugeVec("craft_poller_store_write_path",
			"1 for how the store makes its guarded writes: the Lua script, or WATCH/MULTI/EXEC after Redis refused it (all 0 without Redis).", "path"),
		backoffUntil: gauge("craft_poller_backoff_until_timestamp_seconds",
			"The fleet backoff as this poller knows it (Unix seconds; 0: none)."),
		roundDuration: histogram("craft_poller_round_duration_seconds", roundBuckets,
			"How long a round took."),
		fetched: gaugeVec("craft_poller_app_fetched_timestamp_seconds",
			"The last fetch or 304 of each app that this poller knows of (Unix seconds; absent while never).", "app"),
		scheduleRate: gaugeVec("craft_poller_schedule_requests_per_hour",
			"The fleet's steady-state GitHub requests an hour at the configured interval: apps × 3600 / (I − M)."),
		quotaPerHour: gaugeVec("craft_poller_github_quota_per_hour",
			"GitHub's hourly quota for the configured token or for none (GitHub's own API only)."),
		refreshed: histogram("craft_poller_webhook_delivery_to_published_seconds", refreshBuckets,
			"From a webhook delivery's arrival to this poller's fetch that satisfied it, as published."),
		clockOffset: gauge("craft_poller_clock_offset_seconds",
			"How far this poller's clock ran ahead of Redis's (TIME) at the last tick; beyond 30 s it tells time by Redis."),
		interval: gauge("craft_poller_effective_interval_seconds",
			"The interval the poller schedules apps at: the configured one, or longer while GitHub's quota paces it."),
		entriesRefused: counterVec("craft_poller_redis_entries_refused_total",
			"Reads of an app's Redis hash refused: a release that fails the trust check, an oversized field, a time in the future; or of its webhook refresh request, for an oversized field.", "app"),
		deferred: counterVec("craft_poller_webhook_refreshes_deferred_total",
			"Webhook refresh requests that did not cost a GitHub request at once: coalesced into a newer one, or held back by the app's or the fleet's refresh budget.", "reason"),
		failures: gaugeVec("craft_poller_app_failures",
			"Failed GitHub requests in a row for each app, as this poller knows of them (0 since its last fetch or 304).", "app", "repo"),
		hasRelease: gaugeVec("craft_poller_app_has_release",
			"1 while the app's last fetch that this poller knows of has a release, 0 when it had none (absent while never fetched).", "app", "repo"),
		companions: counterVec("craft_poller_companions_total",
			"GitHub requests for a release's companion assets (the files the updater feeds serve) and how they ended.", "app", "outcome"),
	}
	p.initSeries(apps)
	return p
}

// initSeries creates every series of a fixed label set, so that each is
// there from the first scrape.
func (p *Poller) initSeries(apps []release.App) {
	for _, a := range apps {
		if _, dup := p.apps[a.Key]; dup {
			continue
		}
		s := &appSeries{repo: a.Repo}
		p.apps[a.Key] = s
		if a.Channel == release.HistoryChannel {
			continue
		}
		s.requests = make(map[release.Outcome]prometheus.Counter, len(outcomes))
		s.failures = p.failures.WithLabelValues(a.Key, a.Repo)
		for _, o := range outcomes {
			s.requests[o] = p.requests.WithLabelValues(a.Key, o.String())
		}
		p.entriesRefused.WithLabelValues(a.Key)
	}
	p.claimsWon = p.claims.WithLabelValues("won")
	p.claimsLost = p.claims.WithLabelValues("lost")
	for _, kind := range writeKinds {
		p.refused.WithLabelValues(kind)
	}
	for _, op := range ops {
		p.redisErrors.WithLabelValues(string(op))
	}
	for _, m := range modes {
		p.mode.WithLabelValues(string(m))
	}
	for _, m := range writePaths {
		p.writePath.WithLabelValues(m.String())
	}
	for _, why := range deferReasons {
		p.deferred.WithLabelValues(why)
	}
}

func counterVec(name, help string, labels ...string) *prometheus.CounterVec {
	return prometheus.NewCounterVec(prometheus.CounterOpts{Name: name, Help: help}, labels)
}

func gaugeVec(name, help string, labels ...string) *prometheus.GaugeVec {
	return prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: name, Help: help}, labels)
}

func gauge(name, help string) prometheus.Gauge {
	return prometheus.NewGauge(prometheus.GaugeOpts{Name: name, Help: help})
}

func histogram(name string, buckets []float64, help string) prometheus.Histogram {
	return prometheus.NewHistogram(prometheus.HistogramOpts{Name: name, Help: help, Buckets: buckets})
}

func (p *Poller) collectors() []prometheus.Collector {
	return []prometheus.Collector{p.requests, p.quotaRemaining, p.quotaReset, p.claims, p.refused,
		p.redisErrors, p.mode, p.writePath, p.backoffUntil, p.roundDuration, p.fetched, p.scheduleRate, p.quotaPerHour, p.refreshed,
		p.clockOffset, p.interval, p.entriesRefused, p.deferred, p.failures, p.hasRelease, p.companions}
}

// Describe sends the descriptors of every series.
func (p *Poller) Describe(ch chan<- *prometheus.Desc) {
	for _, c := range p.collectors() {
		c.Describe(ch)
	}
}

// Collect sends the current value of every series.
func (p *Poller) Collect(ch chan<- prometheus.Metric) {
	for _, c := range p.collectors() {
		c.Collect(ch)
	}
}

// writePaths are the values of craft_poller_store_write_path's path label.
var writePaths = []store.WriteMode{store.ModeScript, store.ModeWatch}

// WritePath sets craft_poller_store_write_path to m; it is the store's
// mode observer (store.WithModeObserver). Every path keeps its series.
func (p *Poller) WritePath(m store.WriteMode) {
	for _, path := range writePaths {
		v := 0.0
		if path == m {
			v = 1
		}
		p.writePath.WithLabelValues(path.String()).Set(v)
	}
}

// Answer counts a GitHub answer by app and outcome and keeps the quota it
// announced: Remaining when known (not negative), Reset when not zero.
func (p *Poller) Answer(app string, a release.Answer) {
	if s, ok := p.apps[app]; ok {
		if c, ok := s.requests[a.Outcome]; ok {
			c.Inc()
		} else if s.requests == nil && slices.Contains(outcomes, a.Outcome) {
			p.requests.WithLabelValues(app, a.Outcome.String()).Inc()
		}
	}
	if a.Remaining >= 0 {
		p.quotaRemaining.WithLabelValues().Set(float64(a.Remaining))
	}
	if !a.Reset.IsZero() {
		p.quotaReset.WithLabelValues().Set(seconds(a.Reset))
	}
}

// Companion counts a companion request about app by how it ended
// (poller.CompanionStored and the others) and keeps the quota its answer
// announced, as Answer does. It is the poller's CompanionObserver.
func (p *Poller) Companion(app, outcome string, a release.Answer) {
	if _, ok := p.apps[app]; ok {
		p.companions.WithLabelValues(app, outcome).Inc()
	}
	p.Answer("", a)
}

// Entry sets app's failures in a row (0 unless its last request failed)
// and, once it was fetched, whether it has a release.
func (p *Poller) Entry(app string, e release.Entry) {
	s, ok := p.apps[app]
	if !ok {
		return
	}
	n := 0
	if e.Failing() {
		n = max(e.Failures, 1)
	}
	if s.failures != nil {
		s.failures.Set(float64(n))
	} else {
		p.failures.WithLabelValues(app, s.repo).Set(float64(n))
	}
	if e.Fetched() {
		has := 0.0
		if e.Release != nil {
			has = 1
		}
		p.hasRelease.WithLabelValues(app, s.repo).Set(has)
	}
}

// Fetched sets app's last known fetch time; a zero at changes nothing.
func (p *Poller) Fetched(app string, at time.Time) {
	if _, ok := p.apps[app]; ok && !at.IsZero() {
		p.fetched.WithLabelValues(app).Set(seconds(at))
	}
}

// Schedule exports what the configured schedule asks of GitHub, in requests
// an hour, and GitHub's quota; a quota <= 0 (unknown) exports none.
func (p *Poller) Schedule(requestsPerHour, quotaPerHour float64) {
	p.scheduleRate.WithLabelValues().Set(requestsPerHour)
	if quotaPerHour > 0 {
		p.quotaPerHour.WithLabelValues().Set(quotaPerHour)
	}
}

// Claim counts a claim won or lost.
func (p *Poller) Claim(won bool) {
	if won {
		p.claimsWon.Inc()
	} else {
		p.claimsLost.Inc()
	}
}

// WriteRefused counts a refused guarded write by its kind.
func (p *Poller) WriteRefused(op poller.Op) {
	if kind, ok := writeKinds[op]; ok {
		p.refused.WithLabelValues(kind).Inc()
	}
}

// RedisError counts a failed Redis call by its operation.
func (p *Poller) RedisError(op poller.Op) {
	if slices.Contains(ops, op) {
		p.redisErrors.WithLabelValues(string(op)).Inc()
	}
}

// Round sets the mode of the last round, records its duration and keeps the
// backoff.
func (p *Poller) Round(m poller.Mode, took time.Duration, b schedule.Backoff) {
	if slices.Contains(modes, m) {
		// The others first: a scrape in between sees no mode rather than two.
		for _, other := range modes {
			if other != m {
				p.mode.WithLabelValues(string(other)).Set(0)
			}
		}
		p.mode.WithLabelValues(string(m)).Set(1)
	}
	// An injected clock may step back; a round takes no negative time.
	p.roundDuration.Observe(max(took, 0).Seconds())
	p.backoffUntil.Set(seconds(b.Until))
}

// ClockOffset sets how far the poller's clock ran ahead of Redis's.
func (p *Poller) ClockOffset(d time.Duration) { p.clockOffset.Set(d.Seconds()) }

// Paced sets the effective interval.
func (p *Poller) Paced(d time.Duration) { p.interval.Set(d.Seconds()) }

// Refused counts a refused read of app's hash or refresh request; it is the
// store's count of store.Refusals.
func (p *Poller) Refused(app string) {
	if _, ok := p.apps[app]; ok {
		p.entriesRefused.WithLabelValues(app).Inc()
	}
}

// RefreshesDeferred counts n refresh requests deferred for why.
func (p *Poller) RefreshesDeferred(why string, n int) {
	if slices.Contains(deferReasons, why) {
		p.deferred.WithLabelValues(why).Add(float64(n))
	}
}

// Refreshed records how long after its webhook delivery a refresh request
// was satisfied.
func (p *Poller) Refreshed(_ string, took time.Duration) {
	p.refreshed.Observe(max(took, 0).Seconds())
}
