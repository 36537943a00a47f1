package hydrate_test

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/storytold/craft-releases/pkg/redis/hydrate"
	"github.com/storytold/craft-releases/pkg/release"
	"github.com/storytold/craft-releases/test/fakeclock"
	"github.com/storytold/craft-releases/test/redistest"
	"github.com/storytold/craft-releases/test/testkit"
)

// TestRefusedHashes: a pod serves nothing of a hash that no poller wrote: a
// release of another repository, a fetch an hour in the future, a 16 MiB
// release, which it does not even read. The app keeps what it had; each
// refusal is counted and logged once.
func TestRefusedHashes(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	now := time.Now()
	put(t, srv, "photocraft", now.Add(-time.Minute), "v0.5.0")
	// filmcraft's hash holds photocraft's release; the launcher's a fetch an hour ahead.
	hset(t, srv, "filmcraft", "v", "1", "fetched_ms", ms(now), "etag", `"e"`,
		"release", releaseJSON(t, "photocraft", "v1.0.0"), "by", "intruder")
	hset(t, srv, "artcraft-launcher", "v", "1", "fetched_ms", ms(now.Add(time.Hour)), "etag", `"e"`,
		"release", releaseJSON(t, "artcraft-launcher", "v9.0.0"), "by", "fast-clock")
	hs := start(t, srv.URL(), quiet)
	hs.waitLoaded(t)

	got, _ := hs.sink.state()
	if g, w := describeAll(got), describeAll(map[string]release.Entry{"photocraft": entry(now.Add(-time.Minute), "v0.5.0")}); g != w {
		t.Errorf("sink after load:\n got %s\nwant %s", g, w)
	}
	if n := hs.h.Counts().Refused; n != 2 {
		t.Errorf("refused %d reads, want 2", n)
	}
	hs.wantLogged(t, "redis entry refused, keeping what was known", 2) // one for each app and writer

	// A 16 MiB release: the invalidation brings a re-read of its length
	// alone, and photocraft keeps v0.5.0.
	sent := netOutput(t, srv)
	refused := hs.h.Counts().Refused
	hset(t, srv, "photocraft", "fetched_ms", ms(now), "release", `{"tag":"`+strings.Repeat("v", 16<<20)+`"}`)
	testkit.Eventually(t, "the refusal of the oversized release", func() bool { return hs.h.Counts().Refused > refused })
	if got := netOutput(t, srv) - sent; got > 64<<10 {
		t.Errorf("Redis sent the pod %d bytes, want a few KiB: the value was read", got)
	}
	hs.wantEntry(t, "photocraft", now.Add(-time.Minute), "v0.5.0", " kept")
}

// TestPodClockBehind: a pod whose clock runs an hour behind tells time by
// Redis, so that it believes the pollers' honest times instead of refusing
// them as future; it says so once, as a poller does, and exports the offset.
func TestPodClockBehind(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	now := time.Now()
	put(t, srv, "photocraft", now, "v0.5.0")
	hs := start(t, srv.URL(), quiet, hydrate.WithClock(fakeclock.New(now.Add(-time.Hour))))
	hs.waitLoaded(t)
	hs.wantEntry(t, "photocraft", now, "v0.5.0", ": an honest fetch")
	if off := hs.h.Counts().ClockOffset; (off + time.Hour).Abs() > 5*time.Second {
		t.Errorf("clock offset %v, want about -1h", off)
	}
	warned := hs.logs.FilterMessage("clock differs from redis's").All()
	if len(warned) != 1 {
		t.Fatalf("warned %d times, want once", len(warned))
	}
	if got := warned[0].ContextMap()["telling_time_by_redis"]; got != true {
		t.Errorf("telling_time_by_redis = %v, want true: the runbook's query reads it", got)
	}
	if n := hs.h.Counts().Refused; n != 0 {
		t.Errorf("refused %d reads, want none", n)
	}
}

// TestClockSetRightBeforeAFutureHash: while a pod tells time by Redis
// (Redis an hour ahead), Redis's clock is set right and a hash dated an
// hour ahead arrives at once: the pod measures the clock again before it
// judges it, and refuses it rather than serve it for the seconds until its
// next full read.
func TestClockSetRightBeforeAFutureHash(t *testing.T) {
	t.Parallel()
	shift := redistest.NewShift(t, time.Hour)
	srv := shift.Start(t)
	now := time.Now()
	put(t, srv, "photocraft", now.Add(time.Hour), "v0.5.0")
	hs := start(t, srv.URL(), quiet, hydrate.WithClock(fakeclock.New(now)))
	hs.waitLoaded(t)
	shift.Set(0)
	refused := hs.h.Counts().Refused
	hset(t, srv, "photocraft", "fetched_ms", ms(now.Add(time.Hour+5*time.Second)), "release", releaseJSON(t, "photocraft", "v6.6.6"))
	testkit.Eventually(t, "the refusal of the hash from the future", func() bool { return hs.h.Counts().Refused > refused })
	hs.wantEntry(t, "photocraft", now.Add(time.Hour), "v0.5.0", " kept")
}

// TestFutureHashTakenWhenItsTimeComes: an app hash and a meta hash dated
// ahead of the fleet's clock are refused; once the fleet's clock reaches
// them, the next safety-net read takes them, although nothing wrote to them
// since and Redis still tracks them for the pod.
func TestFutureHashTakenWhenItsTimeComes(t *testing.T) {
	t.Parallel()
	shift := redistest.NewShift(t, 0)
	srv := shift.Start(t)
	now := time.Now()
	put(t, srv, "photocraft", now.Add(time.Hour), "v0.5.0")
	putMeta(t, publisher(t, srv), announcing("ahead"), now.Add(time.Hour))
	clk, meta := fakeclock.New(now), new(metaSink)
	hs := start(t, srv.URL(), hydrate.WithClock(clk), hydrate.WithMeta(meta))
	hs.waitLoaded(t)
	if n, metas := hs.h.Counts().Refused, meta.calls(); n != 1 || len(metas) != 0 {
		t.Fatalf("at the load: refused %d app reads, gave the meta sink %q; want 1 and nothing", n, metas)
	}
	shift.Set(time.Hour)
	want := describe(entry(now.Add(time.Hour), "v0.5.0"))
	advanceUntil(t, clk, time.Second, "both hashes taken", func() bool {
		got, _ := hs.sink.state()
		return describe(got["photocraft"]) == want && slices.Equal(meta.calls(), []string{"ahead"})
	})
}

func netOutput(t testing.TB, srv *redistest.Server) int64 {
	t.Helper()
	n, err := srv.BytesSent()
	if err != nil {
		t.Fatal(err)
	}
	return n
}
