package hydrate_test

import (
	"context"
	"fmt"
	"maps"
	"net/url"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/storytold/craft-releases/pkg/redis"
	"github.com/storytold/craft-releases/pkg/redis/hydrate"
	"github.com/storytold/craft-releases/pkg/redis/store"
	"github.com/storytold/craft-releases/pkg/release"
	"github.com/storytold/craft-releases/test/fakeclock"
	"github.com/storytold/craft-releases/test/fakeredis"
	"github.com/storytold/craft-releases/test/redistest"
	"github.com/storytold/craft-releases/test/testkit"
)

var testApps = []release.App{
	{Key: "artcraft-launcher", Name: "ArtCraft Launcher", Repo: "storytold/craft-launcher"},
	{Key: "filmcraft", Name: "FilmCraft", Repo: "storytold/filmcraft"},
	{Key: "photocraft", Name: "PhotoCraft", Repo: "storytold/photocraft"},
}

// base is the fetch time of the entries a test starts with.
var base = time.Date(2026, 10, 10, 12, 0, 0, 0, time.UTC)

// quiet keeps the periodic re-read out of the way, so that only Redis's
// invalidations (or a reconnect) can make the Hydrator read.
var quiet = hydrate.WithInterval(time.Hour)

const waitLimit = 30 * time.Second

func TestLoad(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		setup func(t testing.TB, srv *redistest.Server)
		want  map[string]release.Entry // apps left out must not reach the sink
	}{
		{"every app present", func(t testing.TB, srv *redistest.Server) {
			put(t, srv, "artcraft-launcher", base, "v0.2.0")
			put(t, srv, "filmcraft", base.Add(time.Second), "v1.0.0")
			put(t, srv, "photocraft", base.Add(2*time.Second), "v0.5.0")
		}, map[string]release.Entry{"artcraft-launcher": entry(base, "v0.2.0"), "filmcraft": entry(base.Add(time.Second), "v1.0.0"), "photocraft": entry(base.Add(2*time.Second), "v0.5.0")}},
		{"one app absent, one of another format version", func(t testing.TB, srv *redistest.Server) {
			put(t, srv, "photocraft", base, "v0.5.0")
			hset(t, srv, "filmcraft", "v", "2", "fetched_ms", ms(base), "etag", `"x"`, "release", "null")
		}, map[string]release.Entry{"photocraft": entry(base, "v0.5.0")}},
		{"a failure and a claim but never a fetch", func(t testing.TB, srv *redistest.Server) {
			hset(t, srv, "photocraft", "v", "1", "failed_ms", ms(base), "failures", "3", "claimed_ms", ms(base), "by", "test")
		}, map[string]release.Entry{"photocraft": {FailedAt: base, Failures: 3, ClaimedAt: base}}},
		{"nothing in redis", func(testing.TB, *redistest.Server) {}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := redistest.Start(t)
			tt.setup(t, srv)
			hs := start(t, srv.URL(), quiet)
			hs.waitLoaded(t)

			got, calls := hs.sink.state()
			if len(tt.want) == 0 && calls != 0 {
				t.Errorf("SetAll calls = %d, want 0 when nothing is in Redis", calls)
			}
			if len(tt.want) > 0 && calls != 1 {
				t.Errorf("SetAll calls = %d, want 1 for the first load", calls)
			}
			if g, w := describeAll(got), describeAll(tt.want); g != w {
				t.Errorf("sink after load:\n got %s\nwant %s", g, w)
			}
			if st := hs.h.Counts(); !st.Loaded || !st.Connected || st.Fallback {
				t.Errorf("Stats() = %+v, want Loaded, Connected, not Fallback", st)
			}
		})
	}
}

// TestInvalidationReachesSink: a newer fetch written to Redis reaches the
// sink of a quiet Hydrator through the invalidation, and leaves the other
// apps alone.
func TestInvalidationReachesSink(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	put(t, srv, "photocraft", base, "v0.5.0")
	put(t, srv, "filmcraft", base, "v1.0.0")
	hs := start(t, srv.URL(), quiet)
	hs.waitLoaded(t)

	put(t, srv, "photocraft", base.Add(time.Minute), "v0.6.0")
	hs.waitEntry(t, "the newer fetch", "photocraft", base.Add(time.Minute), "v0.6.0")
	hs.wantEntry(t, "filmcraft", base, "v1.0.0", " (untouched)")
	if st := hs.h.Counts(); st.Invalidations == 0 {
		t.Errorf("Stats().Invalidations = 0, want > 0")
	}
}

