package soak

import (
	"bufio"
	"cmp"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/storytold/craft-releases/pkg/release"
)

// report is every figure of a soak, written as summary.json.
type report struct {
	Settings settings          `json:"settings"`
	Timings  map[string]string `json:"timings"`
	Bounds   map[string]string `json:"bounds"`

	Began      time.Time `json:"began"`      // the load started, faults began
	FaultsEnd  time.Time `json:"faults_end"` // the last fault was lifted, publishing stopped
	Settled    time.Time `json:"settled"`    // every pod served every latest release (zero: never)
	LoadEnded  time.Time `json:"load_ended"` // the last answer
	SettleTook float64   `json:"settle_took_s"`

	Answers            int            `json:"answers"`
	AnswersByPod       map[string]int `json:"answers_by_pod"`
	BadAnswers         int            `json:"bad_answers"`
	BadExamples        []string       `json:"bad_examples"`
	LatencyP99         float64        `json:"answer_latency_p99_s"`
	LatencyMax         float64        `json:"answer_latency_max_s"`
	Regressions        int            `json:"regressions"`
	RegressionExamples []string       `json:"regression_examples"`

	Published      int                `json:"releases_published"` // during the soak, after release 1 of each app
	Releases       []releaseLag       `json:"releases"`
	Unreached      int                `json:"releases_unreached"` // (release, pod) pairs never served
	WorstLag       releaseLag         `json:"worst_lag"`
	WorstLagPod    string             `json:"worst_lag_pod"`
	LagPercentiles map[string]float64 `json:"lag_percentiles_s"`
	// WebhookLag is the lag of the releases published outside fault
	// windows, each delivered by webhook: p50, p99.
	WebhookLag         map[string]float64 `json:"webhook_lag_outside_faults_s"`
	DeliveriesByStatus map[string]int     `json:"webhook_deliveries_by_status"`

	Faults       []fault        `json:"faults"`
	FaultsByKind map[string]int `json:"faults_by_kind"`
	Flushes      []flushRepair  `json:"flush_repairs"`

	GitHubRequests       int                `json:"github_requests"`
	GitHubByStatus       map[string]int     `json:"github_by_status"`
	PerApp               map[string]appLoad `json:"github_per_app"`
	MaxPerAppPerInterval float64            `json:"github_max_per_app_per_interval"`
	Early                []earlyRequest     `json:"github_early_requests"`
	RateLimitWindows     []windowFigure     `json:"rate_limit_windows"`

	Processes  []procFigure `json:"processes"`
	OutageLogs []outageLog  `json:"outage_logs"`
	Failures   []string     `json:"failures"`
}

type releaseLag struct {
	publication
	LagS map[string]float64 `json:"lag_s"` // pod → seconds until it served this release or a newer one
}

type appLoad struct {
	Requests    int     `json:"requests"`
	PerInterval float64 `json:"per_interval"`
}

// earlyRequest is a request for an app closer to the one before it than the
// rules allow without a reason, and the reason found ("" for none).
type earlyRequest struct {
	Repo   string    `json:"repo"`
	At     time.Time `json:"at"`
	Poller string    `json:"poller"`
	GapS   float64   `json:"gap_s"`
	Reason string    `json:"reason"`
}

type windowFigure struct {
	Start        time.Time      `json:"start"`
	Reset        time.Time      `json:"reset"`
	Inside       map[string]int `json:"inside"` // poller → requests inside the window
	AfterReset   int            `json:"after_reset_within_margin"`
	Backoff      bool           `json:"backoff_learned"` // some poller was refused inside
	RedisTrouble bool           `json:"redis_trouble"`
}

// outageLog is how often a process warned that Redis failed and said it was
// back, against the outages that reached it.
type outageLog struct {
	Name     string `json:"name"`
	Outages  int    `json:"outages"`
	Warnings int    `json:"warnings"`
	Backs    int    `json:"backs"`
}

