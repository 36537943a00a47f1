package e2e

import (
	"bufio"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/storytold/craft-releases/pkg/github"
	"github.com/storytold/craft-releases/pkg/redis"
	"github.com/storytold/craft-releases/pkg/redis/store"
	"github.com/storytold/craft-releases/pkg/release"
	"github.com/storytold/craft-releases/test/fakegithub"
	"github.com/storytold/craft-releases/test/mariadbtest"
	"github.com/storytold/craft-releases/test/testkit"
)

const (
	module   = "github.com/storytold/craft-releases"
	infoPath = "/v1/craft_apps/release_info"

	// waitFor bounds every wait for something that must happen; it is a
	// guard against hanging, never a measure of speed.
	waitFor = 20 * time.Second
)

// binaries are built once per run of the package, by the first test or
// benchmark that starts a process, without the race detector: the packages'
// own tests run with it, and here the processes are what is observed.
var binaries struct {
	dir  string
	once sync.Once
	err  error
}

func TestMain(m *testing.M) {
	if dir := os.Getenv(baselineEnv); dir != "" {
		// The test binary re-executed as BenchmarkThroughput's reference server.
		if err := serveBaseline(dir); err != nil {
			fmt.Fprintln(os.Stderr, "baseline:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(testkit.IntegrationMain(func() int {
		dir, err := os.MkdirTemp("", "craft-e2e-")
		if err != nil {
			fmt.Fprintln(os.Stderr, "e2e:", err)
			return 1
		}
		binaries.dir = dir
		defer os.RemoveAll(dir)
		return mariadbtest.Main(m)
	}))
}

// binary returns the path of cmd/<name>, building cmd/api and cmd/poller the
// first time it is called.
func binary(t testing.TB, name string) string {
	t.Helper()
	binaries.once.Do(func() {
		began := time.Now()
		cmd := exec.Command("go", "build", "-o", binaries.dir+string(filepath.Separator),
			module+"/cmd/api", module+"/cmd/poller")
		if out, err := cmd.CombinedOutput(); err != nil {
			binaries.err = fmt.Errorf("go build: %w\n%s", err, out)
			return
		}
		t.Logf("built cmd/api and cmd/poller in %v", time.Since(began).Round(time.Millisecond))
	})
	if binaries.err != nil {
		t.Fatal(binaries.err)
	}
	return filepath.Join(binaries.dir, name)
}

// proc is one process under test: a pod, a poller, or the reference server.
type proc struct {
	name string
	cmd  *exec.Cmd
	base string // "http://" and the address it logged as listening on
	logs *logs

	exited chan struct{} // closed once the process exited and its output was read
	err    error         // its exit status, once exited is closed

	stopOnce sync.Once
}

// start runs path with exactly env (nothing inherited, so a developer's
// REDIS_URL or token cannot leak in), HTTP_ADDR and METRICS_ADDR on free
// loopback ports unless env has them, and waits until it logs the address it listens on and
// /healthz answers 200. When the test ends it is stopped with SIGTERM, and
// the test fails unless it exits 0; its output is shown if the test failed.
func start(t testing.TB, name, path string, env map[string]string) *proc {
	t.Helper()
	p := launch(t, name, path, env)
	select {
	case addr := <-p.logs.listening:
		p.base = "http://" + addr
	case <-p.exited:
		t.Fatalf("%s exited at start-up: %v\n%s", name, p.err, p.logs)
	case <-time.After(waitFor):
		t.Fatalf("%s did not log a listening address\n%s", name, p.logs)
	}
	testkit.Eventually(t, name+" answers /healthz", func() bool { return p.status("/healthz") == http.StatusOK })
	return p
}

// launch starts the process without waiting for it to listen.
func launch(t testing.TB, name, path string, env map[string]string) *proc {
	t.Helper()
	cmd := exec.Command(path)
	cmd.Env = []string{} // not nil, which would inherit ours
	if _, ok := env["HTTP_ADDR"]; !ok {
		cmd.Env = append(cmd.Env, "HTTP_ADDR=127.0.0.1:0")
	}
	if _, ok := env["METRICS_ADDR"]; !ok {
		cmd.Env = append(cmd.Env, "METRICS_ADDR=127.0.0.1:0") // the API's; the poller reads none
	}
	for k, v := range env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	p := spawn(t, name, cmd)
	t.Cleanup(func() {
		p.stop(t)
		// A test that took over stopping may have failed half-way.
		p.reap(t, p.cmd.Process.Kill)
	})
	return p
}

