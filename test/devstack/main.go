// Command devstack runs a local split deployment for a person to try: a
// redis-server, two pollers and two API pods, all on loopback, against a fake
// GitHub that publishes a new release every little while (or against the real
// GitHub with -github=real). Ctrl-C (SIGINT) or SIGTERM stops all of it, and
// it exits 0 once everything it started has exited.
//
//	go build -o devstack ./test/devstack && ./devstack   # what `task dev` runs
package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/storytold/craft-releases/pkg/config"
	"github.com/storytold/craft-releases/test/fakegithub"
	"github.com/storytold/craft-releases/test/testkit"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "devstack:", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	fs := flag.NewFlagSet("devstack", flag.ContinueOnError)
	source := fs.String("github", "fake", "fake: a fake GitHub on loopback that publishes releases; real: GitHub itself (set CRAFT_APPS_RELEASE_GITHUB_TOKEN)")
	every := fs.Duration("publish-every", 20*time.Second, "with -github=fake: how often a new release is published, round robin over the apps")
	apiAddrs := fs.String("api", "127.0.0.1:8081,127.0.0.1:8082", "the API pods' addresses, comma-separated")
	apiMetricsAddrs := fs.String("api-metrics", "127.0.0.1:9181,127.0.0.1:9182", "the API pods' METRICS_ADDR, comma-separated, one per pod")
	pollerAddrs := fs.String("pollers", "127.0.0.1:9091,127.0.0.1:9092", "the pollers' health addresses, comma-separated")
	if err := fs.Parse(args); err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	dir, err := os.MkdirTemp("", "craft-devstack-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	if built, err := buildBinaries(ctx, dir); !built {
		return err
	}

	redisPort, err := freePort()
	if err != nil {
		return err
	}
	env := map[string]string{
		"REDIS_URL":  "redis://127.0.0.1:" + strconv.Itoa(redisPort),
		"LOG_FORMAT": "console",
	}
	if *source == "fake" {
		closeGitHub, err := startFakeGitHub(ctx, env, *every)
		if err != nil {
			return err
		}
		defer closeGitHub()
	}

	st := &stack{env: env}
	defer st.stop()

	if err := st.start("redis", nil, "redis-server", "--port", strconv.Itoa(redisPort), "--bind", "127.0.0.1",
		"--save", "", "--appendonly", "no", "--dir", dir); err != nil {
		return fmt.Errorf("%w (install it: apt-get install redis-server)", err)
	}
	if err := waitListening(ctx, env["REDIS_URL"][len("redis://"):]); err != nil {
		if ctx.Err() != nil {
			return nil
		}
		return err
	}
	pollers, apis, apiMetrics := strings.Split(*pollerAddrs, ","), strings.Split(*apiAddrs, ","), strings.Split(*apiMetricsAddrs, ",")
	if len(apiMetrics) != len(apis) {
		return fmt.Errorf("-api-metrics has %d addresses for %d API pods", len(apiMetrics), len(apis))
	}
	for i, addr := range pollers {
		if err := st.start(fmt.Sprintf("poller-%d", i+1), map[string]string{"HTTP_ADDR": addr}, filepath.Join(dir, "poller")); err != nil {
			return err
		}
	}
	for i, addr := range apis {
		if err := st.start(fmt.Sprintf("api-%d", i+1), map[string]string{
			"HTTP_ADDR": addr, "METRICS_ADDR": apiMetrics[i],
		}, filepath.Join(dir, "api")); err != nil {
			return err
		}
	}
	fmt.Printf(`
the split deployment is up; Ctrl-C stops it
  curl -s http://%s/v1/craft_apps/release_info     # API pod 1 (all: %s)
  curl -s http://%s/metrics                        # poller 1 (all: %s)
  curl -s http://%s/metrics                        # API pod 1, its port that is not public (all: %s)
  REDIS_URL=%s go run ./cmd/poller status
  curl -s http://%s/v1/craft_apps/updates/%s/tauri/windows/x86_64/nsis?current_version=0.1.0   # and the other feeds: docs/updates.md
`, apis[0], *apiAddrs, pollers[0], *pollerAddrs, apiMetrics[0], *apiMetricsAddrs, env["REDIS_URL"], apis[0], updatesApp)
	<-ctx.Done()
	fmt.Println("\nstopping …")
	return nil
}

// publish makes every default app's first release at once, then a newer
// release of one app after another, so a person sees releases propagate.
// PhotoCraft, on the pre-release channel, always has a beta of its next
// version too, a day newer than its release.
func publish(ctx context.Context, gh *fakegithub.Server, every time.Duration, key testkit.MinisignKey) {
	apps := config.DefaultApps()
	for _, a := range apps {
		publishRelease(gh, a.Repo, "v1.0.0", key)
	}
	ticker := time.NewTicker(every)
	defer ticker.Stop()
	for n := 1; ; n++ {
		select {
		case <-ctx.Done():
			return
		case <-ticker.C:
		}
		a := apps[(n-1)%len(apps)]
		tag := fmt.Sprintf("v1.0.%d", (n-1)/len(apps)+1)
		publishRelease(gh, a.Repo, tag, key)
		fmt.Printf("[fake-github] published %s %s\n", a.Repo, tag)
	}
}

