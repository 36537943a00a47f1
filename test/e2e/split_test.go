package e2e

import (
	"bytes"
	"compress/gzip"
	"context"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/storytold/craft-releases/pkg/redis"
	"github.com/storytold/craft-releases/pkg/redis/store"
	"github.com/storytold/craft-releases/pkg/release"
	"github.com/storytold/craft-releases/test/fakeclock"
	"github.com/storytold/craft-releases/test/fakegithub"
	"github.com/storytold/craft-releases/test/fakeredis"
	"github.com/storytold/craft-releases/test/redistest"
	"github.com/storytold/craft-releases/test/testkit"
)

const (
	photocraft  = "storytold/photocraft"
	vectorcraft = "storytold/vectorcraft"
)

// publishFirst publishes the releases the tests start from; filmcraft's
// repository has none, so the fake answers 404 for it.
func publishFirst(gh *fakegithub.Server) map[string]string {
	gh.Publish(photocraft, fakegithub.NewRelease(photocraft, "v1.0.0"))
	gh.Publish(vectorcraft, fakegithub.NewRelease(vectorcraft, "v2.0.0"))
	return map[string]string{"filmcraft": "", "photocraft": "v1.0.0", "vectorcraft": "v2.0.0"}
}

// redisDo sends one command to rs on a connection of its own and returns
// the first line of the reply, failing the test on an error.
func redisDo(t testing.TB, rs *redistest.Server, args ...string) string {
	t.Helper()
	reply, err := rs.Do(args...)
	if err != nil {
		t.Fatalf("redis %v: %v", args, err)
	}
	return reply
}

func appKeys() []string {
	keys := make([]string, len(testApps))
	for i, a := range testApps {
		keys[i] = a.Key
	}
	return keys
}

func TestReleaseReachesEveryPod(t *testing.T) {
	t.Parallel()
	gh := fakegithub.New(t)
	want := publishFirst(gh)
	rs := redistest.Start(t)
	pollers := startPollers(t, 2, pollerEnv(gh, rs.URL(), testAppsEnv))
	pods := startPods(t, 2, podEnv(rs.URL(), testAppsEnv))
	waitTags(t, want, pods...)

	gh.Publish(photocraft, fakegithub.NewRelease(photocraft, "v1.1.0"))
	want["photocraft"] = "v1.1.0"
	t.Logf("published on the fake GitHub → served by both pods after %v", waitTags(t, want, pods...))

	// With the pollers stopped Redis holds still, and both pods must end up
	// serving exactly what it holds, in the same bytes.
	for _, p := range pollers {
		p.stop(t)
	}
	entries, _, err := newStore(t, rs.URL(), nil).Load(context.Background(), appKeys())
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range pods {
		testkit.Eventually(t, p.name+" serves what Redis holds", func() bool {
			got := fetched(p.served(t))
			for app, e := range entries {
				if !e.FetchedAt.Equal(got[app]) {
					return false
				}
			}
			return true
		})
	}
	for _, enc := range []string{"identity", "gzip"} {
		t.Run(enc, func(t *testing.T) {
			a, b := pods[0].get(t, "Accept-Encoding", enc), pods[1].get(t, "Accept-Encoding", enc)
			if !bytes.Equal(a.body, b.body) {
				t.Errorf("bodies differ:\n%s: %s\n%s: %s", pods[0].name, summary(a.body), pods[1].name, summary(b.body))
			}
			for _, h := range []string{"ETag", "Cache-Control", "Content-Type", "Content-Encoding", "Vary", "Content-Length"} {
				if a.header.Get(h) != b.header.Get(h) {
					t.Errorf("%s got %q on %s and %q on %s, want the same", h, a.header.Get(h), pods[0].name, b.header.Get(h), pods[1].name)
				}
			}
			if got, want := a.header.Get("Cache-Control"), "public, max-age=60, stale-while-revalidate=30, stale-if-error=86400"; got != want {
				t.Errorf("Cache-Control got %q, want %q", got, want)
			}
			if a.header.Get("ETag") == "" {
				t.Errorf("no ETag")
			}
		})
	}
	plain, zipped := pods[0].get(t), pods[0].get(t, "Accept-Encoding", "gzip")
	if got := gunzip(t, zipped.body); !bytes.Equal(got, plain.body) {
		t.Errorf("the gzip copy inflates to %s, want the plain body %s", summary(got), summary(plain.body))
	}
	if plain.header.Get("ETag") == zipped.header.Get("ETag") {
		t.Errorf("plain and gzip share the ETag %s, want one per representation", plain.header.Get("ETag"))
	}
}

func gunzip(t testing.TB, b []byte) []byte {
	t.Helper()
	zr, err := gzip.NewReader(bytes.NewReader(b))
	if err != nil {
		t.Fatalf("gunzip: %v", err)
	}
	out, err := io.ReadAll(zr)
	if err != nil {
		t.Fatalf("gunzip: %v", err)
	}
	return out
}

