package store

import (
	"context"
	"maps"
	"slices"
	"testing"
	"time"

	"github.com/storytold/craft-releases/pkg/release"
	"github.com/storytold/craft-releases/pkg/schedule"
	"github.com/storytold/craft-releases/test/redistest"
)

// apps13 are the default apps of docs/config.md.
var apps13 = []string{"photocraft", "vectorcraft", "filmcraft", "lightcraft", "pdfcraft", "effectcraft",
	"designcraft", "wordcraft", "deckcraft", "gridcraft", "cadcraft", "soundcraft", "artcraft-launcher"}

// TestLoad: Load and LoadApp read every app asked for, an unreadable hash as
// absent, and the backoff; Status tells what each key holds.
func TestLoad(t *testing.T) {
	for _, top := range topologies {
		t.Run(top.name, func(t *testing.T) {
			srv := top.start(t)
			a := newAdmin(t, srv)
			s := newStore(t, srv.URL())
			ctx := context.Background()

			want := make(map[string]release.Entry, len(apps13))
			for _, app := range apps13 {
				want[app] = release.Entry{}
			}
			want["photocraft"] = fetch(at("12:02"), `"e2"`, rel("v0.2.0"))
			wrote(t)(s.PutFetch(ctx, "photocraft", want["photocraft"]))
			want["filmcraft"] = fetch(at("12:03"), "", nil)
			wrote(t)(s.PutFetch(ctx, "filmcraft", want["filmcraft"]))
			want["pdfcraft"] = release.Entry{FailedAt: at("12:04"), Failures: 3}
			wrote(t)(s.PutFailure(ctx, "pdfcraft", want["pdfcraft"]))
			want["cadcraft"] = release.Entry{ClaimedAt: at("12:05")}
			wrote(t)(s.Claim(ctx, "cadcraft", at("12:05"), time.Minute))
			// Unreadable keys read as absent.
			a.hset(AppKey("wordcraft"), "v", "2", "fetched_ms", ms(at("12:06")), "etag", "x", "release", "null", "by", "poller-z")
			a.do("SET", AppKey("deckcraft"), "garbage")
			a.hset(AppKey("soundcraft"), "v", "1", "fetched_ms", "soon", "etag", "x", "release", "null",
				"failed_ms", ms(at("12:07")), "failures", "many")
			want["soundcraft"] = release.Entry{FailedAt: at("12:07"), Failures: 1}

			backoff := schedule.Backoff{Until: at("13:00"), Trouble: 2}
			if err := s.PutBackoff(ctx, backoff); err != nil {
				t.Fatal(err)
			}

			got, gotBackoff, err := s.Load(ctx, apps13)
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != len(apps13) {
				t.Errorf("Load returned %d apps, want %d", len(got), len(apps13))
			}
			for _, app := range apps13 {
				if e, ok := got[app]; !ok || !sameEntry(e, want[app]) {
					t.Errorf("%s: got %s (present %v), want %s", app, fmtEntry(e), ok, fmtEntry(want[app]))
				}
			}
			if !gotBackoff.Until.Equal(backoff.Until) || gotBackoff.Trouble != backoff.Trouble {
				t.Errorf("backoff: got %+v, want %+v", gotBackoff, backoff)
			}
			e, b, err := s.LoadApp(ctx, "photocraft")
			if err != nil || !sameEntry(e, want["photocraft"]) || !b.Until.Equal(backoff.Until) {
				t.Errorf("LoadApp: got %s and %+v, %v; want %s and %+v", fmtEntry(e), b, err, fmtEntry(want["photocraft"]), backoff)
			}

			apps, bs, err := s.Status(ctx, []string{"photocraft", "wordcraft", "vectorcraft"})
			if err != nil {
				t.Fatal(err)
			}
			for i, tt := range []struct {
				app         string
				exists      bool
				version, by string
				tag         string
				ttl         func(time.Duration) bool
			}{
				{"photocraft", true, "1", "poller-a", "v0.2.0", func(d time.Duration) bool { return d > 6*24*time.Hour }},
				{"wordcraft", true, "2", "poller-z", "", func(d time.Duration) bool { return d < 0 }},
				{"vectorcraft", false, "", "", "", func(d time.Duration) bool { return d == 0 }},
			} {
				got, tag := apps[i], ""
				if got.Entry.Release != nil {
					tag = got.Entry.Release.Tag
				}
				if got.App != tt.app || got.Exists != tt.exists || got.Version != tt.version || got.By != tt.by || tag != tt.tag || !tt.ttl(got.TTL) {
					t.Errorf("status: got %+v (tag %q), want app %s exists %v version %q by %q tag %q", got, tag,
						tt.app, tt.exists, tt.version, tt.by, tt.tag)
				}
			}
			if !bs.Exists || bs.By != "poller-a" || bs.Backoff != backoff || bs.TTL <= 23*time.Hour {
				t.Errorf("backoff status: got %+v", bs)
			}
		})
	}
}

