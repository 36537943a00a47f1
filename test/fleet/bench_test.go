package fleet_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/rueidis"

	"github.com/storytold/craft-releases/pkg/github"
	"github.com/storytold/craft-releases/pkg/poller"
	"github.com/storytold/craft-releases/pkg/redis"
	"github.com/storytold/craft-releases/pkg/redis/store"
	"github.com/storytold/craft-releases/pkg/release"
	"github.com/storytold/craft-releases/pkg/schedule"
	"github.com/storytold/craft-releases/test/fakeclock"
	"github.com/storytold/craft-releases/test/fakegithub"
	"github.com/storytold/craft-releases/test/redistest"
)

// productionTiming is docs/config.md's default timing for interval.
func productionTiming(interval time.Duration) schedule.Timing {
	return schedule.Timing{
		Interval:      interval,
		MaxBackoff:    4 * time.Hour,
		Tick:          30 * time.Second,
		Spacing:       time.Second,
		StartupJitter: 30 * time.Second,
	}
}

// fleetRate runs n coordinated pollers for the given number of intervals
// and returns the GitHub requests per app per interval.
func fleetRate(b *testing.B, timing schedule.Timing, n, intervals int) float64 {
	b.Helper()
	srv := redistest.Start(b)
	defer srv.Stop()
	s := newSim(b, timing, defaultApps())
	defer s.stop()
	start := s.clock.Now()
	for i := range n {
		s.add(fmt.Sprintf("poller-%d", i+1), memberConfig{redisURL: srv.URL(), coordinate: true, seed: uint64(i + 1)})
	}
	span := time.Duration(intervals) * timing.Interval
	s.runUntil(start.Add(span))
	return s.perAppPerInterval(s.reqs.between(start, start.Add(span)), span)
}

// BenchmarkFleetRequestsPerInterval runs 1 poller and then 3 coordinated
// pollers for 30 simulated intervals of the 13 default apps, with the
// default timing for a token (I = 120 s) and without one (I = 1800 s), and
// reports the GitHub requests per app per interval of each and their ratio
// (the goal is at most 1.1; 3 independent pollers would be 3.0). A fleet
// asks a little more often than one poller because one of its three
// pollers ticks soon after an app turns due at I − M.
func BenchmarkFleetRequestsPerInterval(b *testing.B) {
	const intervals = 30
	for _, interval := range []time.Duration{120 * time.Second, 1800 * time.Second} {
		b.Run(fmt.Sprintf("I=%v", interval), func(b *testing.B) {
			timing := productionTiming(interval)
			var single, fleet float64
			for range b.N {
				single += fleetRate(b, timing, 1, intervals)
				fleet += fleetRate(b, timing, 3, intervals)
			}
			single /= float64(b.N)
			fleet /= float64(b.N)
			b.ReportMetric(single, "1-poller-req/app/interval")
			b.ReportMetric(fleet, "3-poller-req/app/interval")
			b.ReportMetric(fleet/single, "ratio")
			b.Logf("I=%v, %d intervals, 13 apps: 1 poller %.3f, 3 pollers %.3f requests per app per interval; ratio %.3f (goal ≤ 1.1, independent pollers 3.0)",
				interval, intervals, single, fleet, fleet/single)
		})
	}
}

// countingConn hands out its Conn's client as a countingClient.
type countingConn struct {
	*redis.Conn
	trips *atomic.Int64
}

func (c countingConn) Client(ctx context.Context) (rueidis.Client, error) {
	client, err := c.Conn.Client(ctx)
	if err != nil {
		return nil, err
	}
	return countingClient{Client: client, trips: c.trips}, nil
}

// countingClient counts the round trips made through a rueidis client: each
// Do and DoMulti, dedicated connections included.
type countingClient struct {
	rueidis.Client
	trips *atomic.Int64
}

func (c countingClient) Do(ctx context.Context, cmd rueidis.Completed) rueidis.RedisResult {
	c.trips.Add(1)
	return c.Client.Do(ctx, cmd)
}

func (c countingClient) DoMulti(ctx context.Context, cmds ...rueidis.Completed) []rueidis.RedisResult {
	c.trips.Add(1)
	return c.Client.DoMulti(ctx, cmds...)
}