// writeAll makes a poller-style guarded write of every test app fetched at
// at, each tagged tag (filmcraft with no release), and fails the test unless
// every write went through.
func writeAll(t testing.TB, s *store.Store, at time.Time, tag string) map[string]string {
	t.Helper()
	want := make(map[string]string, len(testApps))
	for _, a := range testApps {
		e := release.Entry{FetchedAt: at, ETag: `"` + a.Key + "-" + tag + `"`}
		want[a.Key] = ""
		if a.Key != "filmcraft" {
			e.Release = fakeRelease(t, a.Repo, tag)
			want[a.Key] = tag
		}
		ok, err := s.PutFetch(context.Background(), a.Key, e)
		if err != nil || !ok {
			t.Fatalf("put fetch %s %s at %v: written %v, %v", a.Key, tag, at, ok, err)
		}
	}
	return want
}

func etags(t testing.TB, pods []*proc) []string {
	t.Helper()
	out := make([]string, len(pods))
	for i, p := range pods {
		out[i] = p.get(t).header.Get("ETag")
	}
	return out
}

func TestGuardedWriteReachesEveryPod(t *testing.T) {
	t.Parallel()
	rs := redistest.Start(t)
	s := newStore(t, rs.URL(), nil)
	base := time.Now().Truncate(time.Millisecond)
	writeAll(t, s, base, "v1.0.0")
	pods := startPods(t, 2, podEnv(rs.URL(), testAppsEnv))
	waitTags(t, map[string]string{"filmcraft": "", "photocraft": "v1.0.0", "vectorcraft": "v1.0.0"}, pods...)

	for i := 1; i <= 5; i++ {
		tag := fmt.Sprintf("v1.0.%d", i)
		old := etags(t, pods)
		began := time.Now()
		ok, err := s.PutFetch(context.Background(), "photocraft", release.Entry{
			FetchedAt: base.Add(time.Duration(i) * time.Second),
			ETag:      `"` + tag + `"`,
			Release:   fakeRelease(t, photocraft, tag),
		})
		if err != nil || !ok {
			t.Fatalf("put fetch %s: written %v, %v", tag, ok, err)
		}
		took, _ := changedETags(t, began, old, pods...)
		for _, p := range pods {
			if got := tags(p.served(t))["photocraft"]; got != tag {
				t.Errorf("%s serves photocraft %q after its ETag changed, want %q", p.name, got, tag)
			}
		}
		t.Logf("write %s → served by both pods after %v", tag, took)
	}
}

// bodies returns the plain body each pod serves.
func bodies(t testing.TB, pods []*proc) [][]byte {
	t.Helper()
	out := make([][]byte, len(pods))
	for i, p := range pods {
		out[i] = p.get(t).body
	}
	return out
}

