package store

import (
	"context"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/rueidis"

	"github.com/storytold/craft-releases/pkg/redis"
	"github.com/storytold/craft-releases/pkg/release"
	"github.com/storytold/craft-releases/test/redistest"
)

// t0 is 12:00 on the day of the sequence in docs/redis.md.
var t0 = time.Date(2026, 10, 10, 12, 0, 0, 0, time.UTC)

func at(hhmm string) time.Time {
	h, m, _ := strings.Cut(hhmm, ":")
	hh, _ := strconv.Atoi(h)
	mm, _ := strconv.Atoi(m)
	return time.Date(2026, 10, 10, hh, mm, 0, 0, time.UTC)
}

// A path is one way of making guarded writes, chosen by the Redis user.
type path struct {
	name string
	mode WriteMode
	url  func(t testing.TB, srv *redistest.Server) string
}

var paths = []path{
	{"script", ModeScript, func(_ testing.TB, srv *redistest.Server) string { return srv.URL() }},
	{"watch", ModeWatch, pollerURL},
}

// pollerURL creates a Redis user that may do anything but run scripts, and
// returns the URL that logs in as it.
func pollerURL(t testing.TB, srv *redistest.Server) string {
	t.Helper()
	srv.MustDo("ACL", "SETUSER", "poller", "on", ">pw", "~*", "&*", "+@all", "-@scripting")
	return "redis://poller:pw@" + srv.Addr
}

// newStore returns a Store on a redis.Conn for url, closed by t.Cleanup.
func newStore(t testing.TB, url string, opts ...Option) *Store {
	t.Helper()
	c, err := redis.OpenURL(url)
	if err != nil {
		t.Fatalf("OpenURL(%q): %v", url, err)
	}
	t.Cleanup(c.Close)
	return New(c, "poller-a", testApps, opts...)
}

// The apps of the tests: every key they write, photocraft's releases (rel)
// in its own repository.
var (
	photocraft = release.App{Key: "photocraft", Name: "PhotoCraft", Repo: "storytold/photocraft"}
	testApps   = []release.App{photocraft,
		{Key: "pdfcraft", Repo: "storytold/pdfcraft"}, {Key: "filmcraft", Repo: "storytold/filmcraft"}}
)

// withTimeout returns url with every call limited to d (write_timeout).
func withTimeout(url string, d time.Duration) string {
	sep := "?"
	if strings.Contains(url, "?") {
		sep = "&"
	}
	return url + sep + "write_timeout=" + d.String()
}

// admin is a plain client of the default user, to look at and tamper with
// what the Store wrote.
type admin struct {
	t testing.TB
	c rueidis.Client
}

func newAdmin(t testing.TB, srv *redistest.Server) *admin {
	t.Helper()
	return &admin{t: t, c: srv.Client(t)}
}

func (a *admin) do(args ...string) rueidis.RedisResult {
	a.t.Helper()
	cmd := a.c.B().Arbitrary(args[0])
	if len(args) > 1 {
		cmd = cmd.Keys(args[1]).Args(args[2:]...)
	}
	r := a.c.Do(context.Background(), cmd.Build())
	if err := r.Error(); err != nil && !rueidis.IsRedisNil(err) {
		a.t.Fatalf("redis %v: %v", args, err)
	}
	return r
}

// hgetall returns the hash at key, or nil when the key holds another type.
func (a *admin) hgetall(key string) map[string]string {
	a.t.Helper()
	if typ, _ := a.do("TYPE", key).ToString(); typ != "hash" && typ != "none" {
		return nil
	}
	h, err := a.do("HGETALL", key).AsStrMap()
	if err != nil {
		a.t.Fatalf("HGETALL %s: %v", key, err)
	}
	return h
}

func (a *admin) hset(key string, pairs ...string) {
	a.t.Helper()
	a.do(append([]string{"HSET", key}, pairs...)...)
}

// seed empties Redis and puts at key a string when wrong, else the hash of
// the HSET pairs (none: no key).
func (a *admin) seed(srv *redistest.Server, key string, wrong bool, pairs []string) {
	a.t.Helper()
	srv.MustDo("FLUSHALL")
	switch {
	case wrong:
		a.do("SET", key, "garbage")
	case len(pairs) > 0:
		a.hset(key, pairs...)
	}
}

func (a *admin) pttl(key string) time.Duration {
	a.t.Helper()
	n, err := a.do("PTTL", key).AsInt64()
	if err != nil {
		a.t.Fatalf("PTTL %s: %v", key, err)
	}
	return time.Duration(n) * time.Millisecond
}

