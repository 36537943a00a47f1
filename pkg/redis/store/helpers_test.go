package store

import (
	"context"
	"fmt"
	"maps"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/rueidis"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/storytold/craft-releases/pkg/redis"
	"github.com/storytold/craft-releases/pkg/release"
	"github.com/storytold/craft-releases/pkg/schedule"
	"github.com/storytold/craft-releases/test/redistest"
	"github.com/storytold/craft-releases/test/testkit"
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

// pollerURL is userURL of a user "poller" that may do anything but run scripts.
func pollerURL(t testing.TB, srv *redistest.Server) string {
	t.Helper()
	return userURL(t, srv, "poller", "~*", "&*", "+@all", "-@scripting")
}

// userURL creates the Redis user with the ACL rules and password pw, and
// returns the URL that logs in as it.
func userURL(t testing.TB, srv *redistest.Server, user string, rules ...string) string {
	t.Helper()
	srv.MustDo(append([]string{"ACL", "SETUSER", user, "on", ">pw"}, rules...)...)
	return "redis://" + user + ":pw@" + srv.Addr
}

// started is a Redis server of the package's pool, its admin client and a
// Store of poller-a logged in as the default user.
func started(t testing.TB, opts ...Option) on {
	t.Helper()
	srv := redistest.Start(t)
	return on{srv: srv, a: newAdmin(t, srv), url: srv.URL(), s: newStore(t, srv.URL(), opts...)}
}

func observed() (*zap.Logger, *observer.ObservedLogs) {
	core, logs := observer.New(zapcore.WarnLevel)
	return zap.New(core), logs
}

func noDenials(t testing.TB, srv *redistest.Server) {
	t.Helper()
	if denied := srv.Denied(); len(denied) > 0 {
		t.Errorf("ACL LOG: %q", denied)
	}
}

// hashOf is the hash the HSET pairs of writes leave on no key.
func hashOf(writes ...write) map[string]string {
	h := map[string]string{}
	for _, w := range writes {
		for i := 0; i+1 < len(w.pairs); i += 2 {
			h[w.pairs[i]] = w.pairs[i+1]
		}
	}
	return h
}

type call struct {
	name string
	do   func() error
}

// callsOf are one call of each kind s makes to Redis.
func callsOf(ctx context.Context, s *Store) []call {
	e := fetch(at("12:00"), `"e"`, rel("v1"))
	return []call{
		{"load", func() error { _, _, err := s.Load(ctx, apps13); return err }},
		{"load one app", func() error { _, _, err := s.LoadApp(ctx, "photocraft"); return err }},
		{"status", func() error { _, _, err := s.Status(ctx, apps13); return err }},
		{"claim", func() error { _, err := s.Claim(ctx, "photocraft", at("12:00"), time.Minute); return err }},
		{"fetch", func() error { _, err := s.PutFetch(ctx, "photocraft", e); return err }},
		{"304", func() error { _, err := s.PutNotModified(ctx, "photocraft", e); return err }},
		{"failure", func() error {
			_, err := s.PutFailure(ctx, "photocraft", release.Entry{FailedAt: at("12:00"), Failures: 1})
			return err
		}},
		{"backoff", func() error { return s.PutBackoff(ctx, schedule.Backoff{Until: at("13:00"), Trouble: 1}) }},
		{"clear backoff", func() error { return s.PutBackoff(ctx, schedule.Backoff{}) }},
		{"deliver", func() error {
			_, err := s.Deliver(ctx, []string{"guid-1"}, each(release.Refresh{At: t0}, "photocraft"))
			return err
		}},
	}
}

// on is what a test of one write path gets: a Redis server of its own (from
// the package's pool), an admin client of it, the URL that logs in as the
// path's user, and a Store of poller-a on it.
type on struct {
	srv *redistest.Server
	a   *admin
	url string
	s   *Store
}

// eachPath runs f, which makes guarded writes, on each write path, then
// checks that the Store took the path, and Redis saw only its commands.
func eachPath(t *testing.T, f func(t *testing.T, o on)) {
	t.Helper()
	for _, p := range paths {
		t.Run(p.name, func(t *testing.T) {
			srv := redistest.Start(t)
			url := p.url(t, srv)
			o := on{srv: srv, a: newAdmin(t, srv), url: url, s: newStore(t, url)}
			f(t, o)
			if got := o.s.Mode(); got != p.mode {
				t.Errorf("Mode() = %v, want %v", got, p.mode)
			}
			scripts, execs := o.a.calls("evalsha")+o.a.calls("eval"), o.a.calls("exec")
			if (p.mode == ModeScript) != (scripts > 0 && execs == 0) || (p.mode == ModeWatch) != (scripts == 0 && execs > 0) {
				t.Errorf("Redis ran %d scripts and %d EXECs on the %s path", scripts, execs, p.name)
			}
		})
	}
}

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
	testApps   = []release.App{photocraft, photocraft.HistoryEntry(),
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

// decoded is photocraft's hash h as DecodeApp reads it, with no time too far ahead.
func decoded(h map[string]string) release.Entry {
	e, _ := DecodeApp(photocraft, h, time.Now().AddDate(100, 0, 0))
	return e
}

// fmtEntry shows all an entry holds, times as instants and releases as
// encoded, so that two entries are the same when they show the same.
func fmtEntry(e release.Entry) string {
	f := func(t time.Time) string {
		if t.IsZero() {
			return "-"
		}
		return t.UTC().Format(time.RFC3339Nano)
	}
	rel, _ := release.Marshal(e.Release)
	hist := "none"
	if e.History != nil {
		enc, _ := encodeHistory(e.History)
		sigs := map[string]map[string]string{}
		for tag, c := range e.History.Companions {
			sigs[tag] = c.Map()
		}
		hist = fmt.Sprint(enc, sigs)
	}
	return fmt.Sprintf("fetched %s etag %q release %s companions %v history %s failed %s×%d 404s since %s×%d claimed %s",
		f(e.FetchedAt), e.ETag, rel, e.Companions.Map(), hist, f(e.FailedAt), e.Failures, f(e.NotFoundSince), e.NotFound, f(e.ClaimedAt))
}

func sameEntry(got, want release.Entry) bool { return fmtEntry(got) == fmtEntry(want) }

func load(t testing.TB, s *Store, app string) release.Entry {
	t.Helper()
	e, _, err := s.LoadApp(context.Background(), app)
	if err != nil {
		t.Fatalf("LoadApp(%s): %v", app, err)
	}
	return e
}

// readBack writes the HSET pairs to app's hash and returns the entry s
// reads of it.
func (a *admin) readBack(s *Store, app string, pairs ...string) release.Entry {
	a.t.Helper()
	a.hset(AppKey(app), pairs...)
	return load(a.t, s, app)
}

// wrote returns a check that fails the test unless a write went through:
// wrote(t)(s.PutFetch(…)).
func wrote(t testing.TB) func(ok bool, err error) {
	return func(ok bool, err error) {
		t.Helper()
		if err != nil || !ok {
			t.Fatalf("write = %v, %v; want true, nil", ok, err)
		}
	}
}

// must returns v, failing the test at once if err is not nil.
func must[T any](v T, err error) func(t testing.TB) T {
	return func(t testing.TB) T {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
}

// with returns a copy of h with the fields of the pairs set, or deleted
// when the value is "<del>".
func with(h map[string]string, kv ...string) map[string]string {
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

func encJSON(t testing.TB, v any) string {
	t.Helper()
	b := must(release.Marshal(v))(t)
	return string(b)
}

// encList is the releases as a JSON array, as the history field holds them.
func encList(t testing.TB, rels ...*release.Release) string {
	t.Helper()
	parts := make([]string, len(rels))
	for i, r := range rels {
		parts[i] = encJSON(t, r)
	}
	return "[" + strings.Join(parts, ",") + "]"
}

var history = photocraft.HistoryEntry()

func datedRel(tag string, h int) *release.Release {
	r := rel(tag)
	r.PublishedAt = release.NewTime(t0.Add(time.Duration(h) * time.Hour))
	return r
}

// signed returns a release of photocraft tagged tag with a bundle and its
// .sig for each name, and the signatures' texts by .sig name.
func signed(t testing.TB, tag string, names ...string) (*release.Release, map[string]string) {
	t.Helper()
	k := testkit.NewMinisignKey(t)
	r := rel(tag)
	sigs := make(map[string]string, len(names))
	for _, n := range names {
		r.Assets = append(r.Assets,
			release.Asset{Name: n, DownloadURL: release.DownloadURL(photocraft.Repo, tag, n), Platform: release.ParseAsset(n)},
			release.Asset{Name: n + ".sig", DownloadURL: release.DownloadURL(photocraft.Repo, tag, n+".sig")})
		sigs[n+".sig"] = k.Sign(n, []byte(n))
	}
	return r, sigs
}

func withCompanions(e release.Entry, sigs map[string]string) release.Entry {
	e.Companions = release.NewCompanions(sigs)
	return e
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

func (a *admin) dbsize() int64 {
	a.t.Helper()
	return must(a.do("DBSIZE").AsInt64())(a.t)
}

func each(r release.Refresh, keys ...string) map[string]release.Refresh {
	m := make(map[string]release.Refresh, len(keys))
	for _, k := range keys {
		m[k] = r
	}
	return m
}
