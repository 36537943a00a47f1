package poller_test

import (
	"context"
	"fmt"
	"maps"
	"math/rand/v2"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/rueidis"

	"github.com/storytold/craft-releases/pkg/poller"
	"github.com/storytold/craft-releases/pkg/redis"
	"github.com/storytold/craft-releases/pkg/redis/store"
	"github.com/storytold/craft-releases/pkg/release"
	"github.com/storytold/craft-releases/pkg/schedule"
	"github.com/storytold/craft-releases/test/fakeclock"
	"github.com/storytold/craft-releases/test/redistest"
)

// settleWait bounds how long, in wall time, a fleet waits for every poller
// to park on the clock: a guard against a hang, not a performance figure.
const settleWait = 30 * time.Second

// member is one poller of a fleet, with a Redis client of its own.
type member struct {
	*harness
	name  string
	conn  *redis.Conn
	store *store.Store
}

// fleet is several pollers running their real Run loops on one fake clock,
// sharing a real Store on a real redis-server. It moves the clock only when
// every poller is parked on it, to the earliest deadline among them; pollers
// whose deadlines coincide resume together and run concurrently.
type fleet struct {
	t       testing.TB
	clock   *fakeclock.Clock
	apps    []release.App
	timing  schedule.Timing
	ctx     context.Context
	cancel  context.CancelFunc
	wg      sync.WaitGroup
	members []*member
}

// newFleet13 returns a fleet of the 13 apps with timing and no poller yet,
// stopped by t.Cleanup.
func newFleet13(t testing.TB, tm schedule.Timing) *fleet {
	f := &fleet{t: t, clock: fakeclock.New(t0), apps: apps(thirteen...), timing: tm}
	f.ctx, f.cancel = context.WithCancel(context.Background())
	t.Cleanup(f.stop)
	return f
}

// add starts a poller named name on Redis at url, drawing from seed, and
// waits until every poller is parked on the clock.
func (f *fleet) add(name, url string, coordinate bool, seed uint64) *member {
	f.t.Helper()
	conn, err := redis.OpenURL(url)
	if err != nil {
		f.t.Fatalf("redis.OpenURL: %v", err)
	}
	m := &member{name: name, conn: conn, store: store.New(conn, name, f.apps)}
	m.harness = newHarness(f.t, thirteen, nil, coordinate, func(c *poller.Config) {
		c.Timing, c.Fleet, c.ReadTimeout, c.Clock = f.timing, m.store, conn.Timeout(), f.clock
		c.Rand = rand.New(rand.NewPCG(seed, 0x5eed)).Float64
	})
	m.source.clock, m.source.otherwise = f.clock, steady
	f.members = append(f.members, m)
	f.wg.Go(func() {
		if err := m.p.Run(f.ctx); err != nil {
			f.t.Errorf("%s: Run: %v", name, err)
		}
	})
	f.settle()
	return m
}

func (f *fleet) settle() {
	f.t.Helper()
	guard := time.NewTimer(settleWait)
	defer guard.Stop()
	for n := f.clock.Waiters(); n != len(f.members); n = f.clock.Waiters() {
		if n > len(f.members) {
			f.t.Fatalf("%d waiters on the clock for %d pollers", n, len(f.members))
		}
		select {
		case <-f.clock.Parked():
		case <-guard.C:
			f.t.Fatalf("after %v of wall time, only %d of %d pollers are parked on the clock", settleWait, n, len(f.members))
		}
	}
}

// runWhile moves the clock one deadline at a time while more is true (asked
// first before the clock moves), for at most d, and reports whether more
// turned false.
func (f *fleet) runWhile(d time.Duration, more func() bool) bool {
	f.t.Helper()
	end := f.clock.Now().Add(d)
	for more() {
		next, ok := f.clock.Next()
		if !ok {
			f.t.Fatal("no poller is waiting on the clock")
		}
		if next.After(end) {
			f.clock.Set(end)
			return false
		}
		f.clock.Set(next)
		f.settle()
	}
	return true
}

func (f *fleet) runFor(d time.Duration) { f.runWhile(d, func() bool { return true }) }

// stop cancels every poller, waits for their Run to return and closes their
// Redis clients.
func (f *fleet) stop() {
	f.cancel()
	done := make(chan struct{})
	go func() {
		f.wg.Wait()
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(settleWait):
		f.t.Errorf("a poller's Run did not return within %v of wall time after its context was cancelled:\n%s",
			settleWait, pollerGoroutines())
	}
	for _, m := range f.members {
		m.conn.Close()
	}
}

