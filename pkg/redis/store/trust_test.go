package store

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/storytold/craft-releases/pkg/clock"
	"github.com/storytold/craft-releases/pkg/release"
	"github.com/storytold/craft-releases/test/fakeclock"
	"github.com/storytold/craft-releases/test/redistest"
)

// TestRefusalLogIsQuoted: the writer and the reason of a refused hash come
// from Redis; the refusal's log line shows them escaped, never raw.
func TestRefusalLogIsQuoted(t *testing.T) {
	log, logs := observed()
	r := NewRefusals(log, nil)
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

// TestRefusedFields: a hash that no poller wrote (the codec's table,
// TestDecodeApp, lists what a reader refuses), or with a field over its
// bound, reads as no fetch, the bound from its length alone: Load reads a
// few bytes, not the value. Each refusal is counted, and logged once per app
// and writer; a write of the app's own, even older, goes over it, on both
// paths.
func TestRefusedFields(t *testing.T) {
	t.Parallel()
	big := `{"tag":"` + strings.Repeat("v", 16<<20) + `"}`
	good := encJSON(t, rel("v1.0.0"))
	tests := []struct {
		name, field, value string
		fetched, refused   bool
	}{
		{"a poisoned release", "release", hostileReleases(t)["with a download_url in another repository"], false, true},
		{"a release of 16 MiB", "release", big, false, true},
		{"an etag of 16 MiB", "etag", big, false, true},
		{"a writer of 16 MiB", "by", big, true, true},
		{"a field of 16 MiB no hash has", "junk", big, true, false},
	}
	eachPath(t, func(t *testing.T, o on) {
		for _, tt := range tests {
			log, logs := observed()
			counted := 0
			s := newStore(t, o.url, WithRefusals(NewRefusals(log, func(app string) {
				if app == "photocraft" {
					counted++
				}
			})))
			o.srv.MustDo("FLUSHALL")
			for range 3 {
				o.a.hset(AppKey("photocraft"), "v", "1", "fetched_ms", ms(t0), "etag", `"e"`, "release", good, "by", "intruder")
				sent := netOutput(t, o.srv)
				e := o.a.readBack(s, "photocraft", tt.field, tt.value)
				if got := netOutput(t, o.srv) - sent; got > 64<<10 {
					t.Errorf("%s: Redis sent %d bytes to read one app, want a few KiB: the value was read", tt.name, got)
				}
				if e.Fetched() != tt.fetched || !tt.fetched && e.Release != nil {
					t.Fatalf("%s: read %s, fetched want %v", tt.name, fmtEntry(e), tt.fetched)
				}
			}
			if want := map[bool]int{true: 3}[tt.refused]; counted != want {
				t.Errorf("%s: counted %d refusals, want %d", tt.name, counted, want)
			}
			logged := logs.FilterMessage("redis entry refused, keeping what was known")
			if tt.field != "by" {
				logged = logged.FilterField(zap.String("by", "intruder"))
			}
			if got, want := logged.Len(), map[bool]int{true: 1}[tt.refused]; got != want {
				t.Errorf("%s: logged the refusal %d times, want %d", tt.name, got, want)
			}
			when := t0.Add(-time.Hour) // older than the refused fetch
			if tt.fetched {
				when = t0.Add(time.Second)
			}
			wrote(t)(o.s.PutFetch(context.Background(), "photocraft", fetch(when, `"e2"`, rel("v2.0.0"))))
			if e := load(t, s, "photocraft"); e.Release == nil || e.Release.Tag != "v2.0.0" {
				t.Errorf("%s: after the write, read %s", tt.name, fmtEntry(e))
			}
		}
	})
}

func netOutput(t testing.TB, srv *redistest.Server) int64 {
	t.Helper()
	return must(srv.BytesSent())(t)
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
		residual := must(s.ClockOffset(ctx))(t)
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