// TestRereadOfNothingNewPassesNothing: with client tracking the periodic
// re-read of unchanged hashes is answered by the local cache, not by Redis,
// and never reaches the sink.
func TestRereadOfNothingNewPassesNothing(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	putAll(t, srv)
	clk := fakeclock.New(base)
	hs := start(t, srv.URL(), hydrate.WithClock(clk))
	hs.waitLoaded(t)
	_, calls0 := hs.sink.state()
	st0, server0 := hs.h.Counts(), readCalls(t, srv)

	// 20 rounds at the production interval, 5 s.
	want := st0.Reads + uint64(20*len(testApps))
	advanceUntil(t, clk, time.Second, "20 re-read rounds", func() bool { return hs.h.Counts().Reads >= want })

	st := hs.h.Counts()
	if _, calls := hs.sink.state(); calls != calls0 {
		t.Errorf("SetAll calls = %d after re-reads of unchanged hashes, want %d", calls, calls0)
	}
	reads, hits, server := st.Reads-st0.Reads, st.CacheHits-st0.CacheHits, readCalls(t, srv)-server0
	if hits != reads || server != 0 {
		t.Errorf("%d re-reads: %d from the local cache, %d HSTRLEN and HMGET at the server; want all local, none at the server", reads, hits, server)
	}
}

// TestReadFailedAfterItsProbes: a read that fails once some of its probes
// were sent is made again in full once Redis answers, although those probes
// now answer from the cache: when Redis refuses HMGET after every probe,
// and when it refuses one key's probe (as one node of a Cluster may, while
// the others answer) at the first load.
func TestReadFailedAfterItsProbes(t *testing.T) {
	t.Parallel()
	t.Run("the read", func(t *testing.T) {
		srv := redistest.Start(t)
		put(t, srv, "photocraft", base, "v1.0.0")
		clk := fakeclock.New(base)
		hs := start(t, apiUser(srv, "pw"), quiet, hydrate.WithClock(clk))
		hs.waitLoaded(t)
		srv.MustDo("ACL", "SETUSER", "api", "-hmget")
		failures := hs.h.Counts().Failures
		put(t, srv, "photocraft", base.Add(time.Minute), "v2.0.0")
		testkit.Eventually(t, "the failed read", func() bool { return hs.h.Counts().Failures > failures })
		srv.MustDo("ACL", "SETUSER", "api", "+hmget")
		want := describe(entry(base.Add(time.Minute), "v2.0.0"))
		advanceUntil(t, clk, 100*time.Millisecond, "the read made again", func() bool { got, _ := hs.sink.state(); return describe(got["photocraft"]) == want })
	})
	t.Run("one probe", func(t *testing.T) {
		srv := redistest.Start(t)
		putAll(t, srv)
		clk := fakeclock.New(base)
		url := apiUser(srv, "pw", "resetkeys", "~"+store.AppKey("filmcraft")+"*", "~"+store.AppKey("photocraft")+"*")
		hs := start(t, url, quiet, hydrate.WithClock(clk))
		testkit.Eventually(t, "a failed first load", func() bool { return hs.h.Counts().Failures > 0 })
		srv.MustDo("ACL", "SETUSER", "api", "~*")
		advanceUntil(t, clk, 100*time.Millisecond, "the first load", func() bool { return hs.h.Counts().Loaded })
		want := map[string]release.Entry{}
		for _, a := range testApps {
			want[a.Key] = entry(base, "v1.0.0")
		}
		if got, _ := hs.sink.state(); describeAll(got) != describeAll(want) {
			t.Errorf("sink after the first load:\n got %s\nwant %s", describeAll(got), describeAll(want))
		}
	})
}

