package metrics_test

import (
	"maps"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/storytold/craft-releases/pkg/metrics"
	"github.com/storytold/craft-releases/pkg/poller"
	"github.com/storytold/craft-releases/pkg/redis/store"
	"github.com/storytold/craft-releases/pkg/release"
	"github.com/storytold/craft-releases/pkg/schedule"
	"github.com/storytold/craft-releases/test/scrape"
	"github.com/storytold/craft-releases/test/testkit"
)

var t0 = time.Date(2026, 10, 10, 12, 0, 0, 0, time.UTC)

// unix is t0 + d in Unix seconds.
func unix(d time.Duration) float64 { return float64(t0.Add(d).UnixNano()) / 1e9 }

// zeroPoller is what a Poller of apps a and b exposes before any call.
func zeroPoller() map[string]float64 {
	z := map[string]float64{}
	for _, app := range []string{"a", "b"} {
		for _, o := range []string{"fetched", "not_modified", "failed", "rate_limited"} {
			z[`craft_poller_github_requests_total{app="`+app+`",outcome="`+o+`"}`] = 0
		}
		z[`craft_poller_redis_entries_refused_total{app="`+app+`"}`] = 0
		z[`craft_poller_app_failures{app="`+app+`",repo="o/`+app+`"}`] = 0
	}
	for _, s := range []string{`claims_total{result="won"}`, `claims_total{result="lost"}`,
		`writes_refused_total{kind="fetch"}`, `writes_refused_total{kind="not_modified"}`, `writes_refused_total{kind="failure"}`,
		`redis_errors_total{op="load"}`, `redis_errors_total{op="load_app"}`, `redis_errors_total{op="claim"}`, `redis_errors_total{op="put_fetch"}`,
		`redis_errors_total{op="put_not_modified"}`, `redis_errors_total{op="put_failure"}`, `redis_errors_total{op="put_backoff"}`,
		`mode{mode="coordinated"}`, `mode{mode="standalone"}`, `mode{mode="uncoordinated"}`,
		`store_write_path{path="script"}`, `store_write_path{path="watch"}`, `backoff_until_timestamp_seconds`,
		`round_duration_seconds_count`, `round_duration_seconds_sum`, `clock_offset_seconds`, `effective_interval_seconds`} {
		z["craft_poller_"+s] = 0
	}
	return z
}

func answer(o release.Outcome, remaining int, reset time.Time) release.Answer {
	return release.Answer{Outcome: o, Remaining: remaining, Reset: reset}
}