func TestOlderOrBrokenEntriesAreIgnored(t *testing.T) {
	t.Parallel()
	rs := redistest.Start(t)
	s := newStore(t, rs.URL(), nil)
	// A day ago, so that every newer write of the test is still in the past:
	// a time ahead of the pods' clocks is not believed.
	at := time.Now().Add(-24 * time.Hour).Truncate(time.Millisecond)
	want := writeAll(t, s, at, "v1.0.0")
	pods := startPods(t, 2, podEnv(rs.URL(), testAppsEnv))
	waitTags(t, want, pods...)

	key := store.AppKey("photocraft")
	relJSON := func(t testing.TB, tag string) string {
		b, err := release.Marshal(fakeRelease(t, photocraft, tag))
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	ms := func(t time.Time) string { return strconv.FormatInt(t.UnixMilli(), 10) }
	tests := []struct {
		name  string
		write func(t testing.TB, cur time.Time)
	}{
		{"older fetch", func(t testing.TB, cur time.Time) {
			redisDo(t, rs, "HSET", key, "v", "1", "fetched_ms", ms(cur.Add(-time.Minute)), "etag", `"old"`, "release", relJSON(t, "v0.9.0"))
		}},
		{"equal fetch", func(t testing.TB, cur time.Time) {
			redisDo(t, rs, "HSET", key, "v", "1", "fetched_ms", ms(cur), "etag", `"same-time"`, "release", relJSON(t, "v0.9.1"))
		}},
		{"other format version", func(t testing.TB, cur time.Time) {
			redisDo(t, rs, "HSET", key, "v", "2", "fetched_ms", ms(cur.Add(time.Minute)), "etag", `"v2"`, "release", relJSON(t, "v9.0.0"))
		}},
		{"unreadable release", func(t testing.TB, cur time.Time) {
			redisDo(t, rs, "HSET", key, "v", "1", "fetched_ms", ms(cur.Add(time.Minute)), "etag", `"broken"`, "release", "{")
		}},
		{"unreadable time", func(t testing.TB, cur time.Time) {
			redisDo(t, rs, "HSET", key, "v", "1", "fetched_ms", "soon", "etag", `"soon"`, "release", relJSON(t, "v9.0.1"))
		}},
		{"not a hash", func(t testing.TB, cur time.Time) { redisDo(t, rs, "SET", key, "v9.0.2") }},
		{"a fetch an hour ahead of the clocks", func(t testing.TB, cur time.Time) {
			redisDo(t, rs, "HSET", key, "v", "1", "fetched_ms", ms(time.Now().Add(time.Hour)), "etag", `"ahead"`, "release", relJSON(t, "v9.0.3"))
		}},
		{"a release whose download URL is in another repository", func(t testing.TB, cur time.Time) {
			poisoned := strings.ReplaceAll(relJSON(t, "v9.0.4"), "/releases/download/", "/../../evil/x/releases/download/")
			redisDo(t, rs, "HSET", key, "v", "1", "fetched_ms", ms(cur.Add(time.Minute)), "etag", `"evil"`, "release", poisoned)
		}},
		{"a release whose keys are in capitals", func(t testing.TB, cur time.Time) {
			redisDo(t, rs, "HSET", key, "v", "1", "fetched_ms", ms(cur.Add(time.Minute)), "etag", `"caps"`,
				"release", strings.Replace(relJSON(t, "v9.0.5"), `"tag"`, `"TAG"`, 1))
		}},
	}
	cur := at
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := bodies(t, pods)
			tt.write(t, cur)
			// The write made Redis stop tracking the key: tracked again by
			// both pods means both read it since.
			testkit.Eventually(t, "both pods re-read the hash", func() bool {
				return tracked(t, rs.Addr) >= int64(len(pods)*len(testApps))
			})
			for range 3 {
				for j, p := range pods {
					if got := p.get(t).body; !bytes.Equal(got, before[j]) {
						t.Fatalf("%s serves %s, want what it had: %s", p.name, summary(got), summary(before[j]))
					}
				}
				time.Sleep(50 * time.Millisecond)
			}

			// The same pods take a newer write at once: they were listening.
			cur = at.Add(time.Duration(i+1) * time.Hour)
			tag := fmt.Sprintf("v1.%d.0", i+1)
			ok, err := s.PutFetch(context.Background(), "photocraft", release.Entry{FetchedAt: cur, ETag: `"` + tag + `"`, Release: fakeRelease(t, photocraft, tag)})
			if err != nil || !ok {
				t.Fatalf("put fetch %s over the bad entry: written %v, %v", tag, ok, err)
			}
			want["photocraft"] = tag
			waitTags(t, want, pods...)
		})
	}
}

func TestPodWithoutClientTracking(t *testing.T) {
	t.Parallel()
	gh := fakegithub.New(t)
	want := publishFirst(gh)
	rs := redistest.Start(t)
	redisDo(t, rs, "ACL", "SETUSER", "api", "on", ">pw", "~*", "&*", "+@all", "-client")
	startPollers(t, 2, pollerEnv(gh, rs.URL(), testAppsEnv))
	pods := startPods(t, 2, podEnv("redis://api:pw@"+rs.Addr, testAppsEnv))
	waitTags(t, want, pods...)

	gh.Publish(photocraft, fakegithub.NewRelease(photocraft, "v1.1.0"))
	want["photocraft"] = "v1.1.0"
	t.Logf("published → served by both pods re-reading each second after %v", waitTags(t, want, pods...))
	for _, p := range pods {
		if got := p.logs.count("redis refused client tracking, re-reading every app each second"); got != 1 {
			t.Errorf("%s logged the fallback %d times, want 1", p.name, got)
		}
		if got := p.logs.count("redis unavailable, serving what is loaded"); got != 0 {
			t.Errorf("%s logged an outage %d times, want 0", p.name, got)
		}
		if out := p.logs.String(); strings.Contains(out, ":pw@") {
			t.Errorf("%s logged the password", p.name)
		}
	}
}