func TestLostEntryKeepsWhatSinkHas(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		lose    func(t testing.TB, srv *redistest.Server)
		missing uint64 // reads that must find nothing before the check
	}{
		{"flushall", func(_ testing.TB, srv *redistest.Server) { srv.MustDo("FLUSHALL") }, 3},
		{"pexpire", func(_ testing.TB, srv *redistest.Server) { srv.MustDo("PEXPIRE", store.AppKey("photocraft"), "1") }, 1},
		{"deleted", func(_ testing.TB, srv *redistest.Server) { srv.MustDo("DEL", store.AppKey("photocraft")) }, 1},
		{"not a hash", func(_ testing.TB, srv *redistest.Server) {
			srv.MustDo("DEL", store.AppKey("photocraft"))
			srv.MustDo("SET", store.AppKey("photocraft"), "garbage")
		}, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := redistest.Start(t)
			putAll(t, srv)
			hs := start(t, srv.URL(), quiet)
			hs.waitLoaded(t)
			before, calls0 := hs.sink.state()
			missing0 := hs.h.Counts().Missing

			tt.lose(t, srv)
			testkit.Eventually(t, "a read that finds the entry gone", func() bool { return hs.h.Counts().Missing >= missing0+tt.missing })

			after, calls := hs.sink.state()
			if calls != calls0 {
				t.Errorf("SetAll calls = %d after the loss, want %d", calls, calls0)
			}
			if g, w := describeAll(after), describeAll(before); g != w {
				t.Errorf("sink after the loss:\n got %s\nwant %s", g, w)
			}

			srv.MustDo("DEL", store.AppKey("photocraft"))
			put(t, srv, "photocraft", base.Add(time.Minute), "v2.0.0")
			hs.waitEntry(t, "the refill", "photocraft", base.Add(time.Minute), "v2.0.0")
		})
	}
}

func TestConnectionLoss(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		lose func(t testing.TB, srv *redistest.Server, hs *harness)
	}{
		{"redis restarted empty", func(t testing.TB, srv *redistest.Server, hs *harness) {
			before, calls0 := hs.sink.state()
			srv.Stop()
			testkit.Eventually(t, "a failed read", func() bool { return !hs.h.Counts().Connected })
			hs.mustBeRunning(t)
			// While Redis is down the sink keeps what it has.
			if after, calls := hs.sink.state(); calls != calls0 || describeAll(after) != describeAll(before) {
				t.Errorf("sink while Redis is down (%d SetAll calls, want %d):\n got %s\nwant %s", calls, calls0, describeAll(after), describeAll(before))
			}
			srv.Restart()
		}},
		{"connections killed", func(t testing.TB, srv *redistest.Server, hs *harness) {
			inv := hs.h.Counts().Invalidations
			srv.MustDo("CLIENT", "KILL", "TYPE", "normal")
			testkit.Eventually(t, "the lost connection noticed", func() bool { return hs.h.Counts().Invalidations > inv })
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := redistest.Start(t)
			put(t, srv, "photocraft", base, "v1.0.0")
			put(t, srv, "filmcraft", base, "v1.0.0")
			hs := start(t, srv.URL(), quiet)
			hs.waitLoaded(t)

			tt.lose(t, srv, hs)

			// The full re-read after reconnecting brings what was written meanwhile.
			put(t, srv, "photocraft", base.Add(time.Minute), "v2.0.0")
			hs.waitEntry(t, "the write after the loss", "photocraft", base.Add(time.Minute), "v2.0.0")
			testkit.Eventually(t, "a connected Hydrator", func() bool { return hs.h.Counts().Connected })

			// A quiet Hydrator hears of this one only if Redis tracks it again.
			put(t, srv, "photocraft", base.Add(2*time.Minute), "v3.0.0")
			hs.waitEntry(t, "an invalidation after the reconnect", "photocraft", base.Add(2*time.Minute), "v3.0.0")
			hs.wantEntry(t, "filmcraft", base, "v1.0.0", ": an entry lost by Redis stays")
			hs.mustBeRunning(t)
		})
	}
}