func TestPoller(t *testing.T) {
	tests := []struct {
		name    string
		calls   func(p *metrics.Poller)
		changed map[string]float64 // series that differ from zeroPoller, or are added to it
	}{
		{name: "no call: every counter at 0, the quota, the schedule and the fetch times absent", calls: func(*metrics.Poller) {}},
		{
			name: "answers by app and outcome, the quota of the last that had it",
			calls: func(p *metrics.Poller) {
				p.Answer("a", answer(release.Fetched, 59, t0.Add(time.Hour)))
				p.Answer("a", answer(release.NotModified, 58, t0.Add(time.Hour)))
				p.Answer("b", answer(release.Failed, 57, t0.Add(2*time.Hour)))
				p.Answer("b", answer(release.RateLimited, -1, time.Time{})) // no quota headers
				p.Answer("b", answer(release.RateLimited, -1, time.Time{}))
				p.Answer("not-configured", answer(release.Fetched, 56, t0.Add(3*time.Hour)))
			},
			changed: map[string]float64{
				`craft_poller_github_requests_total{app="a",outcome="fetched"}`:      1,
				`craft_poller_github_requests_total{app="a",outcome="not_modified"}`: 1,
				`craft_poller_github_requests_total{app="b",outcome="failed"}`:       1,
				`craft_poller_github_requests_total{app="b",outcome="rate_limited"}`: 2,
				// An app outside the list is not counted, but GitHub's quota is GitHub's.
				`craft_poller_github_quota_remaining`:               56,
				`craft_poller_github_quota_reset_timestamp_seconds`: unix(3 * time.Hour),
			},
		},
		{name: "a quota of 0 is a quota", calls: func(p *metrics.Poller) { p.Answer("a", answer(release.RateLimited, 0, t0.Add(time.Hour))) },
			changed: map[string]float64{
				`craft_poller_github_requests_total{app="a",outcome="rate_limited"}`: 1,
				`craft_poller_github_quota_remaining`:                                0,
				`craft_poller_github_quota_reset_timestamp_seconds`:                  unix(time.Hour),
			},
		},
		{name: "claims won and lost", calls: func(p *metrics.Poller) { p.Claim(true); p.Claim(true); p.Claim(false) },
			changed: map[string]float64{`craft_poller_claims_total{result="won"}`: 2, `craft_poller_claims_total{result="lost"}`: 1},
		},
		{
			name: "refused writes by kind; other operations are no write",
			calls: func(p *metrics.Poller) {
				for _, op := range []poller.Op{poller.OpPutFetch, poller.OpPutNotModified, poller.OpPutNotModified, poller.OpPutFailure, poller.OpPutBackoff, poller.OpClaim} {
					p.WriteRefused(op)
				}
			},
			changed: map[string]float64{`craft_poller_writes_refused_total{kind="fetch"}`: 1, `craft_poller_writes_refused_total{kind="not_modified"}`: 2,
				`craft_poller_writes_refused_total{kind="failure"}`: 1},
		},
		{
			name: "redis errors by operation, none outside pkg/poller's",
			calls: func(p *metrics.Poller) {
				for _, op := range []poller.Op{poller.OpLoad, poller.OpLoad, poller.OpLoadApp, poller.OpClaim, poller.OpPutFetch,
					poller.OpPutNotModified, poller.OpPutFailure, poller.OpPutBackoff, poller.Op("flushall")} {
					p.RedisError(op)
				}
			},
			changed: map[string]float64{`craft_poller_redis_errors_total{op="load"}`: 2, `craft_poller_redis_errors_total{op="load_app"}`: 1,
				`craft_poller_redis_errors_total{op="claim"}`: 1, `craft_poller_redis_errors_total{op="put_fetch"}`: 1,
				`craft_poller_redis_errors_total{op="put_not_modified"}`: 1, `craft_poller_redis_errors_total{op="put_failure"}`: 1,
				`craft_poller_redis_errors_total{op="put_backoff"}`: 1},
		},
		{
			name: "rounds: the last mode is 1, the backoff is the last one held",
			calls: func(p *metrics.Poller) {
				p.Round(poller.Coordinated, 2*time.Second, schedule.Backoff{})
				p.Round(poller.Standalone, 500*time.Millisecond, schedule.Backoff{Until: t0.Add(time.Hour), Trouble: 1})
				p.Round(poller.Mode("sideways"), time.Second, schedule.Backoff{Until: t0.Add(2 * time.Hour), Trouble: 2})
			},
			changed: map[string]float64{
				`craft_poller_mode{mode="standalone"}`:         1,
				`craft_poller_backoff_until_timestamp_seconds`: unix(2 * time.Hour),
				`craft_poller_round_duration_seconds_count`:    3,
				`craft_poller_round_duration_seconds_sum`:      3.5,
			},
		},
		{name: "the store's write path: the last one is 1", calls: func(p *metrics.Poller) { p.WritePath(store.ModeScript); p.WritePath(store.ModeWatch) },
			changed: map[string]float64{`craft_poller_store_write_path{path="watch"}`: 1}},
		{
			name: "a backoff that cleared is 0",
			calls: func(p *metrics.Poller) {
				p.Round(poller.Uncoordinated, 0, schedule.Backoff{Until: t0.Add(time.Hour), Trouble: 1})
				p.Round(poller.Uncoordinated, 0, schedule.Backoff{})
			},
			changed: map[string]float64{`craft_poller_mode{mode="uncoordinated"}`: 1, `craft_poller_round_duration_seconds_count`: 2},
		},
		{
			name: "fetch times of configured apps only",
			calls: func(p *metrics.Poller) {
				p.Fetched("a", t0)
				p.Fetched("a", t0.Add(90*time.Second+123*time.Millisecond))
				p.Fetched("not-configured", t0)
				p.Fetched("b", time.Time{}) // never: still no series
			},
			changed: map[string]float64{`craft_poller_app_fetched_timestamp_seconds{app="a"}`: unix(90*time.Second + 123*time.Millisecond)},
		},
		{
			name: "entries: failures in a row, and whether the last fetch had a release",
			calls: func(p *metrics.Poller) {
				v1 := &release.Release{Tag: "v1"}
				p.Entry("a", release.Entry{FetchedAt: t0, Release: v1})
				p.Entry("a", release.Entry{FetchedAt: t0, Release: v1, FailedAt: t0.Add(time.Minute), Failures: 3})
				// A 404 that dropped the release: fetched, none.
				p.Entry("b", release.Entry{FailedAt: t0, Failures: 2})
				p.Entry("b", release.Entry{FetchedAt: t0.Add(time.Minute), FailedAt: t0, Failures: 2})
				p.Entry("not-configured", release.Entry{FailedAt: t0, Failures: 9})
			},
			changed: map[string]float64{
				`craft_poller_app_failures{app="a",repo="o/a"}`:    3,
				`craft_poller_app_has_release{app="a",repo="o/a"}`: 1,
				`craft_poller_app_has_release{app="b",repo="o/b"}`: 0,
			},
		},
		{name: "a failure never fetched has no release series", calls: func(p *metrics.Poller) { p.Entry("b", release.Entry{FailedAt: t0, Failures: 1}) },
			changed: map[string]float64{`craft_poller_app_failures{app="b",repo="o/b"}`: 1}},
		{name: "the schedule and GitHub's quota", calls: func(p *metrics.Poller) { p.Schedule(173.3, 60) },
			changed: map[string]float64{`craft_poller_schedule_requests_per_hour`: 173.3, `craft_poller_github_quota_per_hour`: 60}},
		{
			name: "refused entries by app, the clock's offset",
			calls: func(p *metrics.Poller) {
				for _, app := range []string{"a", "a", "nobody"} {
					p.Refused(app)
				}
				p.ClockOffset(-3600 * time.Second)
				p.Paced(930 * time.Second)
			},
			changed: map[string]float64{`craft_poller_redis_entries_refused_total{app="a"}`: 2, `craft_poller_clock_offset_seconds`: -3600,
				`craft_poller_effective_interval_seconds`: 930},
		},
		{name: "a schedule against an API whose quota is unknown", calls: func(p *metrics.Poller) { p.Schedule(26.4, 0) },
			changed: map[string]float64{`craft_poller_schedule_requests_per_hour`: 26.4}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := metrics.NewPoller([]release.App{{Key: "a", Repo: "o/a"}, {Key: "b", Repo: "o/b"}, {Key: "a", Repo: "o/a"}})
			reg := prometheus.NewPedanticRegistry()
			reg.MustRegister(p)
			tt.calls(p)
			want := zeroPoller()
			maps.Copy(want, tt.changed)
			got := scrape.Samples(t, reg)
			testkit.WantSamples(t, got, want, "craft_poller_github_", "craft_poller_claims", "craft_poller_writes", "craft_poller_redis",
				"craft_poller_mode", "craft_poller_store_", "craft_poller_backoff", "craft_poller_round_duration_seconds_count",
				"craft_poller_round_duration_seconds_sum", "craft_poller_app_", "craft_poller_schedule_", "craft_poller_clock_", "craft_poller_effective_")
			scrape.Lint(t, reg)
		})
	}
}

