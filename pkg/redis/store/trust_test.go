package store

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/storytold/craft-releases/pkg/clock"
	"github.com/storytold/craft-releases/pkg/release"
	"github.com/storytold/craft-releases/test/fakeclock"
	"github.com/storytold/craft-releases/test/redistest"
)

// TestPoisonedHashes: whatever a hash that no poller wrote says (the codec's
// table, TestDecodeApp, lists what a reader refuses), Load reads no fetch of
// it, and a write of the app's own goes over it; each refusal is counted,
// and logged once per app and writer.
func TestPoisonedHashes(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	a := newAdmin(t, srv)
	core, logs := observer.New(zapcore.WarnLevel)
	counted := 0
	s := newStore(t, srv.URL(), WithRefusals(NewRefusals(zap.New(core), func(app string) {
		if app == "photocraft" {
			counted++
		}
	})))
	poisoned := hostileReleases(t)["with a download_url in another repository"]
	for range 3 {
		if e := a.readBack(s, "photocraft", "v", "1", "fetched_ms", ms(t0), "etag", `"e"`, "release", poisoned, "by", "intruder"); e.Fetched() || e.Release != nil {
			t.Fatalf("read %s, want no fetch", fmtEntry(e))
		}
	}
	if counted != 3 {
		t.Errorf("counted %d refusals, want each of the 3 reads", counted)
	}
	if got := logs.FilterMessage("redis entry refused, keeping what was known").FilterField(zap.String("by", "intruder")).Len(); got != 1 {
		t.Errorf("logged the refusal %d times, want once for the app and the writer", got)
	}
	// An honest fetch, older than the poisoned one, replaces it.
	wrote(t)(s.PutFetch(context.Background(), "photocraft", fetch(t0.Add(-time.Hour), `"e2"`, rel("v0.9.0"))))
	if e := load(t, s, "photocraft"); e.Release == nil || e.Release.Tag != "v0.9.0" {
		t.Errorf("after the honest write, read %s", fmtEntry(e))
	}
}

// TestRefusalLogIsQuoted: the writer and the reason of a refused hash come
// from Redis; the refusal's log line shows them escaped, never raw.
func TestRefusalLogIsQuoted(t *testing.T) {
	core, logs := observer.New(zapcore.WarnLevel)
	r := NewRefusals(zap.New(core), nil)
	r.Note("photocraft", map[string]string{fieldBy: "EVIL\u202eDENWO\x1b[2J"}, errors.New("release: name \u0085\u202eexe.pdf"))
	entries := logs.TakeAll()
	if len(entries) != 1 {
		t.Fatalf("logged %d lines, want 1", len(entries))
	}
	got := entries[0].ContextMap()
	if want := `"EVIL\u202eDENWO\x1b[2J"`; got["by"] != want {
		t.Errorf("by = %v, want %s", got["by"], want)
	}
	if want := `"release: name \u0085\u202eexe.pdf"`; got["err"] != want {
		t.Errorf("err = %v, want %s", got["err"], want)
	}
}

// TestOversizedFieldsAreNotRead: a 16 MiB release (or any field over its
// bound) is refused from its length alone: Load reads a few bytes, not the
// value, and a write goes over it on both paths.
func TestOversizedFieldsAreNotRead(t *testing.T) {
	t.Parallel()
	big := `{"tag":"` + strings.Repeat("v", 16<<20) + `"}`
	good := encJSON(t, rel("v1.0.0"))
	eachPath(t, func(t *testing.T, o on) {
		for _, field := range []string{"release", "etag", "by", "junk"} {
			o.srv.MustDo("FLUSHALL")
			o.a.hset(AppKey("photocraft"), "v", "1", "fetched_ms", ms(t0), "etag", `"e"`, "release", good, "by", "poller-b")
			sent := netOutput(t, o.srv)
			e := o.a.readBack(o.s, "photocraft", field, big)
			if got := netOutput(t, o.srv) - sent; got > 64<<10 {
				t.Errorf("%s: Redis sent %d bytes to read one app, want a few KiB: the value was read", field, got)
			}
			if wantFetch := field == "by" || field == "junk"; e.Fetched() != wantFetch {
				t.Errorf("%s of 16 MiB: read %s, fetched want %v", field, fmtEntry(e), wantFetch)
			}
			wrote(t)(o.s.PutFetch(context.Background(), "photocraft", fetch(t0.Add(time.Second), `"e2"`, rel("v2.0.0"))))
			if e := load(t, o.s, "photocraft"); e.Release == nil || e.Release.Tag != "v2.0.0" {
				t.Errorf("%s: after the write, read %s", field, fmtEntry(e))
			}
		}
	})
}

// netOutput is how many bytes srv has sent its clients.
func netOutput(t testing.TB, srv *redistest.Server) int64 {
	t.Helper()
	n, err := srv.BytesSent()
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// TestFutureTimes: a Store reads and decides at the time of its clock (a
// poller whose clock runs an hour ahead and that does not correct it writes
// times the others do not believe: the codec's and decide's tables say
// which); on a clock.Corrected it measures its skew against Redis's clock,
// tells time by Redis, and so writes honest times.
func TestFutureTimes(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	ctx := context.Background()
	now := time.Now()
	ahead := newStore(t, srv.URL(), WithClock(fakeclock.New(now.Add(time.Hour))))
	wrote(t)(ahead.PutFetch(ctx, "photocraft", fetch(now.Add(time.Hour), `"e9"`, rel("v9.0.0"))))
	if e := load(t, ahead, "photocraft"); !e.Fetched() {
		t.Errorf("the fast clock does not believe its own fetch: %s", fmtEntry(e))
	}
	honest := newStore(t, srv.URL())
	if e := load(t, honest, "photocraft"); e.Fetched() {
		t.Errorf("an honest reader believes %s", fmtEntry(e))
	}

	for _, skew := range []time.Duration{time.Hour, -time.Hour, 40 * time.Second, -40 * time.Second, 5 * time.Second} {
		told := clock.NewCorrected(fakeclock.New(time.Now().Add(skew)))
		s := newStore(t, srv.URL(), WithClock(told))
		residual, err := s.ClockOffset(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if (residual - skew).Abs() > time.Second {
			t.Errorf("skew %v: measured %v", skew, residual)
		}
		told.Correct(residual, release.MaxSkew)
		want := time.Now()
		if skew.Abs() <= release.MaxSkew {
			want = want.Add(skew)
		}
		if got := told.Now(); got.Sub(want).Abs() > time.Second {
			t.Errorf("skew %v: corrected to %v off the truth, want %v", skew, time.Until(got), time.Until(want))
		}
	}
}