// TestRedisDownAtStart: while Redis is down the Hydrator retries with a
// backoff doubling from 200 ms and capped at 1 s, so that a pod serves from
// a promoted replica within a second of its promotion; it loads once Redis
// is back, and logs the outage and the recovery once each.
func TestRedisDownAtStart(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	srv.Stop()
	clk := fakeclock.New(base)
	hs := start(t, srv.URL(), quiet, hydrate.WithClock(clk))
	const step = 100 * time.Millisecond
	from := clk.Now()
	advanceUntil(t, clk, step, "three failed attempts", func() bool { return hs.h.Counts().Failures >= 3 })
	if took := clk.Now().Sub(from); took < 600*time.Millisecond {
		t.Errorf("three attempts within %v, want the backoff between them (200 ms, then 400 ms)", took)
	}
	advanceUntil(t, clk, step, "six failed attempts", func() bool { return hs.h.Counts().Failures >= 6 })
	from, n := clk.Now(), hs.h.Counts().Failures
	advanceUntil(t, clk, step, "three attempts more", func() bool { return hs.h.Counts().Failures >= n+3 })
	if took := clk.Now().Sub(from); took > 3*(time.Second+step) {
		t.Errorf("three attempts took %v, want at most a second (and a step) each", took)
	}
	if hs.h.Counts().Loaded {
		t.Fatal("Loaded closed while Redis was down")
	}
	hs.mustBeRunning(t)

	srv.Restart()
	put(t, srv, "photocraft", base, "v1.0.0")
	advanceUntil(t, clk, time.Second, "the first load", func() bool { return hs.h.Counts().Loaded })
	hs.waitEntry(t, "the first load", "photocraft", base, "v1.0.0")
	testkit.Eventually(t, "the recovery logged", func() bool { return hs.logs.FilterMessage("redis available again").Len() > 0 })
	hs.wantLogged(t, "redis unavailable, serving what is loaded", 1)
	hs.wantLogged(t, "redis available again", 1)
}

func TestFallbackWithoutClientTracking(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		before func(t testing.TB, srv *redistest.Server) string // returns the URL
		after  func(t testing.TB, srv *redistest.Server)        // once loaded
	}{
		{"refused from the start", func(_ testing.TB, srv *redistest.Server) string { return apiUser(srv, "pw", "-client") }, func(testing.TB, *redistest.Server) {}},
		{"refused after a reconnect", func(_ testing.TB, srv *redistest.Server) string { return apiUser(srv, "pw") },
			func(_ testing.TB, srv *redistest.Server) {
				srv.MustDo("ACL", "SETUSER", "api", "-client")
				srv.MustDo("CLIENT", "KILL", "USER", "api")
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := redistest.Start(t)
			put(t, srv, "photocraft", base, "v1.0.0")
			clk := fakeclock.New(base)
			hs := start(t, tt.before(t, srv), quiet, hydrate.WithClock(clk))
			hs.waitLoaded(t)
			tt.after(t, srv)
			advanceUntil(t, clk, 100*time.Millisecond, "the fallback", func() bool { return hs.h.Counts().Fallback })

			put(t, srv, "photocraft", base.Add(time.Minute), "v2.0.0")
			want := describe(entry(base.Add(time.Minute), "v2.0.0"))
			advanceUntil(t, clk, 100*time.Millisecond, "the write, by re-reading", func() bool { got, _ := hs.sink.state(); return describe(got["photocraft"]) == want })

			_, calls0 := hs.sink.state()
			st0, from := hs.h.Counts(), clk.Now()
			advanceUntil(t, clk, 100*time.Millisecond, "two more re-read rounds", func() bool { return hs.h.Counts().Reads >= st0.Reads+uint64(2*len(testApps)) })
			if took := clk.Now().Sub(from); took < time.Second {
				t.Errorf("two re-read rounds within %v, want one each second", took)
			}
			if _, calls := hs.sink.state(); calls != calls0 {
				t.Errorf("SetAll calls = %d after re-reads of unchanged hashes, want %d", calls, calls0)
			}
			if hits := hs.h.Counts().CacheHits - st0.CacheHits; hits != 0 {
				t.Errorf("re-reads without client tracking: %d cache hits, want 0", hits)
			}
			hs.wantLogged(t, "redis refused client tracking, re-reading every app each second", 1)
			hs.wantLogged(t, "redis unavailable, serving what is loaded", 0) // a refused CLIENT TRACKING is no outage
			hs.mustBeRunning(t)
		})
	}
}