// TestPollerHistorySeries: a history entry has no series until it is asked
// about (only apps with decisions have it polled); then its requests and
// failures are counted like an app's.
func TestPollerHistorySeries(t *testing.T) {
	a := release.App{Key: "a", Repo: "o/a"}
	p := metrics.NewPoller(release.Entries([]release.App{a}))
	before := testutil.CollectAndCount(p)
	if n := testutil.CollectAndCount(metrics.NewPoller([]release.App{a})); before != n {
		t.Errorf("series with the history entry %d, without %d: want the same", before, n)
	}
	p.Answer("a:history", answer(release.Failed, 10, t0))
	p.Entry("a:history", release.Entry{FailedAt: t0, Failures: 1})
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(p)
	testkit.WantSamples(t, scrape.Samples(t, reg), map[string]float64{
		`craft_poller_github_requests_total{app="a:history",outcome="failed"}`: 1,
		`craft_poller_app_failures{app="a:history",repo="o/a"}`:                1,
	})
}

// TestPollerBounded checks that the series stay those of the configured apps
// and the fixed sets, whatever the calls.
func TestPollerBounded(t *testing.T) {
	p := metrics.NewPoller([]release.App{{Key: "a"}, {Key: "b"}})
	for i := range 100 {
		app := string(rune('a' + i%26))
		p.Answer(app, answer(release.Outcome(i%7), i, t0))
		p.Fetched(app, t0)
		p.RedisError(poller.Op(app))
		p.WriteRefused(poller.Op(app))
		p.Round(poller.Mode(app), 0, schedule.Backoff{})
		p.WritePath(store.WriteMode(i))
		p.Refused(app)
		p.RefreshesDeferred(app, 1)
		p.Entry(app, release.Entry{FetchedAt: t0, FailedAt: t0.Add(time.Duration(i)), Failures: i})
	}
	// 2 apps × 4 outcomes, 2 quota gauges, 2 results, 3 kinds, 7 operations,
	// 3 modes, 2 write paths, the backoff, the round histogram, 2 apps' fetch
	// times, the webhook histogram, the clock offset, the effective interval,
	// 2 apps' refused reads, 3 reasons for deferred refreshes, 2 apps' failures
	// and whether they have a release.
	if got, want := testutil.CollectAndCount(p), 8+2+2+3+7+3+2+1+1+2+1+1+1+2+3+2+2; got != want {
		t.Errorf("series: got %d, want %d", got, want)
	}
}