type procFigure struct {
	Name           string  `json:"name"`
	Samples        int     `json:"samples"`
	FirstGoroutine float64 `json:"first_goroutines"`
	LastGoroutine  float64 `json:"last_goroutines"`
	PeakGoroutine  float64 `json:"peak_goroutines"`
	FirstHeap      float64 `json:"first_heap_inuse_bytes"`
	LastHeap       float64 `json:"last_heap_inuse_bytes"`
	PeakRSS        float64 `json:"peak_rss_bytes"`
	Checked        bool    `json:"checked"` // alive at the end: its first scrape against its last
}

func (r *report) fail(format string, args ...any) {
	r.Failures = append(r.Failures, fmt.Sprintf(format, args...))
}

func (s *soak) check() report {
	s.mu.Lock()
	defer s.mu.Unlock()
	r := report{
		Settings: s.set, Began: s.began, FaultsEnd: s.faultsEnd, Settled: s.settled, LoadEnded: s.loadEnded,
		Timings: map[string]string{
			"interval": interval.String(), "tick": tick.String(), "max_backoff": maxBackoff.String(),
			"startup_jitter": startupJitter.String(), "request_spacing": spacing.String(),
			"skew_margin": skewMargin.String(), "claim_window": claimWindow.String(),
			"reset_margin": resetMargin.String(), "publish_every": publishEvery.String(),
			"load": fmt.Sprintf("%d pods × %d workers, one request each per %v", len(s.pods), workersPerPod, loadPace),
		},
		Bounds: map[string]string{
			"early_gap": earlyGap.String(), "flush_repair": repairBound.String(),
			"settle": settleBound.String(), "goroutines": fmt.Sprint(goroutineBound),
			"heap_inuse": fmt.Sprintf("%d MiB", heapBound>>20), "rss": fmt.Sprintf("%d MiB", rssBound>>20),
			"slack": slack.String(),
		},
		Faults: s.faults, Flushes: s.flushes, FaultsByKind: map[string]int{},
		AnswersByPod: map[string]int{}, GitHubByStatus: map[string]int{}, PerApp: map[string]appLoad{},
		DeliveriesByStatus: map[string]int{}, Failures: []string{},
	}
	if !s.settled.IsZero() {
		r.SettleTook = s.settled.Sub(s.faultsEnd).Seconds()
	} else {
		r.fail("the pods did not all serve every app's latest release within %v of the last fault", settleBound)
	}
	for _, p := range s.problems {
		r.fail("harness: %s", p)
	}
	for _, f := range s.faults {
		r.FaultsByKind[f.Kind]++
	}
	for _, check := range []func(*report){s.checkAnswers, s.checkLag, s.checkWebhookLag, s.checkGitHub, s.checkFlushes, s.checkLeaks, s.checkOutageLogs} {
		check(&r)
	}
	return r
}

// checkOutageLogs holds each process to one warning per outage (docs/scheduling.md:
// at most one every 10 minutes while it lasts, and "back" only after a whole
// tick without a Redis error): no more warnings than the Redis outages that
// reached it in its life, a failover for all, a silent Redis for its poller
// alone, and no more "back" lines than warnings.
func (s *soak) checkOutageLogs(r *report) {
	for _, p := range s.procs {
		life, outages := window{p.started, cmp.Or(p.endedAt(), time.Now())}, 0
		for _, f := range s.faults {
			reaches := f.Kind == faultPrimaryKill || (f.Kind == faultSilent && p.role == "poller" && f.Slot == p.slot)
			if reaches && f.window().overlaps(life) {
				outages++
			}
		}
		down, up := "redis unavailable", "redis is back"
		if p.role == "api" {
			down, up = "redis unavailable, serving what is loaded", "redis available again"
		}
		downs, ups := p.count(down), p.count(up)
		r.OutageLogs = append(r.OutageLogs, outageLog{Name: p.name, Outages: outages, Warnings: downs, Backs: ups})
		if downs > outages {
			r.fail("%s logged %q %d times for %d Redis outages in its life (one warning per outage)", p.name, down, downs, outages)
		}
		if ups > downs {
			r.fail("%s logged %q %d times after %d warnings", p.name, up, ups, downs)
		}
	}
}

// example counts a failure in n and keeps the first ten in examples.
func example(n *int, examples *[]string, format string, args ...any) {
	if *n++; len(*examples) < 10 {
		*examples = append(*examples, fmt.Sprintf(format, args...))
	}
}

