package store

import (
	"context"
	"fmt"
	"maps"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/storytold/craft-releases/pkg/redis"
	"github.com/storytold/craft-releases/pkg/release"
	"github.com/storytold/craft-releases/test/fakeclock"
	"github.com/storytold/craft-releases/test/redistest"
	"github.com/storytold/craft-releases/test/testkit"
)

// A topology is a way of running Redis.
type topology struct {
	name  string
	start func(t testing.TB) *redistest.Server
}

var topologies = []topology{
	{"standalone", func(t testing.TB) *redistest.Server { return redistest.Start(t) }},
	{"cluster", startCluster},
}

// startCluster starts a one-node Redis Cluster that serves every slot, so
// that the client routes by key slot as on a real cluster.
func startCluster(t testing.TB) *redistest.Server {
	t.Helper()
	srv := redistest.Start(t, "--cluster-enabled", "yes")
	// A pooled node serves its slots already.
	if info, err := srv.Query("CLUSTER", "INFO"); err != nil || !strings.Contains(fmt.Sprint(info), "cluster_slots_assigned:16384") {
		srv.MustDo("CLUSTER", "ADDSLOTSRANGE", "0", "16383")
	}
	testkit.Eventually(t, "the cluster to serve its slots", func() bool {
		_, err := srv.Do("SET", "probe", "1")
		return err == nil
	})
	srv.MustDo("DEL", "probe")
	return srv
}

// TestSequence is the sequence of docs/redis.md that must hold against a real
// Redis, on each path and topology.
func TestSequence(t *testing.T) {
	t.Parallel()
	for _, top := range topologies {
		for _, p := range paths {
			t.Run(top.name+"/"+p.name, func(t *testing.T) {
				srv := top.start(t)
				a := newAdmin(t, srv)
				s := newStore(t, p.url(t, srv))
				ctx := context.Background()
				const app = "photocraft"
				key := AppKey(app)
				v2, v3 := rel("v0.2.0"), rel("v0.3.0")

				claim := func(when time.Time) func() (bool, error) {
					return func() (bool, error) { return s.Claim(ctx, app, when, time.Minute) }
				}
				put := func(f func(context.Context, string, release.Entry) (bool, error), e release.Entry) func() (bool, error) {
					return func() (bool, error) { return f(ctx, app, e) }
				}
				failure := func(when time.Time, n int) release.Entry {
					return release.Entry{FailedAt: when, Failures: n}
				}
				c0, c2 := release.Entry{ClaimedAt: t0}, release.Entry{ClaimedAt: t0.Add(2 * time.Minute)}
				steps := []struct {
					name   string
					tamper []string // HSET pairs an outsider writes first
					do     func() (bool, error)
					want   bool
					after  release.Entry
				}{
					{name: "claim at t0 written", do: claim(t0), want: true, after: c0},
					{name: "claim at t0+5s refused", do: claim(t0.Add(5 * time.Second)), after: c0},
					{name: "claim at t0+2min written", do: claim(t0.Add(2 * time.Minute)), want: true, after: c2},
					{name: "fetch 12:02 e2 written", do: put(s.PutFetch, fetch(at("12:02"), `"e2"`, v2)), want: true,
						after: c2.Merge(fetch(at("12:02"), `"e2"`, v2), t0)},
					{name: "fetch 12:01 e1 refused", do: put(s.PutFetch, fetch(at("12:01"), `"e1"`, rel("v0.1.0"))),
						after: c2.Merge(fetch(at("12:02"), `"e2"`, v2), t0)},
					{name: "304 e1 at 12:03 refused (stale etag)", do: put(s.PutNotModified, fetch(at("12:03"), `"e1"`, rel("v0.1.0"))),
						after: c2.Merge(fetch(at("12:02"), `"e2"`, v2), t0)},
					{name: "304 e2 at 12:01 refused (older)", do: put(s.PutNotModified, fetch(at("12:01"), `"e2"`, v2)),
						after: c2.Merge(fetch(at("12:02"), `"e2"`, v2), t0)},
					{name: "304 e2 at 12:03 written", do: put(s.PutNotModified, fetch(at("12:03"), `"e2"`, v2)), want: true,
						after: c2.Merge(fetch(at("12:03"), `"e2"`, v2), t0)},
					{name: "failure 12:05 (2 in a row) written", do: put(s.PutFailure, failure(at("12:05"), 2)), want: true,
						after: c2.Merge(fetch(at("12:03"), `"e2"`, v2), t0).Merge(failure(at("12:05"), 2), t0)},
					{name: "failure 12:04 refused", do: put(s.PutFailure, failure(at("12:04"), 3)),
						after: c2.Merge(fetch(at("12:03"), `"e2"`, v2), t0).Merge(failure(at("12:05"), 2), t0)},
					{name: "unreadable release reads with no fetch",
						tamper: []string{"v", "1", "fetched_ms", ms(at("12:30")), "release", "{"},
						after:  c2.Merge(failure(at("12:05"), 2), t0)},
					{name: "and is overwritten by the next fetch", do: put(s.PutFetch, fetch(at("12:10"), `"e3"`, v3)), want: true,
						after: c2.Merge(failure(at("12:05"), 2), t0).Merge(fetch(at("12:10"), `"e3"`, v3), t0)},
				}
				for _, st := range steps {
					if st.tamper != nil {
						a.hset(key, st.tamper...)
					}
					if st.do != nil {
						got, err := st.do()
						if err != nil {
							t.Fatalf("%s: %v", st.name, err)
						}
						if got != st.want {
							t.Errorf("%s: got written=%v, want %v", st.name, got, st.want)
						}
					}
					e, _, err := s.LoadApp(ctx, app)
					if err != nil {
						t.Fatalf("%s: LoadApp: %v", st.name, err)
					}
					if !sameEntry(t, e, st.after) {
						t.Errorf("%s: entry is\n%s\nwant\n%s", st.name, fmtEntry(e), fmtEntry(st.after))
					}
				}
				if ttl := a.pttl(key); ttl <= 6*24*time.Hour {
					t.Errorf("TTL after a write = %v, want over 6 days", ttl)
				}

				if got := s.Mode(); got != p.mode {
					t.Errorf("Mode() = %v, want %v", got, p.mode)
				}
				scripts, execs := a.calls("evalsha")+a.calls("eval"), a.calls("exec")
				switch p.mode {
				case ModeScript:
					if scripts == 0 || execs != 0 {
						t.Errorf("Redis ran %d scripts and %d EXECs, want scripts only", scripts, execs)
					}
				case ModeWatch:
					if scripts != 0 || execs == 0 {
						t.Errorf("Redis ran %d scripts and %d EXECs, want EXECs only", scripts, execs)
					}
				}
			})
		}
	}
}