// ask is one request of a fleet's poller: call is "app" or "app(etag)".
type ask struct {
	poller, call string
	at           time.Time
}

func (a ask) app() string { app, _, _ := strings.Cut(a.call, "("); return app }

// asked returns the requests of every poller made in [from, to).
func (f *fleet) asked(from, to time.Time) []ask {
	var out []ask
	for _, m := range f.members {
		m.source.mu.Lock()
		for i, call := range m.source.asked {
			if at := m.source.at[i]; !at.Before(from) && at.Before(to) {
				out = append(out, ask{poller: m.name, call: call, at: at})
			}
		}
		m.source.mu.Unlock()
	}
	return out
}

func byApp(asks []ask) map[string]int {
	n := make(map[string]int)
	for _, a := range asks {
		n[a.app()]++
	}
	return n
}

func (f *fleet) load(url string) map[string]release.Entry {
	f.t.Helper()
	conn, err := redis.OpenURL(url)
	if err != nil {
		f.t.Fatalf("redis.OpenURL: %v", err)
	}
	defer conn.Close()
	shared, _, err := store.New(conn, "admin", f.apps).Load(context.Background(), thirteen)
	if err != nil {
		f.t.Fatalf("read the shared state: %v", err)
	}
	return shared
}

// shared fails the test unless Redis at url holds, for every app, the fetch
// of v1.0.0 at or after since, and returns the shared entries.
func (f *fleet) shared(url string, since time.Time) map[string]release.Entry {
	f.t.Helper()
	shared := f.load(url)
	for _, app := range thirteen {
		e := shared[app]
		switch {
		case !e.Fetched():
			f.t.Errorf("%s: Redis holds no fetch", app)
		case e.FetchedAt.Before(since):
			f.t.Errorf("%s: Redis holds a fetch of %v, want one at or after %v", app, e.FetchedAt, since)
		case e.ETag != etag || e.Release == nil || e.Release.Tag != "v1.0.0":
			f.t.Errorf("%s: Redis holds etag %s and release %+v, want etag %s and v1.0.0", app, e.ETag, e.Release, etag)
		}
	}
	return shared
}

// TestRequestsPerAppPerInterval runs fleets of 13 apps for 30 intervals
// (I = 60 s, ticks of 30 s ±10 %) and counts the requests per app per
// interval. A coordinated fleet asks about each app about once per
// interval, whatever its size, whether its guarded writes go through the
// script or WATCH/MULTI/EXEC, and even when its pollers tick at the same
// instants; an uncoordinated fleet asks about 3 × as often, which shows that
// the bound fails without claims and freshness checks.
func TestRequestsPerAppPerInterval(t *testing.T) {
	t.Parallel()
	const intervals = 30
	tests := []struct {
		name       string
		pollers    int
		coordinate bool
		noScripts  bool // the pollers' Redis user lacks @scripting
		// lockstep gives every poller the same draws and no spacing, so
		// they all tick at the same instants, concurrently, and only the
		// claims keep them from asking about the same apps.
		lockstep bool
		lo, hi   float64
	}{
		// One poller asks a little less than once per interval: a round of
		// 13 requests 1 s apart delays its next tick.
		{name: "one poller", pollers: 1, coordinate: true, lo: 0.8, hi: 1.1},
		{name: "three coordinated", pollers: 3, coordinate: true, lo: 0.8, hi: 1.3},
		{name: "three coordinated scripts refused", pollers: 3, coordinate: true, noScripts: true, lo: 0.8, hi: 1.3},
		{name: "three coordinated in lockstep", pollers: 3, coordinate: true, lockstep: true, lo: 0.8, hi: 1.3},
		{name: "three uncoordinated", pollers: 3, coordinate: false, lo: 2.3, hi: 3.3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			srv := redistest.Start(t)
			url, mode := srv.URL(), store.ModeScript
			if tt.noScripts {
				srv.MustDo("ACL", "SETUSER", "poller", "on", ">pw", "~*", "&*", "+@all", "-@scripting")
				url, mode = "redis://poller:pw@"+srv.Addr, store.ModeWatch
			}
			tm := schedule.Timing{Interval: time.Minute, MaxBackoff: time.Hour, Tick: 30 * s, Spacing: s, StartupJitter: 30 * s}
			if tt.lockstep {
				tm.Spacing = 0
			}
			f := newFleet13(t, tm)
			start := f.clock.Now()
			for i := range tt.pollers {
				seed := uint64(i + 1)
				if tt.lockstep {
					seed = 1
				}
				f.add(fmt.Sprintf("poller-%d", i+1), url, tt.coordinate, seed)
			}
			span := intervals * tm.Interval
			f.runFor(span)

			asks := f.asked(start, start.Add(span))
			got := float64(len(asks)) / float64(len(thirteen)) / intervals
			if got < tt.lo || got > tt.hi {
				t.Errorf("requests per app per interval = %.3f, want %.1f…%.1f", got, tt.lo, tt.hi)
			}
			perApp := byApp(asks)
			for _, app := range thirteen {
				if n := float64(perApp[app]) / intervals; n < tt.lo || n > tt.hi {
					t.Errorf("%s: %.3f requests per interval, want %.1f…%.1f", app, n, tt.lo, tt.hi)
				}
			}
			for _, m := range f.members {
				if got := m.store.Mode(); tt.coordinate && got != mode {
					t.Errorf("%s: store mode %v, want %v", m.name, got, mode)
				}
				wantEq(t, m.name+": redis warnings", m.logged("redis unavailable"), 0)
			}
		})
	}
}