// percentiles sorts vs and returns its value at each quantile, by "p50" and so on.
func percentiles(vs []float64, qs ...float64) map[string]float64 {
	sort.Float64s(vs)
	out := map[string]float64{}
	for _, q := range qs {
		if len(vs) > 0 {
			out[fmt.Sprintf("p%g", q*100)] = vs[min(len(vs)-1, int(q*float64(len(vs))))]
		}
	}
	return out
}

// goodAnswers returns each pod's good answers, sorted by by.
func (s *soak) goodAnswers(by func(podAnswer) time.Time) map[string][]podAnswer {
	out := make(map[string][]podAnswer)
	for _, a := range s.answers {
		if a.Bad == "" {
			out[a.Pod] = append(out[a.Pod], a)
		}
	}
	for _, as := range out {
		sort.Slice(as, func(i, j int) bool { return by(as[i]).Before(by(as[j])) })
	}
	return out
}

func (s *soak) checkAnswers(r *report) {
	var took []float64
	for _, a := range s.answers {
		took = append(took, a.End.Sub(a.Start).Seconds())
		r.Answers++
		r.AnswersByPod[a.Pod]++
		if a.Bad != "" {
			example(&r.BadAnswers, &r.BadExamples, "%s at %s: %s", a.Pod, s.rel(a.End), a.Bad)
		}
	}
	if r.Answers == 0 {
		r.fail("no answer was recorded")
	} else {
		r.LatencyP99, r.LatencyMax = percentiles(took, 0.99)["p99"], took[len(took)-1]
	}
	if r.BadAnswers > 0 {
		r.fail("%d of %d answers were not 200 with a valid body; first: %s", r.BadAnswers, r.Answers, r.BadExamples[0])
	}
	// An answer must not serve less than an answer of the same pod that had
	// ended before it started (answers in flight together may be either way).
	byEnd := s.goodAnswers(func(a podAnswer) time.Time { return a.End })
	for pod, as := range s.goodAnswers(func(a podAnswer) time.Time { return a.Start }) {
		maxTag, maxFetched, k := map[string]int{}, map[string]time.Time{}, 0
		for _, b := range as {
			for ; k < len(byEnd[pod]) && byEnd[pod][k].End.Before(b.Start); k++ {
				for app, n := range byEnd[pod][k].Tags {
					maxTag[app] = max(maxTag[app], n)
					if f := byEnd[pod][k].Fetched[app]; f.After(maxFetched[app]) {
						maxFetched[app] = f
					}
				}
			}
			for app, n := range b.Tags {
				switch {
				case n < maxTag[app]:
					example(&r.Regressions, &r.RegressionExamples, "at %s: %s served %s %s after it had served %s",
						s.rel(b.Start), pod, app, tagOf(n), tagOf(maxTag[app]))
				case b.Fetched[app].Before(maxFetched[app]) && !s.clockSetBack(b.Start, app, maxFetched[app].Sub(b.Fetched[app])):
					example(&r.Regressions, &r.RegressionExamples, "at %s: %s served %s fetched at %s after it had served one fetched at %s",
						s.rel(b.Start), pod, app, b.Fetched[app].Format(time.StampMilli), maxFetched[app].Format(time.StampMilli))
				}
			}
		}
	}
	if r.Regressions > 0 {
		r.fail("%d regressions (a pod served an older release or fetch time than before); first: %s", r.Regressions, r.RegressionExamples[0])
	}
}

// clockSetBack reports whether an answer that started at t may serve app's
// fetch time back by d from one served before: Redis's clock was set back (at
// the start of a step back, or at the end of one ahead) by at least d, and the
// fleet tells time by Redis (docs/redis.md, "Time you cannot trust"). A fetch
// stamped by the wrong clock stays served until a poller fetches the app again
// after the fault, which a GitHub fault or a backoff that follows may delay: the
// allowance lasts until a pod has hydrated that fetch.
func (s *soak) clockSetBack(t time.Time, app string, d time.Duration) bool {
	for _, f := range s.faults {
		if f.Kind != faultClockStep || d > f.Step.Abs()+slack || t.Before(f.Start) {
			continue
		}
		if refetched, ok := s.fetchedAfter(app, f.End.Add(longestTick+redisCall)); !ok ||
			!t.After(refetched.Add(redisCall+hydrateNet+slack)) {
			return true
		}
	}
	return false
}

