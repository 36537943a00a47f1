package hydrate_test

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/storytold/craft-releases/pkg/redis"
	"github.com/storytold/craft-releases/pkg/redis/hydrate"
	"github.com/storytold/craft-releases/pkg/redis/store"
	"github.com/storytold/craft-releases/pkg/release"
	"github.com/storytold/craft-releases/test/redistest"
	"github.com/storytold/craft-releases/test/testkit"
)

// metaSink records every meta it is given, by its one announcement's title.
type metaSink struct {
	mu  sync.Mutex
	got []string
}

func (s *metaSink) SetMeta(m release.Bulletin) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.got = append(s.got, title(m))
}

func (s *metaSink) calls() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.got...)
}

// title is the title of m's first announcement, "" for none.
func title(m release.Bulletin) string {
	if len(m.Notices.Announcements) == 0 {
		return ""
	}
	return m.Notices.Announcements[0].Title
}

func announcing(title string) release.Bulletin {
	return release.Bulletin{Notices: release.Notices{Announcements: []release.Announcement{{Title: title}}}}
}

// publisher writes the meta hash as a poller does.
func publisher(t testing.TB, srv *redistest.Server) *store.Store {
	t.Helper()
	c, err := redis.OpenURL(srv.URL())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return store.New(c, "poller-a", nil)
}

func putMeta(t testing.TB, s *store.Store, m release.Bulletin, at time.Time) {
	t.Helper()
	if ok, err := s.PutMeta(context.Background(), m, at); err != nil || !ok {
		t.Fatalf("PutMeta(%q, %v) = %v, %v; want written", title(m), at, ok, err)
	}
}

// TestMetaLoad: the first load reads the meta hash only with WithMeta, and
// gives the sink the meta it finds, if any; with no apps it is the only read.
func TestMetaLoad(t *testing.T) {
	t.Parallel()
	published := func(t testing.TB, srv *redistest.Server) { putMeta(t, publisher(t, srv), announcing("hello"), base) }
	tests := []struct {
		name   string
		apps   []release.App
		noMeta bool // started without WithMeta
		setup  func(t testing.TB, srv *redistest.Server)
		want   []string // titles given to the meta sink by the first load
	}{
		{name: "a published meta", apps: testApps, setup: published, want: []string{"hello"}},
		{name: "a published meta and no apps", setup: published, want: []string{"hello"}},
		{name: "no meta: no MySQL anywhere", apps: testApps, setup: func(testing.TB, *redistest.Server) {}},
		{name: "an unreadable meta", apps: testApps, setup: func(t testing.TB, srv *redistest.Server) {
			srv.MustDo("HSET", store.MetaKey, "v", "1", "read_ms", ms(base), "app_renames", "[]", "repo_renames", "[]", "announcements", "{", "alerts", "[]")
		}},
		{name: "without WithMeta, not read", apps: testApps, noMeta: true, setup: published},
		{name: "without WithMeta and no apps", noMeta: true, setup: func(testing.TB, *redistest.Server) {}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := redistest.Start(t)
			tt.setup(t, srv)
			sink, opts, reads := new(metaSink), []hydrate.Option{quiet}, len(tt.apps)
			if !tt.noMeta {
				opts, reads = append(opts, hydrate.WithMeta(sink)), reads+1
			}
			hs := startApps(t, srv.URL(), tt.apps, opts...)
			hs.waitLoaded(t)
			if got := sink.calls(); !slices.Equal(got, tt.want) {
				t.Errorf("meta sink after the first load got %q, want %q", got, tt.want)
			}
			if st := hs.h.Counts(); st.Reads != uint64(reads) || st.Metas != uint64(len(tt.want)) {
				t.Errorf("Stats() = %+v; want %d reads (the apps, and the meta with WithMeta), %d metas", st, reads, len(tt.want))
			}
			if _, calls := hs.sink.state(); calls != 0 {
				t.Errorf("SetAll calls = %d, want 0: no app has a hash", calls)
			}
		})
	}
}

// TestMetaNeverGoesBack: the sink gets a meta only when it is newer than the
// last one; an older, unreadable or deleted hash changes nothing.
func TestMetaNeverGoesBack(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	pub := publisher(t, srv)
	putMeta(t, pub, announcing("v1"), base)
	sink := new(metaSink)
	hs := start(t, srv.URL(), quiet, hydrate.WithMeta(sink))
	hs.waitLoaded(t)
	testkit.Eventually(t, "the first meta", func() bool { return len(sink.calls()) >= 1 })

	steps := []struct {
		name  string
		write func()
		want  []string // every meta the sink got so far
	}{
		{"a newer read", func() { putMeta(t, pub, announcing("v2"), base.Add(time.Minute)) }, []string{"v1", "v2"}},
		{"an older read written over the guard", func() { srv.MustDo("HSET", store.MetaKey, "read_ms", ms(base), "announcements", `[{"title":"old"}]`) }, []string{"v1", "v2"}},
		{"the hash deleted", func() { srv.MustDo("DEL", store.MetaKey) }, []string{"v1", "v2"}},
		{"a newer read again", func() { putMeta(t, pub, announcing("v3"), base.Add(2*time.Minute)) }, []string{"v1", "v2", "v3"}},
		{"an empty newer read", func() { putMeta(t, pub, release.Bulletin{}, base.Add(3*time.Minute)) }, []string{"v1", "v2", "v3", ""}},
	}
	for _, st := range steps {
		before := hs.h.Counts().Reads
		st.write()
		// Each write reaches the Hydrator as an invalidation, and the
		// re-read it causes is the only read: the safety net is an hour away.
		// A meta given by mistake after this wait shows in the next step
		// that waits for a call, since every step compares every call.
		testkit.Eventually(t, "the re-read after "+st.name, func() bool { return hs.h.Counts().Reads > before })
		testkit.Eventually(t, st.name+" given to the sink", func() bool { return len(sink.calls()) >= len(st.want) })
		if got := sink.calls(); !slices.Equal(got, st.want) {
			t.Errorf("%s: sink got %q, want %q", st.name, got, st.want)
		}
	}
}