// TestRedisStoppedAndRestarted stops Redis under a coordinated poller for 9
// minutes and starts it again empty. During the outage the poller keeps
// asking GitHub about every app from memory (304s for the ETags it holds)
// and warns once; after it, it says Redis is back, writes every entry back
// from memory at its first tick, and a second poller that starts then takes
// the shared fetches and asks nothing while they are fresh.
func TestRedisStoppedAndRestarted(t *testing.T) {
	t.Parallel()
	// Ticks of a minute, so that an outage costs few calls that wait for
	// their deadline: rueidis retries a read of a Redis that is down until
	// then. A second is still far above what a tick's reads take on a
	// loaded machine, where one late answer would count as an outage.
	tm := schedule.Timing{Interval: 2 * time.Minute, MaxBackoff: time.Hour, Tick: time.Minute, Spacing: s, StartupJitter: 30 * s}
	interval := tm.Interval
	srv := redistest.Start(t)
	url := srv.URL() + "?write_timeout=1s"
	f := newFleet13(t, tm)
	first := f.add("poller-1", url, true, 1)
	f.runFor(2 * interval)

	down := f.clock.Now()
	srv.Stop()
	const outage = 9 * time.Minute
	f.runFor(outage)
	during := f.asked(down, down.Add(outage))
	perApp := byApp(during)
	for _, app := range thirteen {
		// About once per interval, from memory: its ETag and 304s.
		if n, want := perApp[app], int(outage/interval)-1; n < want {
			t.Errorf("%s: asked %d times during the outage, want at least %d", app, n, want)
		}
	}
	for _, a := range during {
		if a.call != a.app()+"("+etag+")" {
			t.Errorf("%s asked %s during the outage, want a revalidation of %s (a 304)", a.poller, a.call, etag)
		}
	}
	wantEq(t, fmt.Sprintf(`"redis unavailable" warnings in %v of outage`, outage), first.logged("redis unavailable"), 1)
	wantEq(t, `"redis is back" while Redis is down`, first.logged("redis is back"), 0)

	up := f.clock.Now()
	srv.Restart()
	f.runFor(tm.TickDelay(1))
	// From memory: the 304s of the outage's last interval.
	f.shared(srv.URL(), up.Add(-interval))
	f.runFor(interval)
	wantEq(t, `"redis is back" after the restart`, first.logged("redis is back"), 1)
	wantEq(t, `"redis unavailable" warnings in all`, first.logged("redis unavailable"), 1)
	shared := f.shared(srv.URL(), up)
	if t.Failed() {
		t.FailNow()
	}

	second := f.add("poller-2", url, true, 2)
	for _, app := range thirteen {
		if e := second.sink.entry(app); !e.FetchedAt.Equal(shared[app].FetchedAt) {
			t.Errorf("%s: poller-2 started with %+v, want the shared fetch of %v", app, e, shared[app].FetchedAt)
		}
	}
	from := f.clock.Now()
	f.runFor(2 * interval)
	fresh := interval - tm.SkewMargin()
	for _, a := range f.asked(from, f.clock.Now()) {
		if a.poller == "poller-2" && a.at.Before(shared[a.app()].FetchedAt.Add(fresh)) {
			t.Errorf("poller-2 asked about %s at %v, while the shared fetch of %v was fresh", a.app(), a.at, shared[a.app()].FetchedAt)
		}
	}
}

