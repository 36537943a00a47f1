package fleet_test

import (
	"context"
	"maps"
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

// TestIdleTickIsThreeRoundTrips: a coordinated poller of the 13 default
// apps that has fetched every one, at a tick with nothing due, tells the
// time (TIME) and reads every app and the backoff, bounded, in two
// pipelines (every field's HSTRLEN, then 14 HMGETs): three round trips. It
// writes nothing and asks GitHub nothing.
func TestIdleTickIsThreeRoundTrips(t *testing.T) {
	srv := redistest.Start(t)
	gh := fakegithub.New(t)
	apps := defaultApps()
	for _, app := range apps {
		gh.Publish(app.Repo, fakegithub.NewRelease(app.Repo, "v1.0.0"))
	}
	clock := fakeclock.New(epoch())
	src, err := github.New(github.Options{BaseURL: gh.URL(), Clock: clock})
	if err != nil {
		t.Fatalf("github.New: %v", err)
	}
	client, err := redis.OpenURL(srv.URL())
	if err != nil {
		t.Fatalf("redis.OpenURL: %v", err)
	}
	t.Cleanup(client.Close)
	admin := srv.Client(t)
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
		t.Fatalf("poller.New: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	ran := make(chan error)
	go func() { ran <- p.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		close(rounds.next)
		if err := <-ran; err != nil {
			t.Errorf("Run: %v", err)
		}
	})
	<-rounds.done
	if got, want := gh.Count(fakegithub.AnyRepo), len(apps); got != want {
		t.Fatalf("the first tick made %d requests, want %d", got, want)
	}
	gh.Reset()
	if err := admin.Do(ctx, admin.B().ConfigResetstat().Build()).Error(); err != nil {
		t.Fatalf("CONFIG RESETSTAT: %v", err)
	}
	trips.Store(0)

	const ticks = 5
	for range ticks {
		rounds.tick()
	}
	if got := trips.Load(); got != 3*ticks {
		t.Errorf("%d round trips in %d idle ticks, want %d", got, ticks, 3*ticks)
	}
	info, err := admin.Do(ctx, admin.B().Info().Section("commandstats").Build()).ToString()
	if err != nil {
		t.Fatalf("INFO commandstats: %v", err)
	}
	cmds := make(map[string]int)
	for _, line := range strings.Split(info, "\n") {
		// cmdstat_hgetall:calls=14,usec=…; the test's own INFO and CONFIG
		// and the client's health pings left out.
		name, stats, ok := strings.Cut(strings.TrimSpace(line), ":")
		name, isCmd := strings.CutPrefix(name, "cmdstat_")
		if !ok || !isCmd || name == "info" || name == "config|resetstat" || name == "ping" {
			continue
		}
		calls, _, _ := strings.Cut(strings.TrimPrefix(stats, "calls="), ",")
		n, err := strconv.Atoi(calls)
		if err != nil {
			t.Fatalf("INFO commandstats line %q: %v", line, err)
		}
		cmds[name] = n
	}
	// 13 app hashes of 11 fields, the backoff hash of 4.
	if want := map[string]int{"hmget": ticks * 14, "hstrlen": ticks * (13*11 + 4), "time": ticks}; !maps.Equal(cmds, want) {
		t.Errorf("Redis ran %v in %d idle ticks, want %v", cmds, ticks, want)
	}
	if got := gh.Count(fakegithub.AnyRepo); got != 0 {
		t.Errorf("%d GitHub requests in idle ticks, want 0", got)
	}
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