// spawn starts cmd, its output read into the proc's logs.
func spawn(t testing.TB, name string, cmd *exec.Cmd) *proc {
	t.Helper()
	p := &proc{name: name, cmd: cmd, logs: newLogs(), exited: make(chan struct{})}
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	p.cmd.Stdout, p.cmd.Stderr = w, w
	if err := p.cmd.Start(); err != nil {
		r.Close()
		w.Close()
		t.Fatalf("start %s: %v", name, err)
	}
	w.Close()
	go func() {
		p.logs.read(r)
		r.Close()
		p.err = p.cmd.Wait()
		close(p.exited)
	}()
	return p
}

// reap calls end unless the process exited, waits for it to exit, and
// shows its output if the test failed.
func (p *proc) reap(t testing.TB, end func() error) {
	select {
	case <-p.exited:
	default:
		_ = end()
		select {
		case <-p.exited:
		case <-time.After(waitFor):
			_ = p.cmd.Process.Kill()
			<-p.exited
		}
	}
	if t.Failed() {
		t.Logf("%s output:\n%s", p.name, p.logs)
	}
}

// stop sends SIGTERM (once) and waits for the process to exit, failing the
// test unless it exits 0 within waitFor.
func (p *proc) stop(t testing.TB) {
	t.Helper()
	p.stopOnce.Do(func() {
		p.signal(t, syscall.SIGTERM)
		p.wait(t)
	})
}

// wait waits for the process to exit and fails the test unless it exited 0.
func (p *proc) wait(t testing.TB) {
	t.Helper()
	select {
	case <-p.exited:
	case <-time.After(waitFor):
		_ = p.cmd.Process.Kill()
		<-p.exited
		t.Errorf("%s still ran %v after SIGTERM; killed", p.name, waitFor)
		return
	}
	if p.err != nil {
		t.Errorf("%s exited with %v, want status 0", p.name, p.err)
	}
}

func (p *proc) signal(t testing.TB, sig os.Signal) {
	t.Helper()
	select {
	case <-p.exited:
		return
	default:
	}
	if err := p.cmd.Process.Signal(sig); err != nil {
		t.Errorf("signal %s: %v", p.name, err)
	}
}

// status returns the status of GET path, or 0 when the request failed.
func (p *proc) status(path string) int {
	a, err := ask(p.base + path)
	if err != nil {
		return 0
	}
	return a.status
}

// rss returns the process's resident memory in bytes (VmRSS) and its peak (VmHWM).
func (p *proc) rss(t testing.TB) (rss, peak int64) {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", p.cmd.Process.Pid))
	if err != nil {
		t.Fatalf("read %s's status: %v", p.name, err)
	}
	kib := func(field string) int64 {
		for line := range strings.Lines(string(b)) {
			if v, ok := strings.CutPrefix(line, field+":"); ok {
				n, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
				if err != nil {
					t.Fatalf("%s of %s: %v", field, p.name, err)
				}
				return n << 10
			}
		}
		t.Fatalf("no %s in /proc/%d/status", field, p.cmd.Process.Pid)
		return 0
	}
	return kib("VmRSS"), kib("VmHWM")
}

// cpu returns the CPU time the process has used so far, user and system,
// to the clock tick (USER_HZ, 100 on Linux).
func (p *proc) cpu(t testing.TB) time.Duration {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", p.cmd.Process.Pid))
	if err != nil {
		t.Fatalf("read %s's stat: %v", p.name, err)
	}
	// The command name, in parentheses, may hold spaces: fields count from
	// after it, where the state is field 3 of proc(5).
	_, rest, _ := strings.Cut(string(b), ") ")
	f := strings.Fields(rest)
	if len(f) < 13 {
		t.Fatalf("%s's stat %q", p.name, b)
	}
	var ticks int64
	for _, v := range f[11:13] { // utime, stime
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			t.Fatalf("%s's stat %q: %v", p.name, b, err)
		}
		ticks += n
	}
	return time.Duration(ticks) * 10 * time.Millisecond
}

// logs keeps a process's output, one line each, and notes the address it
// logs with the message "listening".
type logs struct {
	listening chan string

	mu    sync.Mutex
	lines []string
}

func newLogs() *logs { return &logs{listening: make(chan string, 1)} }

func (l *logs) read(r io.Reader) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 4<<20)
	for sc.Scan() {
		line := sc.Text()
		l.mu.Lock()
		l.lines = append(l.lines, line)
		l.mu.Unlock()
		if rec := parseLine(line); rec.Msg == "listening" && rec.Addr != "" {
			select {
			case l.listening <- rec.Addr:
			default:
			}
		}
	}
}

// record is what the tests read of a JSON log line.
type record struct {
	Level string `json:"level"`
	Msg   string `json:"msg"`
	Addr  string `json:"addr"`
}

func parseLine(line string) record {
	var rec record
	_ = json.Unmarshal([]byte(line), &rec)
	return rec
}

func (l *logs) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Join(l.lines, "\n")
}