// TestRepublish covers a 304 whose guarded write is refused: the whole entry
// is republished only when the shared entry holds no readable fetch.
func TestRepublish(t *testing.T) {
	t.Parallel()
	const app = "photocraft"
	key := AppKey(app)
	v2 := rel("v0.2.0")
	v2JSON, err := release.Marshal(v2)
	if err != nil {
		t.Fatal(err)
	}
	mine := fetch(at("12:03"), `"e2"`, v2)
	republished := map[string]string{"v": "1", "fetched_ms": ms(at("12:03")), "etag": `"e2"`,
		"release": string(v2JSON), "by": "poller-a"}

	tests := []struct {
		name    string
		shared  func(a *admin, srv *redistest.Server) // what Redis holds before the 304
		want    bool
		wantRaw map[string]string // nil: the hash must be left as it was
	}{
		{"flushed", func(a *admin, srv *redistest.Server) {
			a.hset(key, "v", "1", "fetched_ms", ms(at("12:02")), "etag", `"e2"`, "release", string(v2JSON))
			srv.MustDo("FLUSHALL")
		}, true, republished},
		{"unreadable release", func(a *admin, _ *redistest.Server) {
			a.hset(key, "v", "1", "fetched_ms", ms(at("12:02")), "etag", `"e2"`, "release", `{"tag":`)
		}, true, republished},
		{"no etag field", func(a *admin, _ *redistest.Server) {
			a.hset(key, "v", "1", "fetched_ms", ms(at("12:02")), "release", string(v2JSON))
		}, true, republished},
		{"another format version", func(a *admin, _ *redistest.Server) {
			a.hset(key, "v", "2", "fetched_ms", ms(at("12:09")), "etag", `"e2"`, "release", string(v2JSON), "shard", "7")
		}, true, republished},
		{"not a hash", func(a *admin, _ *redistest.Server) {
			a.do("SET", key, "garbage")
		}, true, republished},
		{"a claim only", func(a *admin, _ *redistest.Server) {
			a.hset(key, "v", "1", "claimed_ms", ms(at("12:03")), "by", "poller-b")
		}, true, map[string]string{"v": "1", "claimed_ms": ms(at("12:03")), "fetched_ms": ms(at("12:03")),
			"etag": `"e2"`, "release": string(v2JSON), "by": "poller-a"}},
		{"a different etag", func(a *admin, _ *redistest.Server) {
			a.hset(key, "v", "1", "fetched_ms", ms(at("12:02")), "etag", `"e9"`, "release", "null", "by", "poller-b")
		}, false, nil},
		{"a newer fetch", func(a *admin, _ *redistest.Server) {
			a.hset(key, "v", "1", "fetched_ms", ms(at("12:04")), "etag", `"e2"`, "release", string(v2JSON), "by", "poller-b")
		}, false, nil},
	}
	for _, p := range paths {
		t.Run(p.name, func(t *testing.T) {
			srv := redistest.Start(t)
			a := newAdmin(t, srv)
			s := newStore(t, p.url(t, srv))
			for _, tt := range tests {
				srv.MustDo("FLUSHALL")
				tt.shared(a, srv)
				before := a.hgetall(key)
				got, err := s.PutNotModified(context.Background(), app, mine)
				if err != nil {
					t.Fatalf("%s: PutNotModified: %v", tt.name, err)
				}
				if got != tt.want {
					t.Errorf("%s: got written=%v, want %v", tt.name, got, tt.want)
				}
				want := tt.wantRaw
				if want == nil {
					want = before
				}
				if raw := a.hgetall(key); !maps.Equal(raw, want) {
					t.Errorf("%s: hash is %v, want %v", tt.name, raw, want)
				}
			}
			if got := s.Mode(); got != p.mode {
				t.Errorf("Mode() = %v, want %v", got, p.mode)
			}
		})
	}
}