func TestSilentRedisAtStartUp(t *testing.T) {
	t.Parallel()
	srv := fakeredis.StartSilent(t)
	env := podEnv(srv.URL(), testAppsEnv)
	env["CRAFT_APPS_HYDRATE_TIMEOUT_SECS"] = "3"
	env["SHUTDOWN_TIMEOUT_SECS"] = "5"
	began := time.Now()
	p := start(t, "api", binary(t, "api"), env)
	healthy := time.Since(began)
	if got := p.status("/readyz"); got != http.StatusServiceUnavailable {
		t.Errorf("readyz once healthz answers got %d, want 503 until the hydrate timeout", got)
	}
	testkit.Eventually(t, "readyz answers 200", func() bool { return p.status("/readyz") == http.StatusOK })
	t.Logf("healthz 200 after %v, readyz 200 after %v (hydrate timeout 3 s)", healthy, time.Since(began))
	if got := p.logs.count("ready without a load from redis"); got != 1 {
		t.Errorf("logged readiness without a load %d times, want 1", got)
	}

	cold := p.get(t)
	if got := cold.header.Get("Cache-Control"); got != "no-store" {
		t.Errorf("Cache-Control got %q, want no-store", got)
	}
	info := decode(t, cold.body)
	if info.ReleaseInfo.LastFetched != nil || len(info.ReleaseInfo.Apps) != len(testApps) {
		t.Errorf("got %d apps, last_fetched %v; want %d apps and null", len(info.ReleaseInfo.Apps), info.ReleaseInfo.LastFetched, len(testApps))
	}
	for _, a := range testApps {
		got, ok := info.ReleaseInfo.Apps[a.Key]
		if !ok || got.Name != a.Name || got.Repo != a.Repo || got.LatestRelease != nil || got.AppLastFetched != nil {
			t.Errorf("%s got %+v (listed %v), want %s %s with no release, never fetched", a.Key, got, ok, a.Name, a.Repo)
		}
	}

	// A hydrator stuck on a silent Redis must not hold the shutdown.
	p.stopOnce.Do(func() {
		p.signal(t, syscall.SIGTERM)
		sent := time.Now()
		testkit.Eventually(t, "shutdown begins", func() bool { return p.logs.count("shutting down") > 0 })
		if got := p.status("/readyz"); got == http.StatusOK {
			t.Errorf("readyz after SIGTERM got 200, want 503 or no answer")
		}
		p.wait(t)
		took := time.Since(sent)
		if took > 5*time.Second {
			t.Errorf("exited %v after SIGTERM, want within SHUTDOWN_TIMEOUT_SECS=5", took)
		}
		t.Logf("exited %v after SIGTERM", took)
	})
}

// TestFutureWriteCostsAtMostAnInterval: a write from a clock an hour ahead
// (an older poller on a node whose clock runs fast: a fetch and a claim an
// hour in the future) makes the app neither fresh nor claimed to the
// fleet, so the next release reaches every pod within an interval of its
// publication, on the ordinary schedule (issue 20, finding 3: at a 20 s
// interval it was still not served after 50 s; now 15.0 s, I − M). 8 s here,
// to keep the test short.
func TestFutureWriteCostsAtMostAnInterval(t *testing.T) {
	t.Parallel()
	const interval = 8 * time.Second
	gh := fakegithub.New(t)
	want := publishFirst(gh)
	rs := redistest.Start(t)
	env := pollerEnv(gh, rs.URL(), testAppsEnv)
	env["CRAFT_APPS_RELEASE_POLL_INTERVAL_SECS"] = strconv.Itoa(int(interval.Seconds()))
	startPollers(t, 2, env)
	pods := startPods(t, 2, podEnv(rs.URL(), testAppsEnv))
	waitTags(t, want, pods...)

	ahead := time.Now().Add(time.Hour)
	fast := store.New(redisConnFor(t, rs.URL()), "poller-fast-clock", testApps, store.WithClock(fakeclock.New(ahead)))
	ctx := context.Background()
	if ok, err := fast.Claim(ctx, "photocraft", ahead, time.Minute); err != nil || !ok {
		t.Fatalf("the fast clock's claim: %v, %v", ok, err)
	}
	e := release.Entry{FetchedAt: ahead, ETag: `"fast"`, Release: fakeRelease(t, photocraft, want["photocraft"])}
	if ok, err := fast.PutFetch(ctx, "photocraft", e); err != nil || !ok {
		t.Fatalf("the fast clock's fetch: %v, %v", ok, err)
	}

	gh.Publish(photocraft, fakegithub.NewRelease(photocraft, "v1.1.0"))
	want["photocraft"] = "v1.1.0"
	took := waitTags(t, want, pods...)
	t.Logf("a write from a clock an hour ahead, then a release: served by every pod after %v (interval %v)", took, interval)
	for i, d := range took {
		if d > interval+2*time.Second {
			t.Errorf("%s served the release %v after its publication, want within the interval %v", pods[i].name, d, interval)
		}
	}
	for _, p := range pods {
		if got := fetched(p.served(t))["photocraft"]; got.After(time.Now().Add(release.MaxSkew)) {
			t.Errorf("%s serves app_last_fetched %v, in the future", p.name, got)
		}
	}
}

// redisConnFor opens the poller's kind of connection to url, closed with t.
func redisConnFor(t testing.TB, url string) *redis.Conn {
	t.Helper()
	c, err := redis.OpenURL(url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}