// calls returns how often Redis ran the command, from INFO commandstats
// (refused calls are not counted).
func (a *admin) calls(cmd string) int {
	a.t.Helper()
	info, err := a.c.Do(context.Background(), a.c.B().Info().Section("commandstats").Build()).ToString()
	if err != nil {
		a.t.Fatalf("INFO commandstats: %v", err)
	}
	for line := range strings.Lines(info) {
		rest, ok := strings.CutPrefix(line, "cmdstat_"+cmd+":calls=")
		if !ok {
			continue
		}
		n, _, _ := strings.Cut(rest, ",")
		calls, err := strconv.Atoi(n)
		if err != nil {
			a.t.Fatalf("commandstats line %q: %v", line, err)
		}
		return calls
	}
	return 0
}

func rel(tag string) *release.Release {
	return &release.Release{
		Tag: tag, Version: strings.TrimPrefix(tag, "v"), Name: "PhotoCraft " + tag,
		HTMLURL: "https://github.com/storytold/photocraft/releases/tag/" + tag,
		Assets:  []release.Asset{},
	}
}

func fetch(when time.Time, etag string, r *release.Release) release.Entry {
	return release.Entry{FetchedAt: when, ETag: etag, Release: r}
}

// sameEntry compares two entries field by field, times by instant and the
// release by its JSON.
// decoded is photocraft's hash h as DecodeApp reads it, with no time too far ahead.
func decoded(h map[string]string) release.Entry {
	e, _ := DecodeApp(photocraft, h, time.Now().AddDate(100, 0, 0))
	return e
}

func sameEntry(t testing.TB, got, want release.Entry) bool {
	t.Helper()
	gr, err := release.Marshal(got.Release)
	if err != nil {
		t.Fatal(err)
	}
	wr, err := release.Marshal(want.Release)
	if err != nil {
		t.Fatal(err)
	}
	return got.FetchedAt.Equal(want.FetchedAt) && got.ETag == want.ETag && string(gr) == string(wr) &&
		got.FailedAt.Equal(want.FailedAt) && got.Failures == want.Failures && got.ClaimedAt.Equal(want.ClaimedAt) &&
		got.NotFoundSince.Equal(want.NotFoundSince) && got.NotFound == want.NotFound
}

func fmtEntry(e release.Entry) string {
	tag := "<none>"
	if e.Release != nil {
		tag = e.Release.Tag
	}
	f := func(t time.Time) string {
		if t.IsZero() {
			return "-"
		}
		return t.Format("15:04:05.000")
	}
	return "fetched " + f(e.FetchedAt) + " etag " + strconv.Quote(e.ETag) + " release " + tag +
		" failed " + f(e.FailedAt) + "×" + strconv.Itoa(e.Failures) + " claimed " + f(e.ClaimedAt)
}

// fixedConn is a Conn of a client already made.
type fixedConn struct{ c rueidis.Client }

func (f fixedConn) Client(context.Context) (rueidis.Client, error) { return f.c, nil }
func (fixedConn) Timeout() time.Duration                           { return 5 * time.Second }

// countingClient records how many commands each call to Redis carried.
type countingClient struct {
	rueidis.Client
	mu    sync.Mutex
	calls []int
}

func (c *countingClient) Do(ctx context.Context, cmd rueidis.Completed) rueidis.RedisResult {
	c.record(1)
	return c.Client.Do(ctx, cmd)
}

func (c *countingClient) DoMulti(ctx context.Context, multi ...rueidis.Completed) []rueidis.RedisResult {
	c.record(len(multi))
	return c.Client.DoMulti(ctx, multi...)
}

func (c *countingClient) record(n int) {
	c.mu.Lock()
	c.calls = append(c.calls, n)
	c.mu.Unlock()
}

func (c *countingClient) reset() []int {
	c.mu.Lock()
	defer c.mu.Unlock()
	calls := c.calls
	c.calls = nil
	return calls
}

// dbsize returns how many keys the database holds.
func (a *admin) dbsize() int64 {
	a.t.Helper()
	n, err := a.do("DBSIZE").AsInt64()
	if err != nil {
		a.t.Fatal(err)
	}
	return n
}

// each is the refresh r for every key.
func each(r release.Refresh, keys ...string) map[string]release.Refresh {
	m := make(map[string]release.Refresh, len(keys))
	for _, k := range keys {
		m[k] = r
	}
	return m
}