// prereleaseApp is the app the stack puts on the pre-release channel, and
// updatesApp the one whose releases carry every updater's files
// (fakegithub.WithUpdaterFiles), its Tauri bundles signed by a key made at
// start.
const (
	prereleaseApp = "photocraft"
	updatesApp    = "vectorcraft"
)

// publishRelease publishes repo's release tag and its release list: the
// release alone, and for prereleaseApp's repository a beta before it; for
// updatesApp's, with every updater's files, signed with key.
func publishRelease(gh *fakegithub.Server, repo, tag string, key testkit.MinisignKey) {
	rel := fakegithub.NewRelease(repo, tag)
	if repo == "storytold/"+updatesApp {
		rel = fakegithub.WithUpdaterFiles(repo, rel, key.Sign)
	}
	gh.Publish(repo, rel)
	if repo != "storytold/"+prereleaseApp {
		return
	}
	beta := fakegithub.NewRelease(repo, "v1.1.0-beta."+strings.TrimPrefix(tag, "v1.0."))
	at := rel.PublishedAt.Add(24 * time.Hour)
	beta.Prerelease, beta.PublishedAt = true, &at
	gh.SetList(repo, beta, rel)
}

// prefix copies r to stdout line by line, each line led by name.
func prefix(name string, r io.Reader) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		fmt.Printf("[%s] %s\n", name, sc.Text())
	}
}

// waitListening waits until something accepts connections on addr.
func waitListening(ctx context.Context, addr string) error {
	for {
		conn, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			return conn.Close()
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, errors.New("no free loopback port")
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// buildBinaries builds cmd/api and cmd/poller into dir. It reports false
// when they were not built: with the error, or with none after Ctrl-C, which
// reached the compiler too and is a stop, not a failure.
func buildBinaries(ctx context.Context, dir string) (bool, error) {
	fmt.Println("building cmd/api and cmd/poller …")
	for _, name := range []string{"api", "poller"} {
		build := exec.Command("go", "build", "-o", filepath.Join(dir, name), "github.com/storytold/craft-releases/cmd/"+name)
		build.Stdout, build.Stderr = os.Stdout, os.Stderr
		if err := build.Run(); err != nil {
			if ctx.Err() != nil {
				fmt.Println("stopped before anything started")
				return false, nil
			}
			return false, fmt.Errorf("build %s: %w", name, err)
		}
	}
	return true, nil
}

// startFakeGitHub serves a fake GitHub on loopback that publishes a release
// every so often, and points env's processes at it with short intervals.
// It returns what closes it.
func startFakeGitHub(ctx context.Context, env map[string]string, every time.Duration) (func(), error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	key, err := testkit.GenerateMinisignKey()
	if err != nil {
		ln.Close()
		return nil, err
	}
	gh := fakegithub.Listen(ln)
	go publish(ctx, gh, every, key)
	env["CRAFT_APPS_RELEASE_GITHUB_API_URL"] = gh.URL()
	env["CRAFT_APPS_RELEASE_TAURI_PUBKEYS"] = updatesApp + "=" + key.PublicKey()
	env["CRAFT_APPS_RELEASE_POLL_INTERVAL_SECS"] = "10"
	env["CRAFT_APPS_RELEASE_TICK_SECS"] = "2"
	env["CRAFT_APPS_RELEASE_STARTUP_JITTER_SECS"] = "2"
	env["CRAFT_APPS_RELEASE_REQUEST_SPACING_MS"] = "100"
	env["CRAFT_APPS_RELEASE_PRERELEASE_APPS"] = prereleaseApp
	fmt.Printf("fake GitHub on %s, a new release every %s, %s on the pre-release channel, %s's releases with every updater's files\n",
		gh.URL(), every, prereleaseApp, updatesApp)
	return gh.Close, nil
}

// stack is the deployment's processes, each with env and its own
// variables, its output prefixed with its name; stop ends them together.
type stack struct {
	env   map[string]string
	procs []*exec.Cmd
	wg    sync.WaitGroup
}

// start runs path with args as name.
func (s *stack) start(name string, extra map[string]string, path string, args ...string) error {
	cmd := exec.Command(path, args...)
	cmd.Env = os.Environ()
	for k, v := range s.env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	for k, v := range extra {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	cmd.Stderr = cmd.Stdout
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start %s: %w", name, err)
	}
	s.procs = append(s.procs, cmd)
	s.wg.Add(1)
	go func() { defer s.wg.Done(); prefix(name, out) }()
	return nil
}

// stop sends every process SIGTERM and waits for them all.
func (s *stack) stop() {
	for _, p := range s.procs {
		_ = p.Process.Signal(syscall.SIGTERM)
	}
	s.wg.Wait()
	for _, p := range s.procs {
		_ = p.Wait()
	}
	if len(s.procs) > 0 {
		fmt.Println("stopped")
	}
}