func TestSilentRedis(t *testing.T) {
	testkit.Integration(t)
	t.Parallel()
	tests := []struct {
		name string
		wait func(t testing.TB, srv *fakeredis.Server, hs *harness)
	}{
		{"cancelled during the first read", func(t testing.TB, srv *fakeredis.Server, _ *harness) {
			testkit.Eventually(t, "a connection", func() bool { return srv.Accepted() > 0 })
		}},
		{"cancelled after a read timed out", func(t testing.TB, _ *fakeredis.Server, hs *harness) {
			testkit.Eventually(t, "a failed read", func() bool { return hs.h.Counts().Failures > 0 })
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := fakeredis.StartSilent(t)
			hs := start(t, srv.URL(), quiet)
			tt.wait(t, srv, hs)
			if hs.h.Counts().Loaded {
				t.Fatal("Loaded closed though Redis never answered a read")
			}
			hs.mustBeRunning(t)

			began := time.Now()
			hs.stop(t)
			t.Logf("Run returned %v after cancellation", time.Since(began))
			testkit.Eventually(t, "every connection closed", func() bool { return srv.Conns() == 0 })
		})
	}
}

func TestPasswordNeverShown(t *testing.T) {
	t.Parallel()
	const secret = "s3cr/3t-pw"
	tests := []struct {
		name, password string
		url            func(srv *redistest.Server, password string) string
		wantLog        string // what the log must say instead
	}{
		{"wrong password", secret, func(srv *redistest.Server, pw string) string {
			apiUser(srv, "right")
			return "redis://api:" + url.PathEscape(pw) + "@" + srv.Addr
		}, "WRONGPASS"},
		// rueidis quotes no password today; a password that happens to be
		// part of an error's text shows the log would cut it.
		{"password inside an error's text", "refused", func(srv *redistest.Server, pw string) string { srv.Stop(); return "redis://api:" + pw + "@" + srv.Addr }, "connection [redacted]"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := redistest.Start(t)
			hs := start(t, tt.url(srv, tt.password), quiet)
			testkit.Eventually(t, "two failed attempts", func() bool { return hs.h.Counts().Failures >= 2 })
			var said bool
			for _, e := range hs.logs.All() {
				line := fmt.Sprint(e.Message, e.ContextMap())
				if strings.Contains(line, tt.password) {
					t.Errorf("log shows the password: %s", line)
				}
				said = said || strings.Contains(line, tt.wantLog)
			}
			if !said {
				t.Errorf("no log line says %q: %v", tt.wantLog, hs.logs.All())
			}
		})
	}
}

func TestNoGoroutineLeft(t *testing.T) {
	before := runtime.NumGoroutine()
	srv := redistest.Start(t)
	put(t, srv, "photocraft", base, "v1.0.0")
	hs := start(t, srv.URL(), quiet)
	hs.waitLoaded(t)
	put(t, srv, "photocraft", base.Add(time.Minute), "v2.0.0")
	hs.waitEntry(t, "the write", "photocraft", base.Add(time.Minute), "v2.0.0")
	hs.stop(t)
	if !testkit.Within(waitLimit, func() bool { return runtime.NumGoroutine() <= before }) {
		buf := make([]byte, 1<<20)
		t.Fatalf("%d goroutines after Run returned, want at most %d:\n%s", runtime.NumGoroutine(), before, buf[:runtime.Stack(buf, true)])
	}
}

// harness runs one Hydrator against a fake sink and an observed logger.
type harness struct {
	h      *hydrate.Hydrator
	sink   *fakeSink
	logs   *observer.ObservedLogs
	cancel context.CancelFunc
	done   chan error
	once   sync.Once
}

// start runs a Hydrator for testApps on redisURL until the test ends; Run
// must then return nil.
func start(t testing.TB, redisURL string, opts ...hydrate.Option) *harness {
	t.Helper()
	return startApps(t, redisURL, testApps, opts...)
}