// fetchedAfter returns when the first of the requests for app that arrived
// after at and were answered 200 or 304 was answered; false if none was.
func (s *soak) fetchedAfter(app string, at time.Time) (time.Time, bool) {
	var first time.Time
	repo := apps[slices.IndexFunc(apps, func(a release.App) bool { return a.Key == app })].Repo
	for _, q := range s.requests {
		if q.Repo == repo && q.At.After(at) && (q.Status == http.StatusOK || q.Status == http.StatusNotModified) &&
			(first.IsZero() || q.Done.Before(first)) {
			first = q.Done
		}
	}
	return first, !first.IsZero()
}

// checkLag finds, for every release published during the soak and every pod,
// the first answer that served it or a newer one.
func (s *soak) checkLag(r *report) {
	byPod := s.goodAnswers(func(a podAnswer) time.Time { return a.End })
	var lags []float64
	for _, p := range s.published {
		if p.N == 1 {
			continue // served before the soak began
		}
		r.Published++
		rl := releaseLag{publication: p, LagS: map[string]float64{}}
		for _, pod := range s.pods {
			as := byPod[pod.name]
			i := sort.Search(len(as), func(i int) bool { return !as[i].End.Before(p.At) })
			for i < len(as) && as[i].Tags[p.App] < p.N {
				i++
			}
			if i == len(as) {
				r.Unreached++
				r.fail("%s %s (published at %s) never reached %s", p.App, p.Tag, s.rel(p.At), pod.name)
				continue
			}
			lag := as[i].End.Sub(p.At).Seconds()
			rl.LagS[pod.name] = lag
			lags = append(lags, lag)
			if lag > r.WorstLag.LagS[r.WorstLagPod] || r.WorstLagPod == "" {
				r.WorstLag, r.WorstLagPod = rl, pod.name
			}
		}
		r.Releases = append(r.Releases, rl)
	}
	if r.WorstLagPod != "" {
		r.WorstLag.LagS = map[string]float64{r.WorstLagPod: r.WorstLag.LagS[r.WorstLagPod]}
	}
	r.LagPercentiles = percentiles(lags, 0.5, 0.95, 1)
}

// checkWebhookLag holds the webhook path to its goal: of the releases whose
// delivery was accepted, published outside fault windows (and 2 s after
// each, the shadow in which its webhook may have been refused and the fleet
// still catching up), half the (release, pod) lags are under a second.
func (s *soak) checkWebhookLag(r *report) {
	accepted := map[string]bool{}
	for _, d := range s.deliveries {
		r.DeliveriesByStatus[fmt.Sprint(d.Status)]++
		if d.Status == http.StatusAccepted {
			accepted[d.App+" "+d.Tag] = true
		}
	}
	var lags []float64
	for _, rl := range r.Releases {
		if accepted[rl.App+" "+rl.Tag] && !s.underFault(rl.At, 2*time.Second) {
			for _, lag := range rl.LagS {
				lags = append(lags, lag)
			}
		}
	}
	if len(s.deliveries) > 0 && len(accepted) == 0 {
		r.fail("none of the %d webhook deliveries was accepted", len(s.deliveries))
	}
	r.WebhookLag = percentiles(lags, 0.5, 0.99)
	if p50, ok := r.WebhookLag["p50"]; ok && p50 >= 1 {
		r.fail("releases published outside fault windows reached the pods in %.2fs (p50 of %d), want under 1s with the webhook",
			p50, len(lags))
	}
}

// underFault reports whether at falls in a fault's window or in a fleet
// backoff that a poller logged, from a second before either until shadow
// after: a backoff holds webhook refreshes too (docs/operations.md, "GitHub
// webhook"), and a fault's may outlast it.
func (s *soak) underFault(at time.Time, shadow time.Duration) bool {
	var windows []window
	for _, f := range s.faults {
		windows = append(windows, f.window())
	}
	for _, p := range s.procs {
		p.mu.Lock()
		windows = append(windows, p.backoffs...)
		p.mu.Unlock()
	}
	return slices.ContainsFunc(windows, func(w window) bool { return window{w.From.Add(-time.Second), w.Until.Add(shadow)}.has(at) })
}