// answer is one HTTP answer, read whole.
type answer struct {
	status int
	header http.Header
	body   []byte
}

// ask sends GET url with the header pairs given (name, value, …), as
// testkit.Ask does.
func ask(url string, header ...string) (answer, error) {
	res, body, err := testkit.Ask(nil, url, header...)
	if err != nil {
		return answer{}, err
	}
	return answer{status: res.StatusCode, header: res.Header, body: body}, nil
}

// get asks the pod's endpoint and fails the test unless it answers 200.
func (p *proc) get(t testing.TB, header ...string) answer {
	t.Helper()
	a, err := ask(p.base+infoPath, header...)
	if err != nil {
		t.Fatalf("%s: %v", p.name, err)
	}
	if a.status != http.StatusOK {
		t.Fatalf("%s answered %d, want 200: %s", p.name, a.status, a.body)
	}
	return a
}

// served is what a pod serves, decoded.
func (p *proc) served(t testing.TB) release.Info {
	t.Helper()
	return testkit.Decode(t, p.get(t).body)
}

// summary describes a body in a line for failure messages: each app's tag
// and fetch time, and its length, which tells bodies apart that describe
// alike.
func summary(body []byte) string {
	var info release.Info
	if err := json.Unmarshal(body, &info); err != nil {
		return fmt.Sprintf("%d bytes that do not decode: %v", len(body), err)
	}
	var b strings.Builder
	for _, k := range slices.Sorted(maps.Keys(info.ReleaseInfo.Apps)) {
		a := info.ReleaseInfo.Apps[k]
		tag, at := "none", "never"
		if a.LatestRelease != nil {
			tag = a.LatestRelease.Tag
		}
		if a.AppLastFetched != nil {
			at = a.AppLastFetched.Format(time.StampMilli)
		}
		fmt.Fprintf(&b, "%s=%s@%s ", k, tag, at)
	}
	fmt.Fprintf(&b, "(%d bytes)", len(body))
	return b.String()
}

// tags returns each app's served tag: "" for no release.
func tags(info release.Info) map[string]string {
	out := make(map[string]string, len(info.ReleaseInfo.Apps))
	for k, a := range info.ReleaseInfo.Apps {
		out[k] = ""
		if a.LatestRelease != nil {
			out[k] = a.LatestRelease.Tag
		}
	}
	return out
}

// fetched returns each app's app_last_fetched; zero for null.
func fetched(info release.Info) map[string]time.Time {
	out := make(map[string]time.Time, len(info.ReleaseInfo.Apps))
	for k, a := range info.ReleaseInfo.Apps {
		if a.AppLastFetched != nil {
			out[k] = a.AppLastFetched.Time
		}
	}
	return out
}

// waitTags waits until every pod serves want (app → tag, "" for none) with
// every app fetched, and returns how long each pod took.
func waitTags(t testing.TB, want map[string]string, pods ...*proc) []time.Duration {
	t.Helper()
	began := time.Now()
	took := make([]time.Duration, len(pods))
	for i, p := range pods {
		testkit.Eventually(t, fmt.Sprintf("%s serves %v", p.name, want), func() bool {
			info := p.served(t)
			return info.ReleaseInfo.LastFetched != nil && maps.Equal(tags(info), want)
		})
		took[i] = time.Since(began)
	}
	return took
}

// The apps of the tests: two with releases, one whose repository has none.
var (
	testApps = []release.App{
		{Key: "filmcraft", Name: "FilmCraft", Repo: "storytold/filmcraft"},
		{Key: "photocraft", Name: "PhotoCraft", Repo: "storytold/photocraft"},
		{Key: "vectorcraft", Name: "VectorCraft", Repo: "storytold/vectorcraft"},
	}
	testAppsEnv = "photocraft=PhotoCraft=storytold/photocraft, vectorcraft=VectorCraft=storytold/vectorcraft, filmcraft=FilmCraft=storytold/filmcraft"
)

// podEnv is the environment of an API pod in split mode.
func podEnv(redisURL, apps string) map[string]string {
	env := map[string]string{
		"REDIS_URL":                       redisURL,
		"CRAFT_APPS_HYDRATE_TIMEOUT_SECS": "10",
		"SHUTDOWN_TIMEOUT_SECS":           "5",
	}
	if apps != "" {
		env["CRAFT_APPS_RELEASE_APPS"] = apps
	}
	return env
}

