package e2e

import (
	"crypto/tls"
	"fmt"
	"maps"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
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
var (
	binDir string
	build  = sync.OnceValue(func() error {
		if out, err := exec.Command("go", "build", "-o", binDir+string(filepath.Separator), module+"/cmd/api", module+"/cmd/poller").CombinedOutput(); err != nil {
			return fmt.Errorf("go build: %w\n%s", err, out)
		}
		return nil
	})
)

func TestMain(m *testing.M) {
	if file := os.Getenv(baselineEnv); file != "" {
		// The test binary re-executed as BenchmarkThroughput's reference server.
		if err := serveBaseline(file); err != nil {
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
		binDir = dir
		defer os.RemoveAll(dir)
		return mariadbtest.Main(m)
	}))
}

// binary returns the path of cmd/<name>, building cmd/api and cmd/poller the
// first time it is called.
func binary(t testing.TB, name string) string {
	t.Helper()
	if err := build(); err != nil {
		t.Fatal(err)
	}
	return filepath.Join(binDir, name)
}

// proc is one process under test: a pod, a poller, nginx or the reference
// server.
type proc struct {
	name    string
	cmd     *exec.Cmd
	base    string // "http://" and the address it logged as listening on
	metrics string // the same of an API pod's metrics port
	logs    *testkit.Buffer

	exited chan struct{} // closed once the process exited and its output was read
	err    error         // its exit status, once exited is closed

	stopOnce sync.Once
}

// start runs path with exactly env (nothing inherited, so a developer's
// REDIS_URL or token cannot leak in), HTTP_ADDR and METRICS_ADDR on free
// loopback ports unless env has them, and waits until it logs the address it
// listens on and /healthz answers 200. When the test ends it is stopped with
// SIGTERM, and the test fails unless it exits 0; its output is shown if the
// test failed.
func start(t testing.TB, name, path string, env map[string]string) *proc {
	t.Helper()
	cmd := exec.Command(path)
	cmd.Env = []string{"HTTP_ADDR=127.0.0.1:0", "METRICS_ADDR=127.0.0.1:0"} // the poller reads no METRICS_ADDR
	for k, v := range env {
		cmd.Env = append(cmd.Env, k+"="+v) // the last of a name wins
	}
	p := spawn(t, name, cmd)
	t.Cleanup(func() {
		p.stop(t)
		p.reap(t, p.cmd.Process.Kill) // a test that took over stopping may have failed half-way
	})
	testkit.Eventually(t, name+" listens and answers /healthz", func() bool {
		select {
		case <-p.exited:
			t.Fatalf("%s exited at start-up: %v\n%s", name, p.err, p.logs)
		default:
		}
		for _, l := range p.logs.Lines("listening") {
			if addr, _ := l["addr"].(string); addr != "" && p.base == "" {
				metrics, _ := l["metrics_addr"].(string)
				p.base, p.metrics = "http://"+addr, "http://"+metrics
			}
		}
		return p.base != "" && p.status("/healthz") == http.StatusOK
	})
	return p
}

// deployment is the fleet a test or a benchmark runs: pollers asking the
// fake GitHub each second and writing to a Redis of any topology, and pods
// reading it, or, without a Redis, pods polling GitHub themselves with a
// token; every app due at once, no spacing between requests.
type deployment struct {
	gh                *fakegithub.Server
	url, caFile       string            // the Redis ("": standalone pods), REDIS_TLS_CA_FILE for rediss://
	apps              string            // CRAFT_APPS_RELEASE_APPS; "" for the default apps
	pollerEnv, podEnv map[string]string // set over each one's defaults; "" unsets
}