// checkGitHub checks the requests against the rules of docs/scheduling.md.
func (s *soak) checkGitHub(r *report) {
	byRepo, underLoad := make(map[string][]ghRequest), map[string]int{}
	for _, q := range s.requests {
		r.GitHubRequests++
		r.GitHubByStatus[outcome(q)]++
		byRepo[q.Repo] = append(byRepo[q.Repo], q)
		if (window{s.began, s.loadEnded}).has(q.At) {
			underLoad[q.Repo]++
		}
	}
	for _, a := range apps {
		n := underLoad[a.Repo]
		load := appLoad{Requests: n, PerInterval: float64(n) / (s.loadEnded.Sub(s.began).Seconds() / interval.Seconds())}
		r.PerApp[a.Key] = load
		r.MaxPerAppPerInterval = max(r.MaxPerAppPerInterval, load.PerInterval)
	}

	// Two requests for one app closer than I − M need a reason the rules give.
	for repo, qs := range byRepo {
		sort.Slice(qs, func(i, j int) bool { return qs[i].At.Before(qs[j].At) })
		for i := 1; i < len(qs); i++ {
			q1, q2 := qs[i-1], qs[i]
			if gap := q2.At.Sub(q1.At); gap < earlyGap {
				e := earlyRequest{Repo: repo, At: q2.At, Poller: q2.Poller, GapS: gap.Seconds(), Reason: s.excuse(q1, q2)}
				if e.Reason == "" {
					r.fail("%s asked %s %.2fs after %s did (%s), under the %v the rules allow, with no fault to explain it",
						q2.Poller, repo, gap.Seconds(), q1.Poller, s.rel(q1.At), earlyGap)
				}
				r.Early = append(r.Early, e)
			}
		}
	}

	// Inside a rate-limit window each poller is refused at most once, and
	// once one was refused, the fleet waits until the reset plus R.
	for _, f := range s.faults {
		if f.Kind != faultRateLimit {
			continue
		}
		_, trouble := s.faultIn(f.Start.Add(-interval), f.End.Add(resetMargin), func(k string) bool { return redisFault(k) || k == faultPollerKill })
		w := windowFigure{Start: f.Start, Reset: f.End, Inside: map[string]int{}, RedisTrouble: trouble}
		for _, q := range s.requests {
			if f.window().has(q.At) {
				w.Inside[q.Poller]++
				w.Backoff = w.Backoff || q.Status == http.StatusForbidden
			}
		}
		for poller, n := range w.Inside {
			if n > 1 {
				r.fail("%s sent %d requests inside the rate-limit window %s–%s (at most the one refused)",
					poller, n, s.rel(f.Start), s.rel(f.End))
			}
		}
		for _, q := range s.requests {
			if w.Backoff && (window{f.End, f.End.Add(resetMargin - slack)}).has(q.At) {
				if w.AfterReset++; !w.RedisTrouble {
					r.fail("%s asked %s at %s, %.2fs after the rate limit's reset, inside the fleet backoff (reset + R = %v)",
						q.Poller, q.Repo, s.rel(q.At), q.At.Sub(f.End).Seconds(), resetMargin)
				}
			}
		}
		r.RateLimitWindows = append(r.RateLimitWindows, w)
	}
}