func startApps(t testing.TB, redisURL string, apps []release.App, opts ...hydrate.Option) *harness {
	t.Helper()
	o, err := redis.Parse(redisURL)
	if err != nil {
		t.Fatalf("Parse(%q): %v", redisURL, err)
	}
	core, logs := observer.New(zap.DebugLevel)
	sink := newSink()
	h, err := hydrate.New(o, apps, sink, zap.New(core), opts...)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	hs := &harness{h: h, sink: sink, logs: logs, cancel: cancel, done: make(chan error, 1)}
	go func() { hs.done <- h.Run(ctx) }()
	t.Cleanup(func() { hs.stop(t) })
	return hs
}

// stop cancels Run and waits for it to return nil.
func (hs *harness) stop(t testing.TB) {
	t.Helper()
	hs.once.Do(func() {
		hs.cancel()
		select {
		case err := <-hs.done:
			if err != nil {
				t.Errorf("Run returned %v after cancellation, want nil", err)
			}
		case <-time.After(waitLimit):
			t.Errorf("Run did not return within %v of cancellation", waitLimit)
		}
	})
}

// waitEntry waits until the sink holds app's fetch of tag at fetched.
func (hs *harness) waitEntry(t testing.TB, what, app string, fetched time.Time, tag string) {
	t.Helper()
	want := describe(entry(fetched, tag))
	hs.sink.waitFor(t, what, func(s map[string]release.Entry) bool { return describe(s[app]) == want })
}

// wantEntry checks that the sink holds app's fetch of tag at fetched.
func (hs *harness) wantEntry(t testing.TB, app string, fetched time.Time, tag, why string) {
	t.Helper()
	if got, _ := hs.sink.state(); describe(got[app]) != describe(entry(fetched, tag)) {
		t.Errorf("%s = %s, want %s%s", app, describe(got[app]), describe(entry(fetched, tag)), why)
	}
}

func (hs *harness) wantLogged(t testing.TB, msg string, n int) {
	t.Helper()
	if got := hs.logs.FilterMessage(msg).Len(); got != n {
		t.Errorf("logged %q %d times, want %d", msg, got, n)
	}
}

func (hs *harness) mustBeRunning(t testing.TB) {
	t.Helper()
	select {
	case err := <-hs.done:
		t.Fatalf("Run returned %v before cancellation", err)
	default:
	}
}

func (hs *harness) waitLoaded(t testing.TB) {
	t.Helper()
	select {
	case <-hs.h.Loaded():
	case <-time.After(waitLimit):
		t.Fatalf("Loaded not closed after %v; stats %+v", waitLimit, hs.h.Counts())
	}
}

// fakeSink merges what it is given with release.Entry.Merge, like the
// snapshot, and counts the calls that moved an entry.
type fakeSink struct {
	mu      sync.Mutex
	entries map[string]release.Entry
	calls   int
	changed chan struct{}
}

func newSink() *fakeSink {
	return &fakeSink{entries: map[string]release.Entry{}, changed: make(chan struct{}, 1)}
}

func (s *fakeSink) SetAll(m map[string]release.Entry, now time.Time) bool {
	s.mu.Lock()
	moved := false
	for app, e := range m {
		if cur := s.entries[app]; cur.Merge(e, now) != cur {
			s.entries[app], moved = cur.Merge(e, now), true
		}
	}
	if moved {
		s.calls++
	}
	s.mu.Unlock()
	if moved {
		select {
		case s.changed <- struct{}{}:
		default:
		}
	}
	return moved
}

func (s *fakeSink) state() (map[string]release.Entry, int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return maps.Clone(s.entries), s.calls
}

func (s *fakeSink) waitFor(t testing.TB, what string, cond func(map[string]release.Entry) bool) {
	t.Helper()
	timeout := time.After(waitLimit)
	for {
		m, _ := s.state()
		if cond(m) {
			return
		}
		select {
		case <-s.changed:
		case <-timeout:
			t.Fatalf("sink never got %s within %v; it has %s", what, waitLimit, describeAll(m))
		}
	}
}

