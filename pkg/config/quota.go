package config

import (
	"fmt"
	"io"
	"math"
	"time"

	"go.uber.org/zap"

	"github.com/storytold/craft-releases/pkg/release"
	"github.com/storytold/craft-releases/pkg/schedule"
)

// GitHub's hourly request quotas on its own API (304s count without a token).
const (
	QuotaWithoutToken = 60
	QuotaWithToken    = 5000
)

// Schedule is what the configured schedule asks of GitHub.
type Schedule struct {
	// RequestsPerHour is the fleet's steady-state requests an hour:
	// entries × 3600 / (I − M), however many pollers share the work.
	RequestsPerHour float64
	// QuotaPerHour is GitHub's quota for the configured token, or for none;
	// 0 when the API URL is not GitHub's own (an Enterprise server or a test
	// fake, whose quota is its own).
	QuotaPerHour float64
	// SafeInterval is the shortest interval that stays within QuotaPerHour
	// for the configured entries, never below the interval's minimum; 0 when
	// the quota is unknown.
	SafeInterval time.Duration
}

// Schedule works out what polling entries (Shared.Entries: one request per
// app, and one more per pre-release channel) at p's interval asks of
// GitHub, and what GitHub allows.
func (p Polling) Schedule(entries int) Schedule {
	sc := Schedule{RequestsPerHour: p.Timing().RequestsPerHour(entries)}
	if !isGitHub(p.GitHubAPIURL) {
		return sc
	}
	sc.QuotaPerHour, sc.SafeInterval = QuotaWithoutToken, 300*time.Second
	if p.GitHubToken != "" {
		sc.QuotaPerHour, sc.SafeInterval = QuotaWithToken, 60*time.Second
	}
	sc.SafeInterval = max(sc.SafeInterval, schedule.SafeInterval(entries, sc.QuotaPerHour))
	return sc
}

// Exceeds reports whether the schedule asks for more than GitHub's quota.
func (sc Schedule) Exceeds() bool {
	return sc.QuotaPerHour > 0 && sc.RequestsPerHour > sc.QuotaPerHour
}

// Warn logs, when the schedule exceeds GitHub's quota, the one warning
// `schedule exceeds github quota` with both figures and the safe interval.
func (sc Schedule) Warn(log *zap.Logger) {
	if !sc.Exceeds() {
		return
	}
	log.Warn("schedule exceeds github quota",
		zap.Float64("requests_per_hour", round1(sc.RequestsPerHour)),
		zap.Float64("quota_per_hour", sc.QuotaPerHour),
		zap.Int64("safe_interval_secs", int64(sc.SafeInterval/time.Second)),
	)
}

// ScheduleUsage writes, for --help, the schedule's arithmetic and the safe
// interval on GitHub's own API for the requests per interval that getenv
// configures: one per app and one per pre-release channel (the built-in
// list, without channels, when CRAFT_APPS_RELEASE_APPS or
// CRAFT_APPS_RELEASE_PRERELEASE_APPS does not parse).
func ScheduleUsage(w io.Writer, getenv func(string) string) {
	apps, err := ParseApps(getenv("CRAFT_APPS_RELEASE_APPS"))
	if err == nil {
		apps, err = WithPrereleases(apps, getenv("CRAFT_APPS_RELEASE_PRERELEASE_APPS"))
	}
	if err != nil {
		apps = DefaultApps()
	}
	entries := release.Requests(apps)
	github := "https://api.github.com/"
	without := Polling{GitHubAPIURL: github}.Schedule(entries)
	with := Polling{GitHubAPIURL: github, GitHubToken: "set"}.Schedule(entries)
	fmt.Fprintf(w, "\nThe GitHub quota: the fleet asks requests × 3600 / (I − M) times an hour, M = min(30 s, I/4),\n"+
		"however many pollers share the work: one request per interval for each app and one more for each\n"+
		"pre-release channel. A safe interval keeps that within %.0f %% of the quota (the rest is headroom for\n"+
		"retries and restarts). For the %d configured apps (%d requests per interval), on GitHub's own API:\n",
		schedule.QuotaShare*100, len(apps), entries)
	for _, q := range []struct {
		what string
		sc   Schedule
	}{{fmt.Sprintf("without a token (%d an hour, 304s count):", QuotaWithoutToken), without},
		{fmt.Sprintf("with a token (%d an hour):", QuotaWithToken), with}} {
		fmt.Fprintf(w, "  %-43s CRAFT_APPS_RELEASE_POLL_INTERVAL_SECS of at least %d\n", q.what, int64(q.sc.SafeInterval/time.Second))
	}
}

func round1(f float64) float64 { return math.Round(f*10) / 10 }