// excuse returns the reason the rules give for q2 to follow q1 so soon, or "".
func (s *soak) excuse(q1, q2 ghRequest) string {
	if q1.Status == http.StatusForbidden {
		return "the earlier request was rate limited, which says nothing of the app"
	}
	if d, ok := s.deliveredBefore(q2.Repo, q2.At); ok {
		return "a webhook delivery for the app at " + s.rel(d.At) + " asked for it"
	}
	if f, ok := s.faultIn(q1.At.Add(-interval), q2.At, redisFault); ok {
		return "pollers cut off from the fleet's state: " + f.Kind + " at " + s.rel(f.Start)
	}
	if f, ok := s.faultIn(q1.At.Add(-interval), q2.At, func(k string) bool { return k == faultClockStep }); ok {
		return "the fleet's clock stepped an hour (" + s.rel(f.Start) + "): what was fetched before a step is an hour old, or from the future, and due"
	}
	killed := q1.Canceled
	for _, p := range s.procs {
		if p.name == q1.Poller && !p.endedAt().IsZero() && p.endedAt().Before(q1.Done.Add(slack)) {
			killed = true
		}
	}
	inFlight := q1.Done.After(q2.At.Add(-slack))
	switch {
	case q2.At.Sub(q1.At) < claimWindow-slack:
	case killed:
		return "the earlier request's poller was killed: its claim lapsed after C"
	case inFlight:
		return "the earlier request was still unanswered: its claim lapsed after C"
	}
	return ""
}

// deliveredBefore reports whether a delivery for repo was made in the 15 s
// (and slack) before at, a replay storm's included (its first is new): a
// refresh and its retries (2, 5, 15 s) ask GitHub that early.
func (s *soak) deliveredBefore(repo string, at time.Time) (webhookDelivery, bool) {
	for _, d := range slices.Concat(s.deliveries, s.replayed) {
		if strings.EqualFold(d.Repo, repo) && !d.At.After(at) && at.Sub(d.At) <= 15*time.Second+slack {
			return d, true
		}
	}
	return webhookDelivery{}, false
}

// faultIn returns a fault of a kind that match accepts whose time, extended
// by what a poller needs to notice that Redis is back (a call that times out
// and a tick), overlaps [from, to].
func (s *soak) faultIn(from, to time.Time, match func(string) bool) (fault, bool) {
	for _, f := range s.faults {
		if match(f.Kind) && (window{f.Start, f.End.Add(redisCall + longestTick)}).overlaps(window{from, to}) {
			return f, true
		}
	}
	return fault{}, false
}

func (s *soak) checkFlushes(r *report) {
	for _, f := range s.flushes {
		if !f.Repaired || f.Took > repairBound {
			r.fail("FLUSHALL at %s: every entry was back only after %v (repaired: %v); the rules write them back "+
				"from memory at the next tick, within %v", s.rel(f.At), f.Took.Round(time.Millisecond), f.Repaired, repairBound)
		}
	}
}

func (s *soak) checkLeaks(r *report) {
	for _, p := range s.procs {
		st := s.stats[p.name]
		if len(st) == 0 {
			continue
		}
		first, last := st[0], st[len(st)-1]
		pf := procFigure{Name: p.name, Samples: len(st), FirstGoroutine: first.Goroutines, FirstHeap: first.HeapInuse,
			LastGoroutine: last.Goroutines, LastHeap: last.HeapInuse, Checked: len(st) > 1 && !last.At.Before(s.loadEnded)}
		for _, x := range st {
			pf.PeakGoroutine, pf.PeakRSS = max(pf.PeakGoroutine, x.Goroutines), max(pf.PeakRSS, x.RSS)
		}
		if pf.PeakRSS > rssBound {
			r.fail("%s: peak RSS %.1f MiB, over the manifests' limit of %d MiB", p.name, pf.PeakRSS/(1<<20), rssBound>>20)
		}
		if d := pf.LastGoroutine - pf.FirstGoroutine; pf.Checked && d > goroutineBound {
			r.fail("%s: %v goroutines at the end, %v at the start (bound: +%d)", p.name, pf.LastGoroutine, pf.FirstGoroutine, goroutineBound)
		}
		if d := pf.LastHeap - pf.FirstHeap; pf.Checked && d > heapBound {
			r.fail("%s: heap in use grew by %.1f MiB (bound: %d MiB)", p.name, d/(1<<20), heapBound>>20)
		}
		r.Processes = append(r.Processes, pf)
	}
}

// outcome is what a request got: its status class, or "garbage" for a 200
// whose body the garbage fault replaced.
func outcome(q ghRequest) string {
	switch {
	case q.Status == http.StatusOK && q.Fault == faultGarbage:
		return "garbage"
	case q.Status == http.StatusOK:
		return "200"
	case q.Status == http.StatusNotModified:
		return "304"
	case q.Status == http.StatusForbidden || q.Status == http.StatusTooManyRequests:
		return "rate limited"
	case q.Status == 0:
		return "no answer"
	}
	return "error"
}