func (c countingClient) Dedicated(fn func(rueidis.DedicatedClient) error) error {
	return c.Client.Dedicated(func(d rueidis.DedicatedClient) error {
		return fn(countingDedicated{DedicatedClient: d, trips: c.trips})
	})
}

type countingDedicated struct {
	rueidis.DedicatedClient
	trips *atomic.Int64
}

func (c countingDedicated) Do(ctx context.Context, cmd rueidis.Completed) rueidis.RedisResult {
	c.trips.Add(1)
	return c.DedicatedClient.Do(ctx, cmd)
}

func (c countingDedicated) DoMulti(ctx context.Context, cmds ...rueidis.Completed) []rueidis.RedisResult {
	c.trips.Add(1)
	return c.DedicatedClient.DoMulti(ctx, cmds...)
}

// idle is a coordinated poller of the 13 default apps that has fetched
// every one, so that its next ticks find nothing due.
type idle struct {
	rounds *stepper
	gh     *fakegithub.Server
	srv    *redistest.Server
	trips  *atomic.Int64
	admin  rueidis.Client
}

func newIdle(tb testing.TB) *idle {
	tb.Helper()
	srv := redistest.Start(tb)
	gh := fakegithub.New(tb)
	apps := defaultApps()
	for _, app := range apps {
		gh.Publish(app.Repo, fakegithub.NewRelease(app.Repo, "v1.0.0"))
	}
	clock := fakeclock.New(epoch())
	src, err := github.New(github.Options{BaseURL: gh.URL(), Clock: clock})
	if err != nil {
		tb.Fatalf("github.New: %v", err)
	}
	client, err := redis.OpenURL(srv.URL())
	if err != nil {
		tb.Fatalf("redis.OpenURL: %v", err)
	}
	tb.Cleanup(client.Close)
	admin := srv.Client(tb)
	timing := productionTiming(120 * time.Second)
	// The clock passes every wait at once, and ticks and the spacing are
	// (almost) nothing, so that apps stay fresh however many ticks run.
	timing.Spacing, timing.Tick, timing.StartupJitter = 0, time.Nanosecond, 0
	clock.Skip(-1)
	trips := &atomic.Int64{}
	rounds := &stepper{done: make(chan struct{}), next: make(chan struct{})}
	p, err := poller.New(poller.Config{
		Apps:       apps,
		Timing:     timing,
		Source:     src,
		Fleet:      store.New(countingConn{Conn: client, trips: trips}, "poller-1", apps),
		Coordinate: true,
		Observer:   rounds,
		Clock:      clock,
		Rand:       rand.New(rand.NewPCG(1, 2)).Float64,
	})
	if err != nil {
		tb.Fatalf("poller.New: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	ran := make(chan error)
	go func() { ran <- p.Run(ctx) }()
	tb.Cleanup(func() {
		cancel()
		close(rounds.next)
		if err := <-ran; err != nil {
			tb.Errorf("Run: %v", err)
		}
	})
	<-rounds.done
	if got, want := gh.Count(fakegithub.AnyRepo), len(apps); got != want {
		tb.Fatalf("the first tick made %d requests, want %d", got, want)
	}
	gh.Reset()
	return &idle{rounds: rounds, gh: gh, srv: srv, trips: trips, admin: admin}
}

// stepper is an Observer that holds the poller at the end of each tick
// until tick lets it run the next one.
type stepper struct {
	done chan struct{} // receives at the end of each tick
	next chan struct{} // lets the next tick start; closed at cleanup
}

func (*stepper) Answer(string, release.Answer)   {}
func (*stepper) Fetched(string, time.Time)       {}
func (*stepper) Claim(bool)                      {}
func (*stepper) WriteRefused(poller.Op)          {}
func (*stepper) RedisError(poller.Op)            {}
func (*stepper) Refreshed(string, time.Duration) {}
func (*stepper) ClockOffset(time.Duration)       {}
func (*stepper) Paced(time.Duration)             {}
func (*stepper) RefreshesDeferred(string, int)   {}
func (*stepper) Entry(string, release.Entry)     {}

func (s *stepper) Round(poller.Mode, time.Duration, schedule.Backoff) {
	s.done <- struct{}{}
	<-s.next
}

// tick runs the poller's next tick and waits until it ended.
func (s *stepper) tick() {
	s.next <- struct{}{}
	<-s.done
}

// resetStats zeroes the round-trip count and Redis's command statistics.
func (i *idle) resetStats(tb testing.TB) {
	tb.Helper()
	if err := i.admin.Do(context.Background(), i.admin.B().ConfigResetstat().Build()).Error(); err != nil {
		tb.Fatalf("CONFIG RESETSTAT: %v", err)
	}
	i.trips.Store(0)
}

// commands returns how many commands Redis ran since resetStats, by name,
// leaving out the test's own (INFO, CONFIG) and the client's health pings.
func (i *idle) commands(tb testing.TB) map[string]int {
	tb.Helper()
	info, err := i.admin.Do(context.Background(), i.admin.B().Info().Section("commandstats").Build()).ToString()
	if err != nil {
		tb.Fatalf("INFO commandstats: %v", err)
	}
	out := make(map[string]int)
	for _, line := range strings.Split(info, "\n") {
		// cmdstat_hgetall:calls=14,usec=…
		name, stats, ok := strings.Cut(strings.TrimSpace(line), ":")
		name, isCmd := strings.CutPrefix(name, "cmdstat_")
		if !ok || !isCmd || name == "info" || name == "config|resetstat" || name == "ping" {
			continue
		}
		calls, _, _ := strings.Cut(strings.TrimPrefix(stats, "calls="), ",")
		n, err := strconv.Atoi(calls)
		if err != nil {
			tb.Fatalf("INFO commandstats line %q: %v", line, err)
		}
		out[name] = n
	}
	return out
}

func total(cmds map[string]int) int {
	n := 0
	for _, c := range cmds {
		n += c
	}
	return n
}

// TestIdleTickIsThreeRoundTrips checks what BenchmarkCoordinatedTickIdle
// measures: a coordinated tick with nothing due tells the time (TIME) and
// reads every app and the backoff, bounded, in two pipelines (every
// field's HSTRLEN, then 14 HMGETs), however many apps: three round trips. It
// writes nothing and asks GitHub nothing.
func TestIdleTickIsThreeRoundTrips(t *testing.T) {
	i := newIdle(t)
	i.resetStats(t)
	const ticks = 5
	for range ticks {
		i.rounds.tick()
	}
	if got := i.trips.Load(); got != 3*ticks {
		t.Errorf("%d round trips in %d idle ticks, want %d", got, ticks, 3*ticks)
	}
	cmds := i.commands(t)
	// 13 app hashes of 11 fields, the backoff hash of 4.
	if want := map[string]int{"hmget": ticks * 14, "hstrlen": ticks * (13*11 + 4), "time": ticks}; fmt.Sprint(cmds) != fmt.Sprint(want) {
		t.Errorf("Redis ran %v in %d idle ticks, want %v", cmds, ticks, want)
	}
	if got := i.gh.Count(fakegithub.AnyRepo); got != 0 {
		t.Errorf("%d GitHub requests in idle ticks, want 0", got)
	}
}

// BenchmarkCoordinatedTickIdle measures one coordinated tick of the 13
// default apps with nothing due against a real redis-server: its time, the
// round trips it makes and the commands Redis runs for it.
func BenchmarkCoordinatedTickIdle(b *testing.B) {
	i := newIdle(b)
	i.resetStats(b)
	b.ResetTimer()
	for range b.N {
		i.rounds.tick()
	}
	b.StopTimer()
	if got := i.gh.Count(fakegithub.AnyRepo); got != 0 {
		b.Fatalf("%d GitHub requests in idle ticks, want 0", got)
	}
	trips := float64(i.trips.Load()) / float64(b.N)
	cmds := float64(total(i.commands(b))) / float64(b.N)
	b.ReportMetric(trips, "round-trips/tick")
	b.ReportMetric(cmds, "redis-cmds/tick")
	b.Logf("idle coordinated tick, 13 apps: %.2f round trips, %.2f Redis commands", trips, cmds)
}