// TestRedisFlushed empties Redis under a coordinated fleet of two at the
// production timing once every app was fetched: at the next tick the
// pollers write every entry back from memory (docs/operations.md, "Redis
// flushed"), each with its own fetch time, without a single GitHub request,
// and an entry read back as written (in ms) is never written again.
func TestRedisFlushed(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	f := newFleet13(t, timing)
	f.add("poller-1", srv.URL(), true, 1)
	f.add("poller-2", srv.URL(), true, 2)
	f.runFor(timing.Interval)

	flushed := f.clock.Now()
	srv.MustDo("FLUSHALL")
	if !f.runWhile(timing.Interval, func() bool {
		shared := f.load(srv.URL())
		for _, app := range thirteen {
			if !shared[app].Fetched() {
				return true
			}
		}
		return false
	}) {
		t.Fatalf("Redis still lacks an app %v after the flush", timing.Interval)
	}
	if took, limit := f.clock.Now().Sub(flushed), timing.TickDelay(1); took > limit {
		t.Errorf("Redis was repaired %v after the flush, want within a tick (%v)", took, limit)
	}
	shared := f.shared(srv.URL(), flushed.Add(-timing.Interval))
	if asks := f.asked(flushed, f.clock.Now().Add(time.Nanosecond)); len(asks) > 0 {
		t.Errorf("GitHub requests during the repair: %v", asks)
	}
	for _, m := range f.members {
		for _, app := range thirteen {
			if e, mine := shared[app], m.sink.entry(app); e.FetchedAt.UnixMilli() != mine.FetchedAt.UnixMilli() {
				t.Errorf("%s: written back with fetch time %v, want %s's own %v", app, e.FetchedAt, m.name, mine.FetchedAt)
			}
		}
	}
	const line = "redis entries written back from memory"
	before := f.members[0].logged(line) + f.members[1].logged(line)
	f.runFor(2 * timing.Interval)
	if got := f.members[0].logged(line) + f.members[1].logged(line); before == 0 || got != before {
		t.Errorf("%d write-back lines at the repair, %d after two more intervals, want at least 1 and no more", before, got)
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
// Do and DoMulti (a dedicated connection's commands would show in INFO
// commandstats).
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

// TestIdleTickIsThreeRoundTrips: a coordinated poller of 13 apps on a real
// Store that has fetched every one, at a tick with nothing due, tells the
// time (TIME) and reads every app and the backoff, bounded, in two
// pipelines (every field's HSTRLEN, then 14 HMGETs): three round trips. It
// writes nothing and asks GitHub nothing.
func TestIdleTickIsThreeRoundTrips(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	conn, err := redis.OpenURL(srv.URL())
	if err != nil {
		t.Fatalf("redis.OpenURL: %v", err)
	}
	t.Cleanup(conn.Close)
	trips := &atomic.Int64{}
	h := newHarness(t, thirteen, nil, true, func(c *poller.Config) {
		c.Fleet = store.New(countingConn{Conn: conn, trips: trips}, "poller-1", c.Apps)
	})
	h.source.otherwise = steady
	h.tick(t, 0, nil)
	if got := h.source.takeAsked(); len(got) != len(thirteen) {
		t.Fatalf("the first tick asked %q, want every app", got)
	}
	admin := srv.Client(t)
	ctx := context.Background()
	if err := admin.Do(ctx, admin.B().ConfigResetstat().Build()).Error(); err != nil {
		t.Fatalf("CONFIG RESETSTAT: %v", err)
	}
	trips.Store(0)

	const ticks = 5
	for i := range ticks {
		h.tick(t, time.Duration(i+1)*timing.Tick, nil)
	}
	wantEq(t, fmt.Sprintf("round trips in %d idle ticks", ticks), trips.Load(), 3*ticks)
	info, err := admin.Do(ctx, admin.B().Info().Section("commandstats").Build()).ToString()
	if err != nil {
		t.Fatalf("INFO commandstats: %v", err)
	}
	cmds := make(map[string]int)
	for line := range strings.SplitSeq(info, "\n") {
		// cmdstat_hmget:calls=14,usec=…; the test's own INFO and CONFIG
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
	wantList(t, "GitHub asked in idle ticks", h.source.takeAsked(), nil)
}
