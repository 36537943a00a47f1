package store

import (
	"context"
	"fmt"
	"maps"
	"strconv"
	"strings"
	"testing"
	"time"

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

// TestWritesByKind checks the fields each kind of write sets, that a write of
// a hash of another format or type replaces it whole, that a 304 republishes
// the whole fetch when the hash holds no readable one, that a write must
// say when it happened, and the TTL: renewed by every write that goes
// through and by no refused one.
func TestWritesByKind(t *testing.T) {
	t.Parallel()
	const app = "photocraft"
	key, v2, ctx := AppKey(app), rel("v0.2.0"), context.Background()
	v2JSON := encJSON(t, v2)
	fetched := []string{"v", "1", "fetched_ms", ms(at("12:02")), "etag", `"e2"`, "release", v2JSON, "failed_ms", ms(at("12:01")), "failures", "3", "claimed_ms", ms(at("12:00")), "by", "poller-b"}
	claim := func(when time.Time) func(s *Store) (bool, error) {
		return func(s *Store) (bool, error) { return s.Claim(ctx, app, when, time.Minute) }
	}
	putFetch := func(e release.Entry) func(s *Store) (bool, error) {
		return func(s *Store) (bool, error) { return s.PutFetch(ctx, app, e) }
	}
	notModified := func(e release.Entry) func(s *Store) (bool, error) {
		return func(s *Store) (bool, error) { return s.PutNotModified(ctx, app, e) }
	}
	failure := func(e release.Entry) func(s *Store) (bool, error) {
		return func(s *Store) (bool, error) { return s.PutFailure(ctx, app, e) }
	}
	mine := notModified(fetch(at("12:03"), `"e2"`, v2))
	h := func(kv ...string) map[string]string {
		return with(map[string]string{"v": "1", "by": "poller-a"}, kv...)
	}
	republished := h("fetched_ms", ms(at("12:03")), "etag", `"e2"`, "release", v2JSON)
	noRelease := h("fetched_ms", ms(at("12:02")), "etag", "", "release", "null")
	failed := func(when string, n string) map[string]string {
		return h("failed_ms", ms(at(when)), "failures", n, "notfound_since_ms", "0", "notfound", "0")
	}

	tests := []struct {
		name    string
		before  []string // HSET pairs; nil: no key
		wrong   bool     // the key holds a string instead
		do      func(s *Store) (bool, error)
		want    bool
		after   map[string]string // the whole hash afterwards; nil: as before
		wantErr bool              // and nothing written
	}{
		{name: "claim", do: claim(at("12:00")), want: true, after: h("claimed_ms", ms(at("12:00")))},
		{name: "fetch", do: putFetch(fetch(at("12:02"), `"e2"`, v2)), want: true, after: h("fetched_ms", ms(at("12:02")), "etag", `"e2"`, "release", v2JSON)},
		{name: "fetch of no release", do: putFetch(fetch(at("12:02"), "", nil)), want: true, after: noRelease},
		{name: "failure", do: failure(release.Entry{FailedAt: at("12:05"), Failures: 2}), want: true, after: failed("12:05", "2")},
		{name: "failure in a run of 404s", do: failure(release.Entry{FailedAt: at("12:05"), Failures: 3, NotFoundSince: at("12:01"), NotFound: 2}), want: true, after: with(failed("12:05", "3"), "notfound_since_ms", ms(at("12:01")), "notfound", "2")},
		{name: "failure counts at least one", do: failure(release.Entry{FailedAt: at("12:05")}), want: true, after: failed("12:05", "1")},
		{name: "304 moves only the fetch time", before: fetched, do: notModified(fetch(at("12:03"), `"e2"`, rel("v9"))), want: true, after: h("fetched_ms", ms(at("12:03")), "etag", `"e2"`, "release", v2JSON, "failed_ms", ms(at("12:01")), "failures", "3", "claimed_ms", ms(at("12:00")))},
		{name: "failure over a hash without a version", before: []string{"fetched_ms", ms(at("12:02")), "etag", "x"}, do: failure(release.Entry{FailedAt: at("12:05"), Failures: 1}), want: true, after: failed("12:05", "1")},
		{name: "fetch over a string", wrong: true, do: putFetch(fetch(at("12:02"), "", nil)), want: true, after: noRelease},
		{name: "refused claim", before: []string{"v", "1", "claimed_ms", ms(at("12:00")), "by", "poller-b"}, do: claim(at("12:00").Add(time.Second))},
		{name: "304 of no key republishes", do: mine, want: true, after: republished},
		{name: "304 of an unreadable release republishes", before: []string{"v", "1", "fetched_ms", ms(at("12:02")), "etag", `"e2"`, "release", `{"tag":`}, do: mine, want: true, after: republished},
		{name: "304 of no etag field republishes", before: []string{"v", "1", "fetched_ms", ms(at("12:02")), "release", v2JSON}, do: mine, want: true, after: republished},
		{name: "304 of another format republishes", before: []string{"v", "2", "fetched_ms", ms(at("12:09")), "etag", `"e2"`, "release", v2JSON, "shard", "7"}, do: mine, want: true, after: republished},
		{name: "304 of a string republishes", wrong: true, do: mine, want: true, after: republished},
		{name: "304 of a claim only republishes", before: []string{"v", "1", "claimed_ms", ms(at("12:03")), "by", "poller-b"}, do: mine, want: true, after: with(republished, "claimed_ms", ms(at("12:03")))},
		{name: "304 of a different etag", before: []string{"v", "1", "fetched_ms", ms(at("12:02")), "etag", `"e9"`, "release", "null", "by", "poller-b"}, do: mine},
		{name: "304 older than a fetch", before: []string{"v", "1", "fetched_ms", ms(at("12:04")), "etag", `"e2"`, "release", v2JSON, "by", "poller-b"}, do: mine},
		{name: "304 without an etag", do: notModified(fetch(at("12:03"), "", nil))},
		{name: "claim without a time", do: claim(time.Time{}), wantErr: true},
		{name: "fetch without a time", do: putFetch(fetch(time.Time{}, `"e"`, nil)), wantErr: true},
		{name: "304 without a time", do: notModified(fetch(time.Time{}, `"e"`, nil)), wantErr: true},
		{name: "failure without a time", do: failure(release.Entry{Failures: 1}), wantErr: true},
		{name: "meta without a time", do: func(s *Store) (bool, error) { return s.PutMeta(ctx, testMeta(), time.Time{}) }, wantErr: true},
	}
	eachPath(t, func(t *testing.T, o on) {
		for _, tt := range tests {
			o.a.seed(o.srv, key, tt.wrong, tt.before)
			before := o.a.hgetall(key)
			// A short TTL shows whether the write renewed it.
			const short = 100 * time.Second
			if tt.wrong || tt.before != nil {
				o.a.do("PEXPIRE", key, strconv.FormatInt(short.Milliseconds(), 10))
			}
			got, err := tt.do(o.s)
			if (err != nil) != tt.wantErr || got != tt.want {
				t.Errorf("%s: got written=%v, %v; want %v, error %v", tt.name, got, err, tt.want, tt.wantErr)
			}
			if n := o.a.dbsize(); tt.wantErr && n != 0 {
				t.Errorf("%s: %d keys written, want none", tt.name, n)
			}
			want := tt.after
			if want == nil {
				want = before
			}
			if raw := o.a.hgetall(key); !maps.Equal(raw, want) {
				t.Errorf("%s: hash is %v, want %v", tt.name, raw, want)
			}
			ttl := o.a.pttl(key)
			switch {
			case tt.want && ttl <= 6*24*time.Hour:
				t.Errorf("%s: TTL after the write = %v, want over 6 days", tt.name, ttl)
			case !tt.want && ttl > short:
				t.Errorf("%s: TTL after a refused write = %v, want it left at most %v", tt.name, ttl, short)
			}
		}
	})
}

// TestDecide runs one table of hashes and writes through decide and through
// both real paths, which read the fields decide needs and leave a refused
// hash as it was. Which hashes read as a fetch, a failure, a claim or a meta
// is the codec's table (TestDecodeApp, TestDecodeMeta); here, which of
// those block a write.
func TestDecide(t *testing.T) {
	t.Parallel()
	noon := at("12:00")
	// The writer's clock: every time of the table's hashes is in its past,
	// but for the ones an hour or more ahead.
	s := New(nil, "poller-a", testApps, WithClock(fakeclock.New(noon.Add(time.Minute))))
	relJSON := encJSON(t, rel("v1.0.0"))
	readable := func(when time.Time, etag string) map[string]string {
		return map[string]string{"v": "1", "fetched_ms": ms(when), "etag": etag, "release": relJSON}
	}
	mustFetch := func(e release.Entry) write {
		return s.of("photocraft", must(s.fetchWrite("photocraft", e))(t))
	}
	claim := func(when time.Time) write { return s.of("photocraft", s.claimWrite(when, time.Minute)) }
	claimedAt := func(v string) map[string]string { return map[string]string{"v": "1", "claimed_ms": v} }
	notMod := func(when time.Time, etag string) write {
		return s.of("photocraft", s.notModifiedWrite(fetch(when, etag, nil)))
	}
	failure := func(when time.Time) write {
		return s.of("photocraft", s.failureWrite(release.Entry{FailedAt: when, Failures: 1}))
	}
	meta := func(when time.Time) write { return must(s.metaWrite(testMeta(), when))(t) }
	readableMeta := func(when time.Time) map[string]string {
		return map[string]string{"v": "1", "read_ms": ms(when), "app_renames": "[]", "repo_renames": "[]", "announcements": ` [{"title":"t","body":"b","created_at":null}]`, "alerts": "[null]"}
	}
	metaOlder := meta(noon.Add(-time.Hour))
	older := mustFetch(fetch(noon.Add(-time.Hour), "b", nil))

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
		{"claim over another format", with(claimedAt(ms(noon)), "v", "2", "shard", "7"), false, claim(noon), written},
		{"claim over no version", with(claimedAt(ms(noon)), "v", "<del>"), false, claim(noon), written},
		{"claim over a string", nil, true, claim(noon), written},
		{"claimed_ms not a number", claimedAt("soon"), false, claim(noon), written},
		{"claim before a claim an hour ahead", claimedAt(ms(noon.Add(time.Hour))), false, claim(noon.Add(time.Minute)), written},
		{"claim before a claim within the margin", claimedAt(ms(noon.Add(time.Minute + release.MaxSkew))), false, claim(noon.Add(time.Minute)), refusedTime},
		{"claimed_ms with leading zeros", claimedAt("0" + ms(noon)), false, claim(noon), refusedTime},

		{"fetch at the same time", readable(noon, "a"), false, mustFetch(fetch(noon, "b", nil)), written},
		{"fetch older than a readable fetch", readable(noon, "a"), false, mustFetch(fetch(noon.Add(-time.Second), "b", nil)), refusedTime},
		{"fetch older than a fetch of no release", with(readable(noon, ""), "release", "null"), false, mustFetch(fetch(noon.Add(-time.Second), "b", nil)), refusedTime},
		{"fetch older than an unreadable release", with(readable(noon, "a"), "release", "{"), false, older, written},
		{"fetch older than a refused release", with(readable(noon, "a"), "release", strings.ReplaceAll(relJSON, "photocraft", "evilcraft")), false, older, written},
		{"fetch older than a fetch an hour ahead", readable(noon.Add(time.Hour), "a"), false, mustFetch(fetch(noon.Add(time.Minute), "b", nil)), written},
		{"fetch older than a fetch within the margin", readable(noon.Add(time.Minute+release.MaxSkew), "a"), false, mustFetch(fetch(noon.Add(time.Minute), "b", nil)), refusedTime},
		{"fetch older than a fetch without etag", with(readable(noon, "a"), "etag", "<del>"), false, older, written},
		{"fetch older than another format", with(readable(noon, "a"), "v", "2"), false, older, written},
		{"fetch older than a failure", map[string]string{"v": "1", "failed_ms": ms(noon)}, false, older, written},

		{"304 of no key", nil, false, notMod(noon, "a"), refusedNoFetch},
		{"304 of a string", nil, true, notMod(noon, "a"), refusedNoFetch},
		{"304 newer, same etag", readable(noon, "a"), false, notMod(noon.Add(time.Second), "a"), written},
		{"304 at the same time", readable(noon, "a"), false, notMod(noon, "a"), written},
		{"304 older", readable(noon, "a"), false, notMod(noon.Add(-time.Second), "a"), refusedTime},
		{"304 of another etag", readable(noon, "a"), false, notMod(noon.Add(time.Second), "b"), refusedETag},
		{"304 of an etag in other quotes", readable(noon, `"a"`), false, notMod(noon.Add(time.Second), `W/"a"`), refusedETag},
		{"304 where the etag is empty", readable(noon, ""), false, notMod(noon.Add(time.Second), "a"), refusedETag},
		{"304 of an unreadable release", with(readable(noon, "a"), "release", "{"), false, notMod(noon.Add(time.Second), "a"), refusedNoFetch},
		{"304 of a release whose keys are in another case", with(readable(noon, "a"), "release", `{"TAG":"v9"}`), false, notMod(noon.Add(time.Second), "a"), refusedNoFetch},
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
		{"meta older than a meta of empty lists", with(readableMeta(noon), "announcements", "[]", "alerts", "\t[]"), false, metaOlder, refusedTime},
		{"meta older than another format", with(readableMeta(noon), "v", "2"), false, metaOlder, written},
		{"meta older than an unreadable read_ms", with(readableMeta(noon), "read_ms", "x"), false, metaOlder, written},
		{"meta older than a missing list", with(readableMeta(noon), "alerts", "<del>"), false, metaOlder, written},
		{"meta older than a list that does not parse", with(readableMeta(noon), "app_renames", "[{"), false, metaOlder, written},
		{"meta older than an app's fetch", readable(noon, "a"), false, metaOlder, written},
		{"fetch older than a meta", readableMeta(noon), false, older, written},
	}

	for _, tt := range tests {
		if tt.wrong {
			continue
		}
		if got := decide(tt.hash, tt.w); got != tt.want {
			t.Errorf("decide: %s: got %v, want %v", tt.name, got, tt.want)
		}
	}

	key := AppKey("photocraft")
	eachPath(t, func(t *testing.T, o on) {
		for _, tt := range tests {
			o.a.seed(o.srv, key, tt.wrong, pairsOf(tt.hash))
			got, err := o.s.guarded(context.Background(), key, tt.w)
			if err != nil {
				t.Fatalf("%s: %v", tt.name, err)
			}
			if got != tt.want {
				t.Errorf("%s: got %v, want %v", tt.name, got, tt.want)
			}
			raw := o.a.hgetall(key)
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
	})
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

func pairsOf(h map[string]string) []string {
	pairs := make([]string, 0, 2*len(h))
	for k, v := range h {
		pairs = append(pairs, k, v)
	}
	return pairs
}

// TestPublish: what each write of a fetch leaves reads as the merge law's
// join of what the hash held and the write, whichever of a fleet's two
// pollers writes it, on both paths; and only a write that changes what is
// served says so (one purge per change for the whole fleet): a new release,
// or new signatures, not a new fetch time. Signatures (of a release, or of
// a history entry's releases) that two pollers fetched for the same fetch are
// kept together, a 304 keeps them, and one after a flush writes them back.
func TestPublish(t *testing.T) {
	t.Parallel()
	const img, msi = "App_1.0.0_amd64.AppImage", "App_1.0.0_x64_en-US.msi"
	r3, sigs := signed(t, "v3", img, msi)
	// signedFetch is a fetch of r3 at hhmm with the signatures of names.
	signedFetch := func(hhmm string, names ...string) release.Entry {
		m := map[string]string{}
		for _, n := range names {
			m[n+".sig"] = sigs[n+".sig"]
		}
		return withCompanions(fetch(at(hhmm), `"e5"`, r3), m)
	}
	r4, _ := signed(t, "v4", img, msi) // the same names, as bundles without a version in their names keep
	h3, sigs3 := signed(t, "v3.0.0", "App_3.0.0_amd64.AppImage")
	h3.PublishedAt = release.NewTime(t0.Add(3 * time.Hour))
	h2, sigs2 := signed(t, "v2.0.0", "App_2.0.0_amd64.AppImage")
	h2.PublishedAt = release.NewTime(t0.Add(2 * time.Hour))
	list := release.NewHistory([]*release.Release{h3, h2, datedRel("v1.0.0", 1)})
	listed := func(tag string, sigs map[string]string) release.Entry {
		return release.Entry{FetchedAt: at("12:00"), ETag: `"l1"`, History: list.WithCompanions(map[string]*release.Companions{tag: release.NewCompanions(sigs)})}
	}
	const a, b, flushed = "poller-a", "poller-b", "flushed"
	steps := []struct {
		name             string
		by               string // flushed: poller-a, after FLUSHALL
		app              string
		notModified      bool
		e                release.Entry
		written, changed bool
	}{
		{"first fetch", a, "photocraft", false, fetch(at("12:00"), `"e1"`, rel("v1")), true, true},
		{"same release, new ETag", a, "photocraft", false, fetch(at("12:02"), `"e2"`, rel("v1")), true, false},
		{"same release from the other poller", b, "photocraft", false, fetch(at("12:03"), `"e3"`, rel("v1")), true, false},
		{"new release", b, "photocraft", false, fetch(at("12:04"), `"e4"`, rel("v2")), true, true},
		{"the new release again, from the other poller", a, "photocraft", false, fetch(at("12:05"), `"e4"`, rel("v2")), true, false},
		{"an older fetch of another release", a, "photocraft", false, fetch(at("12:01"), `"e0"`, rel("v0")), false, false},
		{"no release any more", a, "photocraft", false, fetch(at("12:06"), "", nil), true, true},
		{"a signed release", a, "photocraft", false, signedFetch("12:07"), true, true},
		{"its first signature", a, "photocraft", false, signedFetch("12:07", img), true, true},
		{"the same signature from the other poller", b, "photocraft", false, signedFetch("12:07", img), true, false},
		{"the other signature from the other poller", b, "photocraft", false, signedFetch("12:07", msi), true, true},
		{"a 304", a, "photocraft", true, fetch(at("12:30"), `"e5"`, r3), true, false},
		{"a 304 after a flush", flushed, "photocraft", true, signedFetch("12:31", img, msi), true, false},
		{"a newer fetch with both", a, "photocraft", false, signedFetch("12:40", img, msi), true, false},
		{"a newer fetch without them", b, "photocraft", false, signedFetch("12:45"), true, true},
		{"signed again", a, "photocraft", false, signedFetch("12:50", img, msi), true, true},
		{"another release of the same names", a, "photocraft", false, fetch(at("13:00"), `"e6"`, r4), true, true},

		{"a history", a, history.Key, false, listed("v3.0.0", sigs3), true, true},
		{"the same history", a, history.Key, false, listed("v3.0.0", sigs3), true, false},
		{"its other companions from the other poller", b, history.Key, false, listed("v2.0.0", sigs2), true, true},
		{"a newer list", a, history.Key, false, release.Entry{FetchedAt: at("12:30"), ETag: `"l2"`, History: release.NewHistory([]*release.Release{datedRel("v4.0.0", 4), h3})}, true, true},
		{"an older list", b, history.Key, false, listed("v3.0.0", sigs3), false, false},
	}
	ctx := context.Background()
	eachPath(t, func(t *testing.T, o on) {
		stores := map[string]*Store{a: o.s, b: New(o.s.conn, b, testApps)}
		model := map[string]release.Entry{} // what the hashes must read as
		for _, st := range steps {
			by := st.by
			if by == flushed {
				o.srv.MustDo("FLUSHALL")
				clear(model)
				by = a
			}
			var written, changed bool
			var err error
			m := model[st.app]
			if st.notModified {
				written, err = stores[by].PutNotModified(ctx, st.app, st.e)
				if m.Fetched() {
					m.FetchedAt = st.e.FetchedAt
				} else {
					m = m.Merge(st.e, time.Now())
				}
			} else {
				written, changed, err = stores[by].PublishFetch(ctx, st.app, st.e)
				m = m.Merge(st.e, time.Now())
			}
			model[st.app] = m
			if err != nil || written != st.written || changed != st.changed {
				t.Errorf("%s: written %v, changed %v, %v; want %v, %v", st.name, written, changed, err, st.written, st.changed)
			}
			if got := load(t, o.s, st.app); !sameEntry(got, m) {
				t.Errorf("%s: reads\n%s\nwant\n%s", st.name, fmtEntry(got), fmtEntry(m))
			}
		}
	})
}
