package store

import (
	"context"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/storytold/craft-releases/pkg/release"
	"github.com/storytold/craft-releases/test/fakeclock"
	"github.com/storytold/craft-releases/test/redistest"
	"github.com/storytold/craft-releases/test/testkit"
)

func TestDeliver(t *testing.T) {
	t.Parallel()
	o := started(t)
	s, a := o.s, o.a
	ctx := context.Background()
	r := release.Refresh{At: t0, Tag: "v1.2.0"}

	first, err := s.Deliver(ctx, []string{"guid-1", "sha256-aa"}, each(r, "photocraft", "photo2"))
	if err != nil || !first {
		t.Fatalf("first delivery: new %v, %v; want new", first, err)
	}
	for _, id := range []string{"guid-1", "sha256-aa"} {
		if ttl := a.pttl(DeliveryKey(id)); ttl < 71*time.Hour || ttl > 72*time.Hour {
			t.Errorf("delivery %s TTL %v, want 72 h", id, ttl)
		}
	}
	for _, app := range []string{"photocraft", "photo2"} {
		if ttl := a.pttl(RefreshKey(app)); ttl < 59*time.Minute || ttl > time.Hour {
			t.Errorf("%s refresh TTL %v, want an hour", app, ttl)
		}
	}
	got := must(s.Refreshes(ctx, []string{"photocraft", "photo2", "vectorcraft"}))(t)
	if len(got) != 2 || !got["photocraft"].At.Equal(t0) || got["photocraft"].Tag != "v1.2.0" || got["photo2"].Tag != "v1.2.0" {
		t.Errorf("Refreshes got %v, want photocraft and photo2 at t0 with v1.2.0", got)
	}

	// A redelivery changes nothing, even with another time.
	first, err = s.Deliver(ctx, []string{"guid-1", "sha256-aa"}, each(release.Refresh{At: t0.Add(time.Minute)}, "photocraft"))
	if err != nil || first {
		t.Fatalf("redelivery: new %v, %v; want a duplicate", first, err)
	}
	// The same body under another id (a replay) is a duplicate too, and
	// leaves no key: 20,000 of them add nothing.
	keys := a.dbsize()
	for i := range 20_000 {
		first, err = s.Deliver(ctx, []string{"sha256-aa", "guid-replay-" + strconv.Itoa(i)}, each(release.Refresh{At: t0.Add(time.Minute)}, "photocraft"))
		if err != nil || first {
			t.Fatalf("replay %d under another id: new %v, %v; want a duplicate", i, first, err)
		}
	}
	if n := a.dbsize(); n != keys {
		t.Errorf("%d keys after 20,000 replays of one body, %d before: want none added", n, keys)
	}
	// A new body under an id seen before leaves its hash behind neither.
	if first, err = s.Deliver(ctx, []string{"sha256-cc", "guid-1"}, each(r, "photocraft")); err != nil || first {
		t.Fatalf("another body under a delivery id seen: new %v, %v; want a duplicate", first, err)
	}
	if n := a.dbsize(); n != keys {
		t.Errorf("%d keys after another body under a delivery id seen, %d before: want none added", n, keys)
	}
	if got, _ := s.Refreshes(ctx, []string{"photocraft"}); !got["photocraft"].At.Equal(t0) {
		t.Errorf("a redelivery moved the request to %v", got["photocraft"].At)
	}

	// A new delivery replaces the app's request whole.
	if _, err := s.Deliver(ctx, []string{"guid-2", "sha256-bb"}, each(release.Refresh{At: t0.Add(time.Second)}, "photocraft")); err != nil {
		t.Fatal(err)
	}
	if got, _ := s.Refreshes(ctx, []string{"photocraft"}); !got["photocraft"].At.Equal(t0.Add(time.Second)) || got["photocraft"].Tag != "" {
		t.Errorf("after a second delivery got %+v, want t0+1s with no tag", got["photocraft"])
	}

	if _, err := s.Deliver(ctx, []string{"guid-3"}, each(release.Refresh{}, "photocraft")); err == nil {
		t.Error("a request without a time: no error")
	}
	if _, err := s.Deliver(ctx, nil, each(release.Refresh{At: t0}, "photocraft")); err == nil {
		t.Error("a delivery without an id: no error")
	}
	// A user that may SET and DEL but not HSET: the delivery ids are stored,
	// the requests refused, and the ids forgotten, or a redelivery would be
	// a duplicate.
	noHSET := newStore(t, userURL(t, o.srv, "api", "~*", "&*", "+@all", "-hset"))
	if _, err := noHSET.Deliver(ctx, []string{"guid-9", "sha256-99"}, each(release.Refresh{At: t0}, "photocraft")); err == nil {
		t.Fatal("Deliver without HSET: no error")
	}
	if n, _ := a.do("EXISTS", DeliveryKey("guid-9"), DeliveryKey("sha256-99")).AsInt64(); n != 0 {
		t.Error("the delivery's keys stayed although its request was not recorded")
	}
}