func (s *soak) rel(t time.Time) string { return fmt.Sprintf("t=%.1fs", t.Sub(s.began).Seconds()) }

func (r *report) Summary() string {
	var b strings.Builder
	fmt.Fprintf(&b, "soak of %v, seed %d: report in %s\n", r.Settings.Duration, r.Settings.Seed, r.Settings.Report)
	fmt.Fprintf(&b, "  answers %d, bad %d, regressions %d, latency p99 %.3fs, max %.3fs\n",
		r.Answers, r.BadAnswers, r.Regressions, r.LatencyP99, r.LatencyMax)
	var kinds []string
	for _, k := range faultKinds {
		if n := r.FaultsByKind[k]; n > 0 {
			kinds = append(kinds, fmt.Sprintf("%s %d", k, n))
		}
	}
	fmt.Fprintf(&b, "  faults %d: %s\n", len(r.Faults), strings.Join(kinds, ", "))
	fmt.Fprintf(&b, "  releases published %d, unreached (release, pod) %d, worst lag %.2fs (%s %s on %s), p50 %.2fs, p95 %.2fs\n",
		r.Published, r.Unreached, r.WorstLag.LagS[r.WorstLagPod], r.WorstLag.App, r.WorstLag.Tag, r.WorstLagPod,
		r.LagPercentiles["p50"], r.LagPercentiles["p95"])
	fmt.Fprintf(&b, "  webhook deliveries %v; lag outside faults p50 %.2fs, p99 %.2fs\n",
		r.DeliveriesByStatus, r.WebhookLag["p50"], r.WebhookLag["p99"])
	fmt.Fprintf(&b, "  GitHub requests %d %v; per app per interval at most %.2f; early requests %d (all explained unless failed)\n",
		r.GitHubRequests, r.GitHubByStatus, r.MaxPerAppPerInterval, len(r.Early))
	for _, f := range r.Flushes {
		fmt.Fprintf(&b, "  flush repaired in %v\n", f.Took.Round(time.Millisecond))
	}
	fmt.Fprintf(&b, "  settled %.1fs after the last fault; failures %d", r.SettleTook, len(r.Failures))
	return b.String()
}

// checkLogs fails the soak for every log that holds a line a terminal could
// be made to misshow (docs/operations.md, "When something goes wrong").
func (s *soak) checkLogs(r *report) {
	found, err := scanLogs(s.logs)
	if err != nil {
		found = append(found, "scan the logs: "+err.Error())
	}
	r.Failures = append(r.Failures, found...)
}

// scanLogs reads every file in dir and returns, for each one with lines that
// hold raw a character that could act on a terminal or make the line read
// as something else (a control character (C0, DEL, C1), a format character
// (bidirectional controls, zero-width characters), a line or paragraph
// separator: a JSON line writes each as an escape) or bytes that are not
// UTF-8, how many and the first of them.
func scanLogs(dir string) ([]string, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*"))
	if err != nil {
		return nil, err
	}
	var found []string
	for _, path := range files {
		f, err := os.Open(path)
		if err != nil {
			return nil, err
		}
		sc := bufio.NewScanner(f)
		sc.Buffer(make([]byte, 64<<10), 32<<20)
		bad, first, firstAt := 0, "", 0
		for n := 1; sc.Scan(); n++ {
			line := sc.Text()
			if !utf8.ValidString(line) || strings.ContainsFunc(line, func(r rune) bool { return unicode.In(r, unicode.Cc, unicode.Cf, unicode.Zl, unicode.Zp) }) {
				if bad++; bad == 1 {
					first, firstAt = line, n
				}
			}
		}
		err = sc.Err()
		f.Close()
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		if bad > 0 {
			if len(first) > 300 {
				first = first[:300] + "…"
			}
			found = append(found, fmt.Sprintf("%s: %d lines hold a control or format character raw, the first (line %d): %q",
				filepath.Base(path), bad, firstAt, first))
		}
	}
	return found, nil
}