// advanceUntil moves clk on by step every millisecond while anything waits
// on it, until cond holds.
func advanceUntil(t testing.TB, clk *fakeclock.Clock, step time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(waitLimit)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("no %s within %v (clock at %v)", what, waitLimit, clk.Now())
		}
		if clk.Waiters() > 0 {
			clk.Advance(step)
		}
		time.Sleep(time.Millisecond)
	}
}

// apiUser adds the user api with password pw, allowed everything but what
// rules take away, and returns a URL for it.
func apiUser(srv *redistest.Server, pw string, rules ...string) string {
	srv.MustDo(append([]string{"ACL", "SETUSER", "api", "on", ">" + pw, "~*", "&*", "+@all"}, rules...)...)
	return "redis://api:" + pw + "@" + srv.Addr
}

func entry(fetched time.Time, tag string) release.Entry {
	return release.Entry{FetchedAt: fetched, ETag: `"` + tag + `"`, Release: &release.Release{Tag: tag}}
}

// describe is the part of an entry the tests compare.
func describe(e release.Entry) string {
	tag := "none"
	if e.Release != nil {
		tag = e.Release.Tag
	}
	return fmt.Sprintf("{fetched %s etag %s release %s failed %s×%d claimed %s}",
		ms(e.FetchedAt), e.ETag, tag, ms(e.FailedAt), e.Failures, ms(e.ClaimedAt))
}

func describeAll(m map[string]release.Entry) string {
	var b strings.Builder
	for _, k := range slices.Sorted(maps.Keys(m)) {
		fmt.Fprintf(&b, "%s=%s ", k, describe(m[k]))
	}
	return "[" + strings.TrimSpace(b.String()) + "]"
}

// put writes a fetch for app as a poller does: a release tagged tag with the
// ETag "<tag>", fetched at fetched.
func put(t testing.TB, srv *redistest.Server, app string, fetched time.Time, tag string) {
	t.Helper()
	hset(t, srv, app, "v", "1", "fetched_ms", ms(fetched), "etag", `"`+tag+`"`, "release", releaseJSON(t, app, tag), "by", "test")
}

// putAll puts v1.0.0 fetched at base for every test app.
func putAll(t testing.TB, srv *redistest.Server) {
	t.Helper()
	for _, a := range testApps {
		put(t, srv, a.Key, base, "v1.0.0")
	}
}

func hset(t testing.TB, srv *redistest.Server, app string, fields ...string) {
	t.Helper()
	srv.MustDo(append([]string{"HSET", store.AppKey(app)}, fields...)...)
}

// releaseJSON is release tag of app as a poller stores it.
func releaseJSON(t testing.TB, app, tag string) string {
	t.Helper()
	i := slices.IndexFunc(testApps, func(a release.App) bool { return a.Key == app })
	if i < 0 {
		t.Fatalf("no test app %q", app)
	}
	b, err := release.Marshal(&release.Release{
		Tag: tag, Version: strings.TrimPrefix(tag, "v"), Name: tag,
		HTMLURL: release.TagURL(testApps[i].Repo, tag), Assets: []release.Asset{},
	})
	if err != nil {
		t.Fatalf("marshal release: %v", err)
	}
	return string(b)
}

func ms(t time.Time) string {
	if t.IsZero() {
		return "0"
	}
	return strconv.FormatInt(t.UnixMilli(), 10)
}

// readCalls is how many HSTRLEN and HMGET, the probes and the reads of the
// fields, the server has answered.
func readCalls(t testing.TB, srv *redistest.Server) int {
	t.Helper()
	info, err := srv.Info("commandstats")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, cmd := range []string{"hstrlen", "hmget"} {
		stat, ok := info["cmdstat_"+cmd]
		if !ok {
			continue
		}
		calls, _, _ := strings.Cut(strings.TrimPrefix(stat, "calls="), ",")
		c, err := strconv.Atoi(calls)
		if err != nil {
			t.Fatalf("INFO commandstats cmdstat_%s:%s: %v", cmd, stat, err)
		}
		n += c
	}
	return n
}