func TestDecodeRefresh(t *testing.T) {
	t.Parallel()
	now := time.UnixMilli(1790000000000)
	for name, tt := range map[string]struct {
		h  map[string]string
		ok bool
	}{
		"readable":                    {map[string]string{"v": "1", "at_ms": "1790000000000", "tag": "v1"}, true},
		"no tag":                      {map[string]string{"v": "1", "at_ms": "1790000000000"}, true},
		"no key":                      {nil, false},
		"another version":             {map[string]string{"v": "2", "at_ms": "1790000000000"}, false},
		"a time that is not a number": {map[string]string{"v": "1", "at_ms": "soon"}, false},
		"a zero time":                 {map[string]string{"v": "1", "at_ms": "0"}, false},
		"30 s ahead":                  {map[string]string{"v": "1", "at_ms": "1790000030000"}, true},
		"an hour ahead":               {map[string]string{"v": "1", "at_ms": "1790003600000"}, false},
	} {
		if _, ok := DecodeRefresh(tt.h, now); ok != tt.ok {
			t.Errorf("%s: ok %v, want %v", name, ok, tt.ok)
		}
	}
}

// TestOversizedRefreshIsNotRead: a refresh request with a field over its
// bound (the API pods' user may write these keys) is ignored from its length
// alone, reading a few bytes, not the value; each read of it is counted and
// the first logged. A field no request has is never read, and a key of
// another type reads as no request.
func TestOversizedRefreshIsNotRead(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	a := newAdmin(t, srv)
	log, logs := observed()
	counted := map[string]int{}
	s := newStore(t, pollerURL(t, srv), WithRefusals(NewRefusals(log, func(app string) { counted[app]++ })))
	ctx := context.Background()
	big := strings.Repeat("v", 16<<20)
	tests := []struct {
		name  string
		field string // the field of 16 MiB; "" for a key of another type
		want  bool   // the request is read
	}{{"v", "v", false}, {"at_ms", "at_ms", false}, {"tag", "tag", false}, {"by", "by", false}, {"a field no request has", "junk", true}, {"a key of another type", "", false}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// A writer of its own: a refusal is logged once per writer.
			a.seed(srv, RefreshKey("photocraft"), tt.field == "", []string{"v", "1", "at_ms", ms(t0), "tag", "v1", "by", "intruder-" + tt.name})
			if tt.field != "" {
				a.hset(RefreshKey("photocraft"), tt.field, big)
			}
			a.hset(RefreshKey("filmcraft"), "v", "1", "at_ms", ms(t0), "tag", "v2")
			logs.TakeAll()
			clear(counted)
			for range 3 {
				sent := netOutput(t, srv)
				got := must(s.Refreshes(ctx, []string{"photocraft", "filmcraft"}))(t)
				n := netOutput(t, srv) - sent
				t.Logf("Redis sent %d bytes for one read of both requests", n)
				if n > 64<<10 {
					t.Fatalf("Redis sent %d bytes to read two requests, want a few KiB: the value was read", n)
				}
				if _, ok := got["photocraft"]; ok != tt.want {
					t.Errorf("photocraft's request read %v, want %v", ok, tt.want)
				}
				if got["filmcraft"].Tag != "v2" {
					t.Errorf("filmcraft's request: got %+v, want its tag v2", got["filmcraft"])
				}
			}
			over := !tt.want && tt.field != ""
			if want := map[bool]int{true: 3}[over]; counted["photocraft"] != want || len(counted) > 1 {
				t.Errorf("counted %v, want %d for photocraft", counted, want)
			}
			if got, want := logs.FilterMessage("redis refresh request refused, ignoring it").FilterField(zap.String("app", "photocraft")).Len(), map[bool]int{true: 1}[over]; got != want {
				t.Errorf("logged the refusal %d times, want %d", got, want)
			}
		})
	}
	noDenials(t, srv)
}