// TestNotModifiedWithoutETag: with no ETag there is nothing to guard by, so
// nothing is written, not even a republish.
func TestNotModifiedWithoutETag(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	a := newAdmin(t, srv)
	s := newStore(t, srv.URL())
	got, err := s.PutNotModified(context.Background(), "photocraft", fetch(at("12:03"), "", nil))
	if err != nil || got {
		t.Errorf("PutNotModified with no ETag = %v, %v; want false, nil", got, err)
	}
	if raw := a.hgetall(AppKey("photocraft")); len(raw) != 0 {
		t.Errorf("hash is %v, want nothing written", raw)
	}
}

// TestWritesByKind checks the fields each kind of write sets, that a write of
// a hash of another format or type replaces it whole, and the TTL: renewed by
// every write that goes through and by no refused one.
func TestWritesByKind(t *testing.T) {
	t.Parallel()
	const app = "photocraft"
	key := AppKey(app)
	v2 := rel("v0.2.0")
	v2JSON, err := release.Marshal(v2)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	fetched := []string{"v", "1", "fetched_ms", ms(at("12:02")), "etag", `"e2"`, "release", string(v2JSON),
		"failed_ms", ms(at("12:01")), "failures", "3", "claimed_ms", ms(at("12:00")), "by", "poller-b"}

	tests := []struct {
		name   string
		before []string // HSET pairs; nil: no key
		wrong  bool     // the key holds a string instead
		do     func(s *Store) (bool, error)
		want   bool
		after  map[string]string // the whole hash afterwards
	}{
		{name: "claim", do: func(s *Store) (bool, error) { return s.Claim(ctx, app, at("12:00"), time.Minute) },
			want: true, after: map[string]string{"v": "1", "claimed_ms": ms(at("12:00")), "by": "poller-a"}},
		{name: "fetch", do: func(s *Store) (bool, error) { return s.PutFetch(ctx, app, fetch(at("12:02"), `"e2"`, v2)) },
			want: true, after: map[string]string{"v": "1", "fetched_ms": ms(at("12:02")), "etag": `"e2"`,
				"release": string(v2JSON), "by": "poller-a"}},
		{name: "fetch of no release", do: func(s *Store) (bool, error) { return s.PutFetch(ctx, app, fetch(at("12:02"), "", nil)) },
			want: true, after: map[string]string{"v": "1", "fetched_ms": ms(at("12:02")), "etag": "",
				"release": "null", "by": "poller-a"}},
		{name: "failure", do: func(s *Store) (bool, error) {
			return s.PutFailure(ctx, app, release.Entry{FailedAt: at("12:05"), Failures: 2})
		}, want: true, after: map[string]string{"v": "1", "failed_ms": ms(at("12:05")), "failures": "2",
			"notfound_since_ms": "0", "notfound": "0", "by": "poller-a"}},
		{name: "failure in a run of 404s", do: func(s *Store) (bool, error) {
			return s.PutFailure(ctx, app, release.Entry{FailedAt: at("12:05"), Failures: 3, NotFoundSince: at("12:01"), NotFound: 2})
		}, want: true, after: map[string]string{"v": "1", "failed_ms": ms(at("12:05")), "failures": "3",
			"notfound_since_ms": ms(at("12:01")), "notfound": "2", "by": "poller-a"}},
		{name: "failure counts at least one", do: func(s *Store) (bool, error) {
			return s.PutFailure(ctx, app, release.Entry{FailedAt: at("12:05")})
		}, want: true, after: map[string]string{"v": "1", "failed_ms": ms(at("12:05")), "failures": "1",
			"notfound_since_ms": "0", "notfound": "0", "by": "poller-a"}},
		{name: "304 moves only the fetch time", before: fetched,
			do:   func(s *Store) (bool, error) { return s.PutNotModified(ctx, app, fetch(at("12:03"), `"e2"`, rel("v9"))) },
			want: true, after: map[string]string{"v": "1", "fetched_ms": ms(at("12:03")), "etag": `"e2"`,
				"release": string(v2JSON), "failed_ms": ms(at("12:01")), "failures": "3",
				"claimed_ms": ms(at("12:00")), "by": "poller-a"}},
		{name: "claim over another format", before: []string{"v", "2", "claimed_ms", ms(at("13:00")), "shard", "7"},
			do:   func(s *Store) (bool, error) { return s.Claim(ctx, app, at("12:00"), time.Minute) },
			want: true, after: map[string]string{"v": "1", "claimed_ms": ms(at("12:00")), "by": "poller-a"}},
		{name: "failure over a hash without a version", before: []string{"fetched_ms", ms(at("12:02")), "etag", "x"},
			do: func(s *Store) (bool, error) {
				return s.PutFailure(ctx, app, release.Entry{FailedAt: at("12:05"), Failures: 1})
			}, want: true, after: map[string]string{"v": "1", "failed_ms": ms(at("12:05")), "failures": "1",
				"notfound_since_ms": "0", "notfound": "0", "by": "poller-a"}},
		{name: "fetch over a string", wrong: true,
			do:   func(s *Store) (bool, error) { return s.PutFetch(ctx, app, fetch(at("12:02"), "", nil)) },
			want: true, after: map[string]string{"v": "1", "fetched_ms": ms(at("12:02")), "etag": "",
				"release": "null", "by": "poller-a"}},
		{name: "refused claim", before: []string{"v", "1", "claimed_ms", ms(at("12:00")), "by", "poller-b"},
			do:    func(s *Store) (bool, error) { return s.Claim(ctx, app, at("12:00").Add(time.Second), time.Minute) },
			after: map[string]string{"v": "1", "claimed_ms": ms(at("12:00")), "by": "poller-b"}},
	}
	for _, p := range paths {
		t.Run(p.name, func(t *testing.T) {
			srv := redistest.Start(t)
			a := newAdmin(t, srv)
			s := newStore(t, p.url(t, srv))
			for _, tt := range tests {
				a.seed(srv, key, tt.wrong, tt.before)
				// A short TTL shows whether the write renewed it.
				const short = 100 * time.Second
				if tt.wrong || tt.before != nil {
					a.do("PEXPIRE", key, strconv.FormatInt(short.Milliseconds(), 10))
				}
				got, err := tt.do(s)
				if err != nil {
					t.Fatalf("%s: %v", tt.name, err)
				}
				if got != tt.want {
					t.Errorf("%s: got written=%v, want %v", tt.name, got, tt.want)
				}
				if raw := a.hgetall(key); !maps.Equal(raw, tt.after) {
					t.Errorf("%s: hash is %v, want %v", tt.name, raw, tt.after)
				}
				ttl := a.pttl(key)
				switch {
				case tt.want && ttl <= 6*24*time.Hour:
					t.Errorf("%s: TTL after the write = %v, want over 6 days", tt.name, ttl)
				case !tt.want && ttl > short:
					t.Errorf("%s: TTL after a refused write = %v, want it left at most %v", tt.name, ttl, short)
				}
			}
		})
	}
}