// TestLoadIsTwoPipelines: Load reads every hash in two round trips, however
// many apps: every field's length (HSTRLEN), then the fields within bounds
// (HMGET).
func TestLoadIsTwoPipelines(t *testing.T) {
	srv := redistest.Start(t)
	c := &countingClient{Client: srv.Client(t)}
	s := New(fixedConn{c}, "poller-a", testApps)
	ctx := context.Background()
	lens1 := len(appFields) + len(backoffFields)
	lens := len(apps13)*len(appFields) + len(backoffFields)

	tests := []struct {
		name string
		do   func() error
		want []int // commands per round trip
	}{
		{"load", func() error { _, _, err := s.Load(ctx, apps13); return err }, []int{lens, len(apps13) + 1}},
		{"load one app", func() error { _, _, err := s.LoadApp(ctx, "photocraft"); return err }, []int{lens1, 2}},
		{"status", func() error { _, _, err := s.Status(ctx, apps13); return err }, []int{lens, len(apps13) + 1, len(apps13) + 1}},
	}
	for _, tt := range tests {
		c.reset()
		if err := tt.do(); err != nil {
			t.Fatalf("%s: %v", tt.name, err)
		}
		if got := c.reset(); !slices.Equal(got, tt.want) {
			t.Errorf("%s: round trips carried %v commands, want %v", tt.name, got, tt.want)
		}
	}
}

// TestBackoff: PutBackoff writes the backoff over whatever the key held, or
// deletes it; ClearBackoff is a compare-and-delete on each path: the hash
// goes only if it still reads as the backoff read before.
func TestBackoff(t *testing.T) {
	b13 := schedule.Backoff{Until: at("13:00"), Trouble: 2}
	hash := func(until, trouble string) []string {
		return []string{"v", "1", "until_ms", until, "trouble", trouble, "by", "poller-b"}
	}
	mine := func(until, trouble string) map[string]string {
		return map[string]string{"v": "1", "until_ms": until, "trouble": trouble, "by": "poller-a"}
	}
	puts := []struct {
		name   string
		before []string // HSET pairs on the backoff key first
		b      schedule.Backoff
		want   map[string]string // nil: no key
	}{
		{"write", nil, b13, mine(ms(at("13:00")), "2")},
		{"overwrite a newer one", hash(ms(at("14:00")), "5"), schedule.Backoff{Until: at("13:00"), Trouble: 1}, mine(ms(at("13:00")), "1")},
		{"replace another format", []string{"v", "2", "until_ms", ms(at("14:00")), "scope", "all"}, schedule.Backoff{Until: at("13:00"), Trouble: 1}, mine(ms(at("13:00")), "1")},
		{"clear", hash(ms(at("14:00")), "5"), schedule.Backoff{}, nil},
		{"clear nothing", nil, schedule.Backoff{}, nil},
	}
	clears := []struct {
		name   string
		before []string // HSET pairs on the backoff key first; nil: no key
		wrong  bool     // the key holds a string
		read   schedule.Backoff
		want   bool
	}{
		{"still the one read", hash(ms(at("13:00")), "2"), false, b13, true},
		{"another poller's newer backoff", hash(ms(at("14:00")), "3"), false, b13, false},
		{"same end, more trouble", hash(ms(at("13:00")), "3"), false, b13, false},
		{"a backoff where none was read", hash(ms(at("14:00")), "1"), false, schedule.Backoff{}, false},
		{"trouble only, as read", hash("0", "4"), false, schedule.Backoff{Trouble: 4}, true},
		{"nothing to clear", nil, false, schedule.Backoff{}, true},
		{"gone since the read", nil, false, b13, false},
		{"another format reads as none", []string{"v", "2", "until_ms", ms(at("13:00")), "trouble", "2"}, false, schedule.Backoff{}, true},
		{"another format is not the one read", []string{"v", "2", "until_ms", ms(at("13:00")), "trouble", "2"}, false, b13, false},
		{"a string reads as none", nil, true, schedule.Backoff{}, true},
		{"trouble with a plus reads as 0", hash(ms(at("13:00")), "+2"), false, schedule.Backoff{Until: at("13:00")}, true},
		{"trouble of 19 digits reads as 0", hash(ms(at("13:00")), "1000000000000000002"), false, schedule.Backoff{Until: at("13:00")}, true},
		{"until with a space reads as none", hash(" "+ms(at("13:00")), "2"), false, schedule.Backoff{Trouble: 2}, true},
	}
	ctx := context.Background()
	// PutBackoff is no guarded write: one path.
	one := started(t)
	for _, tt := range puts {
		one.a.seed(one.srv, BackoffKey, false, tt.before)
		if err := one.s.PutBackoff(ctx, tt.b); err != nil {
			t.Fatalf("%s: %v", tt.name, err)
		}
		if raw := one.a.hgetall(BackoffKey); !maps.Equal(raw, tt.want) {
			t.Errorf("%s: hash is %v, want %v", tt.name, raw, tt.want)
		}
		if ttl := one.a.pttl(BackoffKey); tt.want != nil && (ttl <= 23*time.Hour || ttl > 24*time.Hour) {
			t.Errorf("%s: TTL = %v, want about a day", tt.name, ttl)
		}
		if _, got, err := one.s.Load(ctx, nil); err != nil || !got.Until.Equal(tt.b.Until) || got.Trouble != tt.b.Trouble {
			t.Errorf("%s: Load reads %+v, %v; want %+v", tt.name, got, err, tt.b)
		}
	}
	eachPath(t, func(t *testing.T, o on) {
		for _, tt := range clears {
			o.a.seed(o.srv, BackoffKey, tt.wrong, tt.before)
			got, err := o.s.ClearBackoff(ctx, tt.read)
			if err != nil || got != tt.want {
				t.Errorf("%s: ClearBackoff = %v, %v; want %v", tt.name, got, err, tt.want)
			}
			had := tt.before != nil || tt.wrong
			if n, _ := o.a.do("EXISTS", BackoffKey).AsInt64(); (n == 1) != (had && !got) {
				t.Errorf("%s: ClearBackoff = %v, and the key exists: %v", tt.name, got, n == 1)
			}
		}
	})
}