// watcher runs st.WatchRefreshes for apps until stop, which checks that it
// returned nil; seen returns the last request fn was given for an app.
type watcher struct {
	mu   sync.Mutex
	got  map[string]release.Refresh
	stop func()
}

func watch(t *testing.T, st *Store, apps ...string) *watcher {
	t.Helper()
	w := &watcher{got: map[string]release.Refresh{}}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- st.WatchRefreshes(ctx, apps, func(app string, r release.Refresh) {
			w.mu.Lock()
			defer w.mu.Unlock()
			w.got[app] = r
		}, func(err error) { t.Errorf("watch: %v", err) })
	}()
	var once sync.Once
	w.stop = func() {
		once.Do(func() {
			cancel()
			if err := <-done; err != nil {
				t.Errorf("WatchRefreshes returned %v, want nil", err)
			}
		})
	}
	t.Cleanup(w.stop)
	return w
}

func (w *watcher) seen(app string) (release.Refresh, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	r, ok := w.got[app]
	return r, ok
}

// TestWatchRefreshes: requests recorded before the watch and announced
// after it reach fn, for the apps it watches only; the webhook writes them as
// APIACL's user and the pollers watch as PollerACL's, with nothing in the
// ACL LOG.
func TestWatchRefreshes(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	srv.MustDo(SetUser("craft-api", "api-pw", APIACL)...)
	srv.MustDo(SetUser("craft-poller", "poller-pw", PollerACL)...)
	api := newStore(t, "redis://craft-api:api-pw@"+srv.Addr)
	poller := newStore(t, "redis://craft-poller:poller-pw@"+srv.Addr)
	ctx := context.Background()
	if _, err := api.Deliver(ctx, []string{"before"}, each(release.Refresh{At: t0, Tag: "v1"}, "photocraft")); err != nil {
		t.Fatal(err)
	}
	w := watch(t, poller, "photocraft", "vectorcraft")
	has := func(app string, at time.Time) func() bool {
		return func() bool { r, _ := w.seen(app); return r.At.Equal(at) }
	}
	testkit.Eventually(t, "the request recorded before the watch is seen", has("photocraft", t0))
	// Until the subscription is made, a request may wait for the rescan;
	// keep delivering until one is seen.
	testkit.Eventually(t, "a request announced later is seen", func() bool {
		at := time.Now().Truncate(time.Millisecond)
		first, err := api.Deliver(ctx, []string{at.String(), "sha256-" + at.String()}, each(release.Refresh{At: at}, "vectorcraft", "filmcraft"))
		if err != nil || !first {
			t.Fatalf("Deliver as craft-api: new %v, %v", first, err)
		}
		time.Sleep(50 * time.Millisecond)
		return has("vectorcraft", at)()
	})
	if _, ok := w.seen("filmcraft"); ok {
		t.Error("an app the watcher was not given reached fn")
	}
	w.stop()
	noDenials(t, srv)
}

// TestWatchRefreshesRescans: a request whose announcement was lost (written
// without a PUBLISH) is found by the rescan, every 10 s of the Store's clock,
// and not before.
func TestWatchRefreshesRescans(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	fc := fakeclock.New(t0)
	w := watch(t, newStore(t, srv.URL(), WithClock(fc)), "photocraft")
	testkit.Eventually(t, "the first scan, then the wait for the rescan", func() bool { return fc.Waiters() >= 1 })
	srv.MustDo("HSET", RefreshKey("photocraft"), "v", "1", "at_ms", strconv.FormatInt(t0.UnixMilli(), 10), "tag", "v2")
	has := func() bool { r, _ := w.seen("photocraft"); return r.Tag == "v2" }
	fc.Advance(rescan - time.Millisecond)
	if testkit.Within(200*time.Millisecond, has) {
		t.Fatal("the request was read before the rescan was due")
	}
	fc.Advance(time.Millisecond)
	testkit.Eventually(t, "the rescan finds the request", has)
	w.stop()
}