// TestWriteWithoutTime: a write must say when it happened.
func TestWriteWithoutTime(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	a := newAdmin(t, srv)
	s := newStore(t, srv.URL())
	ctx := context.Background()
	tests := []struct {
		name string
		do   func() (bool, error)
	}{
		{"claim", func() (bool, error) { return s.Claim(ctx, "photocraft", time.Time{}, time.Minute) }},
		{"fetch", func() (bool, error) { return s.PutFetch(ctx, "photocraft", fetch(time.Time{}, `"e"`, nil)) }},
		{"304", func() (bool, error) { return s.PutNotModified(ctx, "photocraft", fetch(time.Time{}, `"e"`, nil)) }},
		{"failure", func() (bool, error) { return s.PutFailure(ctx, "photocraft", release.Entry{Failures: 1}) }},
	}
	for _, tt := range tests {
		if got, err := tt.do(); err == nil || got {
			t.Errorf("%s with a zero time = %v, %v; want false and an error", tt.name, got, err)
		}
	}
	if raw := a.hgetall(AppKey("photocraft")); len(raw) != 0 {
		t.Errorf("hash is %v, want nothing written", raw)
	}
}

// TestDecide runs one table of hashes and writes through decide and through
// both real paths: the script and WATCH/MULTI/EXEC must decide alike.
func TestDecide(t *testing.T) {
	t.Parallel()
	noon := at("12:00")
	// The writer's clock: every time of the table's hashes is in its past,
	// but for the ones an hour or more ahead.
	s := New(nil, "poller-a", testApps, WithClock(fakeclock.New(noon.Add(time.Minute))))
	relJSON, err := release.Marshal(rel("v1.0.0"))
	if err != nil {
		t.Fatal(err)
	}
	readable := func(when time.Time, etag string) map[string]string {
		return map[string]string{"v": "1", "fetched_ms": ms(when), "etag": etag, "release": string(relJSON)}
	}
	with := func(h map[string]string, kv ...string) map[string]string {
		h = maps.Clone(h)
		for i := 0; i+1 < len(kv); i += 2 {
			if kv[i+1] == "<del>" {
				delete(h, kv[i])
			} else {
				h[kv[i]] = kv[i+1]
			}
		}
		return h
	}
	mustFetch := func(e release.Entry) write {
		w, err := s.fetchWrite("photocraft", e)
		if err != nil {
			t.Fatal(err)
		}
		return s.of("photocraft", w)
	}
	claim := func(when time.Time) write { return s.of("photocraft", s.claimWrite(when, time.Minute)) }
	claimedAt := func(v string) map[string]string { return map[string]string{"v": "1", "claimed_ms": v} }
	notMod := func(when time.Time, etag string) write {
		return s.of("photocraft", s.notModifiedWrite(fetch(when, etag, nil)))
	}
	failure := func(when time.Time) write {
		return s.of("photocraft", s.failureWrite(release.Entry{FailedAt: when, Failures: 1}))
	}
	meta := func(when time.Time) write {
		w, err := s.metaWrite(testMeta(), when)
		if err != nil {
			t.Fatal(err)
		}
		return w
	}
	readableMeta := func(when time.Time) map[string]string {
		return map[string]string{"v": "1", "read_ms": ms(when), "app_renames": "[]", "repo_renames": "[]",
			"announcements": ` [{"title":"t","body":"b","created_at":null}]`, "alerts": "[null]"}
	}
	metaOlder := meta(noon.Add(-time.Hour))
	older := mustFetch(fetch(noon.Add(-time.Hour), "b", nil))
	foreign := func(rel string) map[string]string { return with(readable(noon, "a"), "release", rel) }
	leap := rel("v1.0.0")
	leap.PublishedAt = release.NewTime(time.Date(2024, 2, 29, 0, 0, 0, 0, time.UTC))
	leapJSON, err := release.Marshal(leap)
	if err != nil {
		t.Fatal(err)
	}
	leapDay := string(leapJSON)

	tests := []struct {
		name  string
		hash  map[string]string // nil: no key
		wrong bool              // the key holds a string
		w     write
		want  verdict
	}{
		{"claim of no key", nil, false, claim(noon), written},
		{"claim within the window", claimedAt(ms(noon)), false, claim(noon.Add(59 * time.Second)), refusedTime},
		{"claim at the window's end", claimedAt(ms(noon)), false, claim(noon.Add(time.Minute)), written},
		{"claim before a newer claim", claimedAt(ms(noon)), false, claim(noon.Add(-time.Hour)), refusedTime},
		{"claim over another format", with(claimedAt(ms(noon)), "v", "2"), false, claim(noon), written},
		{"claim over no version", with(claimedAt(ms(noon)), "v", "<del>"), false, claim(noon), written},
		{"claim over a string", nil, true, claim(noon), written},
		{"claimed_ms not a number", claimedAt("soon"), false, claim(noon), written},
		{"claimed_ms zero", claimedAt("0"), false, claim(noon), written},
		{"claimed_ms negative", claimedAt("-" + ms(noon)), false, claim(noon), written},
		{"claimed_ms with a plus", claimedAt("+" + ms(noon)), false, claim(noon), written},
		{"claimed_ms with a space", claimedAt(" " + ms(noon)), false, claim(noon), written},
		{"claimed_ms with a fraction", claimedAt(ms(noon) + ".0"), false, claim(noon), written},
		{"claimed_ms of 19 digits", claimedAt("1000000000000000000"), false, claim(noon), written},
		{"claimed_ms of 18 digits, far ahead", claimedAt("100000000000000000"), false, claim(noon), written},
		{"claim before a claim an hour ahead", claimedAt(ms(noon.Add(time.Hour))), false, claim(noon.Add(time.Minute)), written},
		{"claim before a claim within the margin", claimedAt(ms(noon.Add(time.Minute + release.MaxSkew))), false, claim(noon.Add(time.Minute)), refusedTime},
		{"claimed_ms with leading zeros", claimedAt("0" + ms(noon)), false, claim(noon), refusedTime},

		{"fetch at the same time", readable(noon, "a"), false, mustFetch(fetch(noon, "b", nil)), written},
		{"fetch older than a readable fetch", readable(noon, "a"), false, mustFetch(fetch(noon.Add(-time.Second), "b", nil)), refusedTime},
		{"fetch older than a fetch of no release", with(readable(noon, ""), "release", "null"), false,
			mustFetch(fetch(noon.Add(-time.Second), "b", nil)), refusedTime},
		{"fetch older than an unreadable release", with(readable(noon, "a"), "release", "{"), false,
			mustFetch(fetch(noon.Add(-time.Hour), "b", nil)), written},
		{"fetch older than an empty release", with(readable(noon, "a"), "release", ""), false,
			mustFetch(fetch(noon.Add(-time.Hour), "b", nil)), written},
		{"fetch older than a release with no tag", with(readable(noon, "a"), "release", `{"tag":""}`), false,
			mustFetch(fetch(noon.Add(-time.Hour), "b", nil)), written},
		{"fetch older than a release of the wrong shape", with(readable(noon, "a"), "release", `{"tag":"v1","prerelease":"yes"}`), false,
			mustFetch(fetch(noon.Add(-time.Hour), "b", nil)), written},
		{"fetch older than a release array", with(readable(noon, "a"), "release", `[{"tag":"v1"}]`), false,
			mustFetch(fetch(noon.Add(-time.Hour), "b", nil)), written},
		{"fetch older than a release with a bad time", with(readable(noon, "a"), "release", `{"tag":"v1","published_at":"yesterday"}`), false,
			mustFetch(fetch(noon.Add(-time.Hour), "b", nil)), written},
		{"fetch older than a release with assets as an object", with(readable(noon, "a"), "release", `{"tag":"v1","assets":{"a":1}}`), false,
			mustFetch(fetch(noon.Add(-time.Hour), "b", nil)), written},
		{"fetch older than a release with a bad asset", with(readable(noon, "a"), "release", `{"tag":"v1","assets":[{"size_bytes":"7"}]}`), false,
			mustFetch(fetch(noon.Add(-time.Hour), "b", nil)), written},
		{"fetch older than a release with a fractional size", with(readable(noon, "a"), "release", `{"tag":"v1","assets":[{"size_bytes":7.5}]}`), false,
			mustFetch(fetch(noon.Add(-time.Hour), "b", nil)), written},
		{"fetch older than a release with a size over 2^53", with(readable(noon, "a"), "release", `{"tag":"v1","assets":[{"size_bytes":9007199254740993}]}`), false,
			mustFetch(fetch(noon.Add(-time.Hour), "b", nil)), written},
		{"fetch older than a release with a download URL out of its repository", with(readable(noon, "a"), "release",
			`{"tag":"v1","assets":[{"name":"e.msi","download_url":"https://github.com/o/p/releases/download/v1/../../../../x/y/releases/download/v1/e.msi"}]}`), false,
			mustFetch(fetch(noon.Add(-time.Hour), "b", nil)), written},
		{"fetch older than a release with another asset's download URL", with(readable(noon, "a"), "release",
			`{"tag":"v1","assets":[{"name":"e.msi","download_url":"https://github.com/o/p/releases/download/v1/f.msi"}]}`), false,
			mustFetch(fetch(noon.Add(-time.Hour), "b", nil)), written},
		{"fetch older than a release with its exact download URL", with(readable(noon, "a"), "release",
			`{"tag":"v1","html_url":"https://github.com/o/p/releases/tag/v1","assets":[{"name":"e f.msi","download_url":"https://github.com/o/p/releases/download/v1/e%20f.msi"}]}`), false,
			mustFetch(fetch(noon.Add(-time.Hour), "b", nil)), written},
		{"fetch older than a release with a tag of terminal escapes", with(readable(noon, "a"), "release", `{"tag":"v1\u001b]0;pwned\u0007"}`), false,
			mustFetch(fetch(noon.Add(-time.Hour), "b", nil)), written},
		{"fetch older than a release with an html_url out of its repository", with(readable(noon, "a"), "release",
			`{"tag":"v1","html_url":"https://github.com/o/p/releases/tag/../../../../x/y/releases/tag/evil"}`), false,
			mustFetch(fetch(noon.Add(-time.Hour), "b", nil)), written},
		{"fetch older than a release with a right-to-left override in an asset name", with(readable(noon, "a"), "release",
			`{"tag":"v1","assets":[{"name":"a\u202eb.msi"}]}`), false,
			mustFetch(fetch(noon.Add(-time.Hour), "b", nil)), written},
		{"fetch older than a release with a negative size", with(readable(noon, "a"), "release", `{"tag":"v1","assets":[{"size_bytes":-1}]}`), false,
			mustFetch(fetch(noon.Add(-time.Hour), "b", nil)), written},
		{"fetch older than a release with a size of 2^53 - 1", with(readable(noon, "a"), "release", `{"tag":"v1","assets":[{"size_bytes":9007199254740991}]}`), false,
			mustFetch(fetch(noon.Add(-time.Hour), "b", nil)), written},
		{"fetch older than a release with a bad platform", with(readable(noon, "a"), "release", `{"tag":"v1","assets":[{"platform":{"os":1}}]}`), false,
			mustFetch(fetch(noon.Add(-time.Hour), "b", nil)), written},
		{"fetch older than a release with good times and assets", with(readable(noon, "a"), "release",
			`{"tag":"v1","published_at":"2026-10-08T14:52:50.120+02:00","assets":[{"name":"a.msi","size_bytes":7,"sha256":null,"platform":{"os":"web","arch":null,"package_type":"web_zip"}},null]}`), false,
			mustFetch(fetch(noon.Add(-time.Hour), "b", nil)), written},
		// Foreign releases: both paths read them with DecodeApp, as every
		// reader does, so they agree on every one of them.
		{"fetch older than a release whose keys are in another case", foreign(`{"TAG":"v9"}`), false, older, written},
		{"fetch older than a release whose asset keys are in another case", foreign(`{"Tag":"v9","Assets":[{"Size_Bytes":7,"PLATFORM":{"OS":"web"}}]}`), false, older, written},
		{"fetch older than a release with month 13", foreign(`{"tag":"v1","published_at":"2026-13-01T00:00:00Z"}`), false, older, written},
		{"fetch older than a release with 30 February", foreign(`{"tag":"v1","published_at":"2026-02-30T00:00:00Z"}`), false, older, written},
		{"fetch older than a release with 29 February of a leap year", foreign(`{"tag":"v1","published_at":"2024-02-29T00:00:00Z"}`), false, older, written},
		{"fetch older than a whole release of 29 February of a leap year", foreign(leapDay), false, older, refusedTime},
		{"fetch older than a fetch an hour ahead", readable(noon.Add(time.Hour), "a"), false,
			mustFetch(fetch(noon.Add(time.Minute), "b", nil)), written},
		{"fetch older than a fetch within the margin", readable(noon.Add(time.Minute+release.MaxSkew), "a"), false,
			mustFetch(fetch(noon.Add(time.Minute), "b", nil)), refusedTime},
		{"fetch older than a release of another repository", foreign(strings.ReplaceAll(string(relJSON), "photocraft", "evilcraft")), false, older, written},
		{"fetch older than a release at 24:00", foreign(`{"tag":"v1","published_at":"2026-10-08T24:00:00Z"}`), false, older, written},
		{"fetch older than a release at second 60", foreign(`{"tag":"v1","published_at":"2026-10-08T23:59:60Z"}`), false, older, written},
		{"fetch older than a release with an escaped time", foreign(`{"tag":"v1","published_at":"2026\u002d10-08T12:00:00Z"}`), false, older, written},
		{"fetch older than a release with empty assets as an object", foreign(`{"tag":"v1","assets":{}}`), false, older, written},
		{"fetch older than a release with a platform as an array", foreign(`{"tag":"v1","assets":[{"platform":[]}]}`), false, older, written},
		{"fetch older than a release with a size in exponent form", foreign(`{"tag":"v1","assets":[{"size_bytes":1e3}]}`), false, older, written},
		{"fetch older than a release with a size beyond int64", foreign(`{"tag":"v1","assets":[{"size_bytes":9223372036854775808}]}`), false, older, written},
		{"fetch older than a release with unknown fields", foreign(`{"tag":"v1","x":{"y":[1,2]}}`), false, older, written},
		{"304 of a release whose keys are in another case", foreign(`{"TAG":"v9"}`), false, notMod(noon.Add(time.Second), "a"), refusedNoFetch},
		{"304 of a release with 30 February", foreign(`{"tag":"v1","published_at":"2026-02-30T00:00:00Z"}`), false, notMod(noon.Add(time.Second), "a"), refusedNoFetch},
		{"fetch older than a fetch without etag", with(readable(noon, "a"), "etag", "<del>"), false,
			mustFetch(fetch(noon.Add(-time.Hour), "b", nil)), written},
		{"fetch older than another format", with(readable(noon, "a"), "v", "2"), false,
			mustFetch(fetch(noon.Add(-time.Hour), "b", nil)), written},
		{"fetch older than a failure", map[string]string{"v": "1", "failed_ms": ms(noon)}, false,
			mustFetch(fetch(noon.Add(-time.Hour), "b", nil)), written},

		{"304 of no key", nil, false, notMod(noon, "a"), refusedNoFetch},
		{"304 of a string", nil, true, notMod(noon, "a"), refusedNoFetch},
		{"304 newer, same etag", readable(noon, "a"), false, notMod(noon.Add(time.Second), "a"), written},
		{"304 at the same time", readable(noon, "a"), false, notMod(noon, "a"), written},
		{"304 older", readable(noon, "a"), false, notMod(noon.Add(-time.Second), "a"), refusedTime},
		{"304 of another etag", readable(noon, "a"), false, notMod(noon.Add(time.Second), "b"), refusedETag},
		{"304 of an etag in other quotes", readable(noon, `"a"`), false, notMod(noon.Add(time.Second), `W/"a"`), refusedETag},
		{"304 where the etag is empty", readable(noon, ""), false, notMod(noon.Add(time.Second), "a"), refusedETag},
		{"304 of an unreadable release", with(readable(noon, "a"), "release", "{"), false, notMod(noon.Add(time.Second), "a"), refusedNoFetch},
		{"304 of another format", with(readable(noon, "a"), "v", "2"), false, notMod(noon.Add(time.Second), "a"), refusedNoFetch},
		{"304 of an unreadable time", with(readable(noon, "a"), "fetched_ms", "x"), false, notMod(noon, "a"), refusedNoFetch},

		{"failure newer", map[string]string{"v": "1", "failed_ms": ms(noon)}, false, failure(noon.Add(time.Second)), written},
		{"failure older", map[string]string{"v": "1", "failed_ms": ms(noon)}, false, failure(noon.Add(-time.Second)), refusedTime},
		{"failure older than a fetch", readable(noon, "a"), false, failure(noon.Add(-time.Hour)), written},
		{"failure over garbage", map[string]string{"v": "1", "failed_ms": "x"}, false, failure(noon), written},

		{"meta of no key", nil, false, meta(noon), written},
		{"meta over a string", nil, true, meta(noon), written},
		{"meta newer", readableMeta(noon), false, meta(noon.Add(time.Millisecond)), written},
		{"meta at the same time", readableMeta(noon), false, meta(noon), written},
		{"meta older", readableMeta(noon), false, meta(noon.Add(-time.Millisecond)), refusedTime},
		{"meta older than a meta of empty lists", with(readableMeta(noon), "announcements", "[]", "alerts", "\t[]"), false,
			metaOlder, refusedTime},
		{"meta older than another format", with(readableMeta(noon), "v", "2"), false, metaOlder, written},
		{"meta older than an unreadable read_ms", with(readableMeta(noon), "read_ms", "x"), false, metaOlder, written},
		{"meta older than a missing list", with(readableMeta(noon), "alerts", "<del>"), false, metaOlder, written},
		{"meta older than a list that does not parse", with(readableMeta(noon), "app_renames", "[{"), false, metaOlder, written},
		{"meta older than a list that is an object", with(readableMeta(noon), "repo_renames", "{}"), false, metaOlder, written},
		{"meta older than a list that is null", with(readableMeta(noon), "alerts", "null"), false, metaOlder, written},
		{"meta older than a list of numbers", with(readableMeta(noon), "alerts", "[1]"), false, metaOlder, written},
		{"meta older than a field of the wrong type", with(readableMeta(noon), "announcements", `[{"title":true}]`), false,
			metaOlder, written},
		{"meta older than an app's fetch", readable(noon, "a"), false, metaOlder, written},
		{"fetch older than a meta", readableMeta(noon), false, mustFetch(fetch(noon.Add(-time.Hour), "b", nil)), written},
	}

	for _, tt := range tests {
		if tt.wrong {
			continue
		}
		if got := decide(tt.hash, tt.w); got != tt.want {
			t.Errorf("decide: %s: got %v, want %v", tt.name, got, tt.want)
		}
	}

	const app = "photocraft"
	key := AppKey(app)
	for _, p := range paths {
		t.Run(p.name, func(t *testing.T) {
			srv := redistest.Start(t)
			a := newAdmin(t, srv)
			s := newStore(t, p.url(t, srv))
			for _, tt := range tests {
				a.seed(srv, key, tt.wrong, pairsOf(tt.hash))
				got, err := s.guarded(context.Background(), key, tt.w)
				if err != nil {
					t.Fatalf("%s: %v", tt.name, err)
				}
				if got != tt.want {
					t.Errorf("%s: got %v, want %v", tt.name, got, tt.want)
				}
				raw := a.hgetall(key)
				if got != written {
					if (raw == nil) != tt.wrong || !maps.Equal(raw, tt.hash) {
						t.Errorf("%s: refused, yet the key now holds %v", tt.name, raw)
					}
					continue
				}
				want := maps.Clone(tt.hash)
				if tt.hash == nil || tt.hash["v"] != "1" {
					want = map[string]string{}
				}
				for i := 0; i+1 < len(tt.w.pairs); i += 2 {
					want[tt.w.pairs[i]] = tt.w.pairs[i+1]
				}
				if !maps.Equal(raw, want) {
					t.Errorf("%s: hash is %v, want %v", tt.name, raw, want)
				}
			}
			if got := s.Mode(); got != p.mode {
				t.Errorf("Mode() = %v, want %v", got, p.mode)
			}
		})
	}
}

