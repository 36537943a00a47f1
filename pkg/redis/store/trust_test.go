package store

import (
	"context"
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

// poisoned are hashes no poller writes, each of which a reader refuses
// whole, keeping what it had.
func poisoned(t testing.TB) map[string]string {
	t.Helper()
	good := rel("v1.0.0")
	good.Assets = []release.Asset{{Name: "photocraft-1.0.0-linux-x64.deb",
		DownloadURL: release.DownloadURL(photocraft.Repo, "v1.0.0", "photocraft-1.0.0-linux-x64.deb"),
		Platform:    release.ParseAsset("photocraft-1.0.0-linux-x64.deb")}}
	b, err := release.Marshal(good)
	if err != nil {
		t.Fatal(err)
	}
	s := string(b)
	return map[string]string{
		"download_url in another repository": strings.Replace(s, "photocraft/releases/download", "evilcraft/releases/download", 1),
		"html_url in another repository":     strings.Replace(s, "photocraft/releases/tag", "evilcraft/releases/tag", 1),
		"sha256 not hex":                     strings.Replace(s, `"sha256":null`, `"sha256":"<script>"`, 1),
		"version not the tag's":              strings.Replace(s, `"version":"1.0.0"`, `"version":"9.9.9"`, 1),
		"platform the name does not say":     strings.Replace(s, `"os":"linux"`, `"os":"windows"`, 1),
		"a key in capitals":                  strings.Replace(s, `"tag"`, `"TAG"`, 1),
		"a bidi override in the name":        strings.Replace(s, `"name":"PhotoCraft`, `"name":"\u202ePhotoCraft`, 1),
	}
}

// TestPoisonedHashes: whatever a hash that no poller wrote says, Load reads
// no fetch of it, and a write of the app's own goes over it; each refusal
// is counted, and logged once per app and writer.
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
	ctx := context.Background()
	for name, value := range poisoned(t) {
		t.Run(name, func(t *testing.T) {
			srv.MustDo("FLUSHALL")
			logs.TakeAll()
			counted = 0
			a.hset(AppKey("photocraft"), "v", "1", "fetched_ms", ms(t0), "etag", `"e"`, "release", value, "by", "intruder")
			for range 3 {
				e, _, err := s.LoadApp(ctx, "photocraft")
				if err != nil {
					t.Fatal(err)
				}
				if e.Fetched() || e.Release != nil {
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
			if ok, err := s.PutFetch(ctx, "photocraft", fetch(t0.Add(-time.Hour), `"e2"`, rel("v0.9.0"))); err != nil || !ok {
				t.Fatalf("PutFetch over a poisoned hash = %v, %v; want written", ok, err)
			}
			if e, _, _ := s.LoadApp(ctx, "photocraft"); e.Release == nil || e.Release.Tag != "v0.9.0" {
				t.Errorf("after the honest write, read %s", fmtEntry(e))
			}
		})
	}
}

// TestOversizedFieldsAreNotRead: a 16 MiB release (or any field over its
// bound) is refused from its length alone: Load reads a few bytes, not the
// value, and a write goes over it on both paths.
func TestOversizedFieldsAreNotRead(t *testing.T) {
	t.Parallel()
	big := `{"tag":"` + strings.Repeat("v", 16<<20) + `"}`
	for _, p := range paths {
		t.Run(p.name, func(t *testing.T) {
			srv := redistest.Start(t)
			a := newAdmin(t, srv)
			s := newStore(t, p.url(t, srv))
			ctx := context.Background()
			for _, field := range []string{"release", "etag", "by", "junk"} {
				srv.MustDo("FLUSHALL")
				good, err := release.Marshal(rel("v1.0.0"))
				if err != nil {
					t.Fatal(err)
				}
				a.hset(AppKey("photocraft"), "v", "1", "fetched_ms", ms(t0), "etag", `"e"`, "release", string(good), "by", "poller-b")
				a.hset(AppKey("photocraft"), field, big)
				sent := netOutput(t, srv)
				e, _, err := s.LoadApp(ctx, "photocraft")
				if err != nil {
					t.Fatal(err)
				}
				if got := netOutput(t, srv) - sent; got > 64<<10 {
					t.Errorf("%s: Redis sent %d bytes to read one app, want a few KiB: the value was read", field, got)
				}
				if wantFetch := field == "by" || field == "junk"; e.Fetched() != wantFetch {
					t.Errorf("%s of 16 MiB: read %s, fetched want %v", field, fmtEntry(e), wantFetch)
				}
				if ok, err := s.PutFetch(ctx, "photocraft", fetch(t0.Add(time.Second), `"e2"`, rel("v2.0.0"))); err != nil || !ok {
					t.Fatalf("%s: PutFetch = %v, %v; want written", field, ok, err)
				}
				if e, _, _ := s.LoadApp(ctx, "photocraft"); e.Release == nil || e.Release.Tag != "v2.0.0" {
					t.Errorf("%s: after the write, read %s", field, fmtEntry(e))
				}
			}
		})
	}
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

// TestFutureTimes: against a real Redis, a poller whose clock runs an hour
// ahead and that does not correct it writes times that the others do not
// believe: its fetch reads as none, and neither its fetch nor its claim
// blocks an honest write. On a clock.Corrected it measures the hour, tells
// time by Redis and writes honest times.
func TestFutureTimes(t *testing.T) {
	t.Parallel()
	for _, p := range paths {
		t.Run(p.name, func(t *testing.T) {
			srv := redistest.Start(t)
			ctx := context.Background()
			honest := newStore(t, p.url(t, srv))
			now := time.Now()
			ahead := newStore(t, p.url(t, srv), WithClock(fakeclock.New(now.Add(time.Hour))))

			if ok, err := ahead.Claim(ctx, "photocraft", now.Add(time.Hour), time.Minute); err != nil || !ok {
				t.Fatalf("the fast clock's claim = %v, %v", ok, err)
			}
			if ok, err := ahead.PutFetch(ctx, "photocraft", fetch(now.Add(time.Hour), `"e9"`, rel("v9.0.0"))); err != nil || !ok {
				t.Fatalf("the fast clock's fetch = %v, %v", ok, err)
			}
			if e, _, _ := honest.LoadApp(ctx, "photocraft"); e.Fetched() || !e.ClaimedAt.IsZero() {
				t.Errorf("an honest reader believes %s", fmtEntry(e))
			}
			if ok, err := honest.Claim(ctx, "photocraft", time.Now(), time.Minute); err != nil || !ok {
				t.Errorf("an honest claim = %v, %v; want written over the future one", ok, err)
			}
			if ok, err := honest.PutFetch(ctx, "photocraft", fetch(time.Now(), `"e2"`, rel("v2.0.0"))); err != nil || !ok {
				t.Errorf("an honest fetch = %v, %v; want written over the future one", ok, err)
			}
			if e, _, _ := honest.LoadApp(ctx, "photocraft"); e.Release == nil || e.Release.Tag != "v2.0.0" {
				t.Errorf("read %s, want the honest v2.0.0", fmtEntry(e))
			}

			for _, skew := range []time.Duration{time.Hour, -time.Hour, 40 * time.Second, -40 * time.Second, 5 * time.Second} {
				told := clock.NewCorrected(fakeclock.New(time.Now().Add(skew)))
				s := newStore(t, p.url(t, srv), WithClock(told))
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
		})
	}
}