// pollerEnv is the environment of a poller that asks gh about every app
// each second.
func pollerEnv(gh *fakegithub.Server, redisURL, apps string) map[string]string {
	return map[string]string{
		"REDIS_URL":                              redisURL,
		"CRAFT_APPS_RELEASE_APPS":                apps,
		"CRAFT_APPS_RELEASE_GITHUB_API_URL":      gh.URL(),
		"CRAFT_APPS_RELEASE_POLL_INTERVAL_SECS":  "1",
		"CRAFT_APPS_RELEASE_TICK_SECS":           "1",
		"CRAFT_APPS_RELEASE_STARTUP_JITTER_SECS": "0",
		"CRAFT_APPS_RELEASE_REQUEST_SPACING_MS":  "0",
		"SHUTDOWN_TIMEOUT_SECS":                  "5",
	}
}

// startPods starts n API pods reading redisURL.
func startPods(t testing.TB, n int, env map[string]string) []*proc {
	t.Helper()
	pods := make([]*proc, n)
	for i := range pods {
		pods[i] = start(t, fmt.Sprintf("api-%d", i+1), binary(t, "api"), env)
	}
	return pods
}

// startPollers starts n pollers.
func startPollers(t testing.TB, n int, env map[string]string) []*proc {
	t.Helper()
	pollers := make([]*proc, n)
	for i := range pollers {
		pollers[i] = start(t, fmt.Sprintf("poller-%d", i+1), binary(t, "poller"), env)
	}
	return pollers
}

// newStore returns a Store on the poller's own kind of connection to the
// Redis at url, trusting tlsCfg's CA for rediss:// (nil: the system's), to
// write as a poller does.
func newStore(t testing.TB, url string, tlsCfg *tls.Config) *store.Store {
	t.Helper()
	o, err := redis.Parse(url)
	if err != nil {
		t.Fatal(err)
	}
	c := redis.Open(o.WithTLS(tlsCfg))
	t.Cleanup(c.Close)
	return store.New(c, "e2e", testApps)
}

// fakeRelease is the release the fake GitHub serves for repo and tag, as
// the poller would have parsed it.
func fakeRelease(t testing.TB, repo, tag string) *release.Release {
	t.Helper()
	r, err := github.ParseRelease(release.App{Repo: repo}, fakegithub.NewRelease(repo, tag).JSON())
	if err != nil {
		t.Fatalf("parse the fake's %s %s: %v", repo, tag, err)
	}
	return r
}

// redisInfo returns the fields of one section of INFO (name → value). It
// asks on a connection of its own, which adds one "info" call.
func redisInfo(t testing.TB, addr, section string) map[string]string {
	t.Helper()
	conn, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		t.Fatalf("info %s: %v", section, err)
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := fmt.Fprintf(conn, "*2\r\n$4\r\nINFO\r\n$%d\r\n%s\r\n", len(section), section); err != nil {
		t.Fatalf("info %s: %v", section, err)
	}
	r := bufio.NewReader(conn)
	head, err := r.ReadString('\n')
	if err != nil || !strings.HasPrefix(head, "$") {
		t.Fatalf("info %s: reply %q, %v", section, head, err)
	}
	n, err := strconv.Atoi(strings.TrimSpace(head[1:]))
	if err != nil {
		t.Fatalf("info %s: reply %q", section, head)
	}
	body := make([]byte, n)
	if _, err := io.ReadFull(r, body); err != nil {
		t.Fatalf("info %s: %v", section, err)
	}
	fields := make(map[string]string)
	for line := range strings.Lines(string(body)) {
		if k, v, ok := strings.Cut(strings.TrimSpace(line), ":"); ok && !strings.HasPrefix(k, "#") {
			fields[k] = v
		}
	}
	return fields
}

// redisCalls returns the calls of every command Redis counted (INFO
// commandstats), by name as Redis spells it ("hgetall", "client|caching").
func redisCalls(t testing.TB, addr string) map[string]int64 {
	t.Helper()
	calls := make(map[string]int64)
	for k, v := range redisInfo(t, addr, "commandstats") {
		name, ok := strings.CutPrefix(k, "cmdstat_")
		n, _, _ := strings.Cut(strings.TrimPrefix(v, "calls="), ",")
		c, err := strconv.ParseInt(n, 10, 64)
		if !ok || err != nil {
			t.Fatalf("info commandstats: %s:%s", k, v)
		}
		calls[name] = c
	}
	return calls
}

// delta returns after − before for every command that changed, leaving out
// the INFO calls that measured it.
func delta(before, after map[string]int64) map[string]int64 {
	d := make(map[string]int64)
	for name, n := range after {
		if name == "info" {
			continue
		}
		if n != before[name] {
			d[name] = n - before[name]
		}
	}
	return d
}

// sum adds up the calls of the named commands, or of all when none is named.
func sum(calls map[string]int64, names ...string) int64 {
	var n int64
	for name, c := range calls {
		if len(names) == 0 {
			n += c
			continue
		}
		for _, want := range names {
			if name == want {
				n += c
			}
		}
	}
	return n
}