// env is the environment of a cmd/<kind> of d.
func (d deployment) env(kind string) map[string]string {
	env := map[string]string{"REDIS_URL": d.url, "REDIS_TLS_CA_FILE": d.caFile, "CRAFT_APPS_RELEASE_APPS": d.apps, "SHUTDOWN_TIMEOUT_SECS": "5"}
	extra := d.podEnv
	switch {
	case kind == "poller":
		env["CRAFT_APPS_RELEASE_POLL_INTERVAL_SECS"], env["CRAFT_APPS_RELEASE_TICK_SECS"], extra = "1", "1", d.pollerEnv
	case d.url == "":
		env["CRAFT_APPS_RELEASE_GITHUB_TOKEN"] = "e2e-token"
	default:
		env["CRAFT_APPS_HYDRATE_TIMEOUT_SECS"] = "10"
	}
	if kind == "poller" || d.url == "" {
		env["CRAFT_APPS_RELEASE_GITHUB_API_URL"] = d.gh.URL()
		env["CRAFT_APPS_RELEASE_STARTUP_JITTER_SECS"], env["CRAFT_APPS_RELEASE_REQUEST_SPACING_MS"] = "0", "0"
	}
	maps.Copy(env, extra)
	maps.DeleteFunc(env, func(_, v string) bool { return v == "" })
	return env
}

// pollers starts n pollers of d, named poller-1 and on.
func (d deployment) pollers(t testing.TB, n int) []*proc { return d.start(t, "poller", n) }

// pods starts n API pods of d, named api-1 and on.
func (d deployment) pods(t testing.TB, n int) []*proc { return d.start(t, "api", n) }

func (d deployment) start(t testing.TB, kind string, n int) []*proc {
	t.Helper()
	procs := make([]*proc, n)
	for i := range procs {
		procs[i] = start(t, fmt.Sprintf("%s-%d", kind, i+1), binary(t, kind), d.env(kind))
	}
	return procs
}

// spawn starts cmd, its output kept in the proc's logs.
func spawn(t testing.TB, name string, cmd *exec.Cmd) *proc {
	t.Helper()
	p := &proc{name: name, cmd: cmd, logs: &testkit.Buffer{}, exited: make(chan struct{})}
	cmd.Stdout, cmd.Stderr, cmd.WaitDelay = p.logs, p.logs, waitFor
	if err := cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", name, err)
	}
	go func() {
		p.err = cmd.Wait()
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
		select {
		case <-p.exited:
		default:
			if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
				t.Errorf("signal %s: %v", p.name, err)
			}
		}
		select {
		case <-p.exited:
			if p.err != nil {
				t.Errorf("%s exited with %v, want status 0", p.name, p.err)
			}
		case <-time.After(waitFor):
			_ = p.cmd.Process.Kill()
			<-p.exited
			t.Errorf("%s still ran %v after SIGTERM; killed", p.name, waitFor)
		}
	})
}

func (p *proc) status(path string) int { return testkit.Status(p.base + path) }

// rss returns the process's resident memory in bytes (VmRSS) and its peak (VmHWM).
func (p *proc) rss(t testing.TB) (rss, peak int64) {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", p.cmd.Process.Pid))
	if err != nil {
		t.Fatalf("read %s's status: %v", p.name, err)
	}
	for line := range strings.Lines(string(b)) {
		_, _ = fmt.Sscanf(line, "VmRSS: %d kB", &rss)
		_, _ = fmt.Sscanf(line, "VmHWM: %d kB", &peak)
	}
	if rss == 0 || peak == 0 {
		t.Fatalf("no VmRSS or VmHWM in %s's status:\n%s", p.name, b)
	}
	return rss << 10, peak << 10
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
	// after it, where the state is field 3 of proc(5); utime and stime are 14 and 15.
	_, rest, _ := strings.Cut(string(b), ") ")
	f := strings.Fields(rest)
	var utime, stime int64
	if len(f) < 13 {
		t.Fatalf("%s's stat %q", p.name, b)
	}
	if _, err := fmt.Sscan(f[11]+" "+f[12], &utime, &stime); err != nil {
		t.Fatalf("%s's stat %q: %v", p.name, b, err)
	}
	return time.Duration(utime+stime) * 10 * time.Millisecond
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

// fetch is ask that fails the test on a transport error.
func fetch(t testing.TB, url string, header ...string) answer {
	t.Helper()
	res, body := testkit.Get(t, url, header...)
	return answer{status: res.StatusCode, header: res.Header, body: body}
}

// get asks the pod's endpoint and fails the test unless it answers 200.
func (p *proc) get(t testing.TB, header ...string) answer {
	t.Helper()
	a := fetch(t, p.base+infoPath, header...)
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
	info, err := testkit.DecodeInfo(body)
	return fmt.Sprintf("%v %v (%d bytes; %v)", tags(info), fetched(info), len(body), err)
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