func (v verdict) String() string {
	switch v {
	case written:
		return "written"
	case refusedTime:
		return "refused (time)"
	case refusedETag:
		return "refused (etag)"
	case refusedNoFetch:
		return "refused (no fetch)"
	}
	return "verdict(" + strconv.Itoa(int(v)) + ")"
}

// pairsOf flattens a hash into HSET's field/value pairs.
func pairsOf(h map[string]string) []string {
	pairs := make([]string, 0, 2*len(h))
	for k, v := range h {
		pairs = append(pairs, k, v)
	}
	return pairs
}

// TestPublishFetchChanged: a fetch reports a change of what is served only
// when it replaces another release (or no fetch at all) or changes its
// signatures; one that only moves the fetch time, writes signatures the
// hash holds already, or that a newer fetch refuses, reports none,
// whichever poller writes it (one purge per change for the whole fleet).
func TestPublishFetchChanged(t *testing.T) {
	t.Parallel()
	const app = "photocraft"
	ctx := context.Background()
	r3, sigs := signed(t, "v3", "App_1.0.0_amd64.AppImage", "App_1.0.0_x64_en-US.msi")
	// signedFetch is a fetch of r3 at hhmm with the signatures of names.
	signedFetch := func(hhmm string, names ...string) release.Entry {
		e := fetch(at(hhmm), `"e5"`, r3)
		m := map[string]string{}
		for _, n := range names {
			m[n+".sig"] = sigs[n+".sig"]
		}
		e.Companions = release.NewCompanions(m)
		return e
	}
	steps := []struct {
		name             string
		by               string
		e                release.Entry
		written, changed bool
	}{
		{"first fetch", "poller-a", fetch(at("12:00"), `"e1"`, rel("v1")), true, true},
		{"same release, new ETag", "poller-a", fetch(at("12:02"), `"e2"`, rel("v1")), true, false},
		{"same release from the other poller", "poller-b", fetch(at("12:03"), `"e3"`, rel("v1")), true, false},
		{"new release", "poller-b", fetch(at("12:04"), `"e4"`, rel("v2")), true, true},
		{"the new release again, from the other poller", "poller-a", fetch(at("12:05"), `"e4"`, rel("v2")), true, false},
		{"an older fetch of another release", "poller-a", fetch(at("12:01"), `"e0"`, rel("v0")), false, false},
		{"no release any more", "poller-a", fetch(at("12:06"), "", nil), true, true},
		{"a signed release", "poller-a", signedFetch("12:07"), true, true},
		{"its first signature", "poller-a", signedFetch("12:07", "App_1.0.0_amd64.AppImage"), true, true},
		{"the same signature from the other poller", "poller-b", signedFetch("12:07", "App_1.0.0_amd64.AppImage"), true, false},
		{"the other signature from the other poller", "poller-b", signedFetch("12:07", "App_1.0.0_x64_en-US.msi"), true, true},
		{"a newer fetch with both", "poller-a", signedFetch("12:08", "App_1.0.0_amd64.AppImage", "App_1.0.0_x64_en-US.msi"), true, false},
		{"a newer fetch without them", "poller-b", signedFetch("12:09"), true, true},
	}
	for _, p := range paths {
		t.Run(p.name, func(t *testing.T) {
			srv := redistest.Start(t)
			stores := map[string]*Store{}
			for _, by := range []string{"poller-a", "poller-b"} {
				c, err := redis.OpenURL(p.url(t, srv))
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(c.Close)
				stores[by] = New(c, by, testApps)
			}
			for _, s := range steps {
				written, changed, err := stores[s.by].PublishFetch(ctx, app, s.e)
				if err != nil {
					t.Fatalf("%s: %v", s.name, err)
				}
				if written != s.written || changed != s.changed {
					t.Errorf("%s: written %v, changed %v; want %v, %v", s.name, written, changed, s.written, s.changed)
				}
			}
		})
	}
}
