package check

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/storytold/craft-releases/test/testkit"

	"github.com/storytold/craft-releases/pkg/daemon"
)

// dockerfile parses deploy/Dockerfile or fails the test.
func dockerfile(t testing.TB) []Stage {
	t.Helper()
	stages, err := ParseDockerfile(readFile(t, "../Dockerfile"))
	if err != nil {
		t.Fatal(err)
	}
	return stages
}

func TestDockerfile(t *testing.T) {
	t.Parallel()
	real := readFile(t, "../Dockerfile")
	tests := []struct {
		name string
		text string
		want string // a part of a problem; "" for none
	}{
		{"deploy/Dockerfile", real, ""},
		{"cgo left on", strings.Replace(real, "ENV CGO_ENABLED=0", "ENV CGO_ENABLED=1", 1), "without CGO_ENABLED=0"},
		{"no -trimpath", strings.Replace(real, "-trimpath ", "", 1), "without -trimpath"},
		{"no version stamp", strings.Replace(real, " -X main.version=${VERSION}", "", 1), "without -ldflags"},
		{"one binary", strings.Replace(real, " ./cmd/poller", "", 1), "without ./cmd/poller"},
		{"a full base image", strings.Replace(real, "FROM scratch", "FROM debian:12", 1), "based on debian:12"},
		{"root", strings.Replace(real, "USER 65532:65532", "USER 0", 1), `runs as user "0"`},
		{"a user name", strings.Replace(real, "USER 65532:65532", "USER nonroot", 1), `runs as user "nonroot"`},
		{"no user", strings.Replace(real, "USER 65532:65532", "", 1), `runs as user ""`},
		{"binaries elsewhere", strings.Replace(real, "/out/poller /usr/local/bin/", "/out/poller /", 1), "does not copy api and poller"},
		{"no go build", strings.Replace(real, "go build", "go vet", 1), "no build stage runs go build"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			stages, err := ParseDockerfile(tt.text)
			if err != nil {
				t.Fatal(err)
			}
			_, problems := Dockerfile(stages)
			switch {
			case tt.want == "" && len(problems) > 0:
				t.Errorf("got problems:\n%s", strings.Join(problems, "\n"))
			case tt.want != "" && !slices.ContainsFunc(problems, func(p string) bool { return strings.Contains(p, tt.want) }):
				t.Errorf("got problems %q, want one containing %q", problems, tt.want)
			}
		})
	}
}

func TestParseDockerfile(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		text    string
		want    []Stage
		wantErr string
	}{
		{"continuations and comments", "ARG V=1\n# a comment\nFROM a AS b\nRUN x \\\n  y\n\nFROM scratch\nUSER 1\n", []Stage{
			{{Line: 3, Cmd: "FROM", Args: "a AS b"}, {Line: 4, Cmd: "RUN", Args: "x  y"}},
			{{Line: 7, Cmd: "FROM", Args: "scratch"}, {Line: 8, Cmd: "USER", Args: "1"}},
		}, ""},
		{"lower case", "from scratch\ncmd [\"/x\"]\n", []Stage{{{Line: 1, Cmd: "FROM", Args: "scratch"}, {Line: 2, Cmd: "CMD", Args: `["/x"]`}}}, ""},
		{"no FROM", "ARG X\n", nil, "no FROM"},
		{"RUN before FROM", "RUN x\nFROM scratch\n", nil, "RUN before the first FROM"},
		{"a dangling continuation", "FROM scratch\nRUN x \\", nil, "continues past the end"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseDockerfile(tt.text)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("got error %v, want one containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if fmt.Sprint(got) != fmt.Sprint(tt.want) {
				t.Errorf("got %+v, want %+v", got, tt.want)
			}
		})
	}
}

func TestShellWords(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in   string
		want []string
	}{
		{`go build -o /out/ ./cmd/api`, []string{"go", "build", "-o", "/out/", "./cmd/api"}},
		{`-ldflags "-s -w -X main.version=${VERSION}" x`, []string{"-ldflags", "-s -w -X main.version=${VERSION}", "x"}},
		{`a 'b c'  ""`, []string{"a", "b c", ""}},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			if got := shellWords(tt.in); !slices.Equal(got, tt.want) {
				t.Errorf("shellWords(%q) = %q, want %q", tt.in, got, tt.want)
			}
		})
	}
}

func TestCopyContextFollowsDockerignore(t *testing.T) {
	t.Parallel()
	files, err := CopyContext("../..", t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"go.mod", "go.sum", "cmd/api/main.go", "cmd/poller/main.go", "pkg/redis/store/guard.lua"} {
		if !slices.Contains(files, want) {
			t.Errorf("the build context lacks %s", want)
		}
	}
	for _, f := range files {
		if strings.HasPrefix(f, ".git/") || strings.HasPrefix(f, "deploy/") || strings.HasSuffix(f, "_test.go") {
			t.Errorf("the build context sends %s", f)
		}
	}
}

// TestImageBinaries builds both binaries as deploy/Dockerfile does, from
// the files .dockerignore lets into the build context, and checks that they
// are static, carry the version, and serve the paths the manifests probe.
// No Docker engine is needed.
func TestImageBinaries(t *testing.T) {
	t.Parallel()
	build, problems := Dockerfile(dockerfile(t))
	if len(problems) > 0 {
		t.Fatalf("deploy/Dockerfile:\n%s", strings.Join(problems, "\n"))
	}
	src := t.TempDir()
	if _, err := CopyContext("../..", src); err != nil {
		t.Fatal(err)
	}
	out := t.TempDir()
	version := "check-" + strconv.FormatInt(time.Now().UnixNano(), 36)
	args := []string{"build"}
	for i, a := range build.Args {
		if i > 0 && build.Args[i-1] == "-o" {
			a = out + string(filepath.Separator)
		}
		args = append(args, strings.ReplaceAll(a, "${VERSION}", version))
	}
	cmd := exec.Command("go", args...)
	cmd.Dir = src
	cmd.Env = os.Environ()
	for _, e := range build.Env {
		if !strings.Contains(e, "$") { // GOOS=$TARGETOS and the like: this machine's
			cmd.Env = append(cmd.Env, e)
		}
	}
	if output, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go %s: %v\n%s", strings.Join(args, " "), err, output)
	}

	probed := map[string][]string{}
	for _, w := range render(t, "../overlays/production").ours() {
		for _, p := range []*corev1.Probe{w.c.LivenessProbe, w.c.ReadinessProbe, w.c.StartupProbe} {
			if p != nil && p.HTTPGet != nil {
				probed[w.binary] = append(probed[w.binary], p.HTTPGet.Path)
			}
		}
	}
	tests := []struct {
		binary string
		env    []string // besides HTTP_ADDR: a mode that needs neither Redis nor GitHub
	}{
		{"api", []string{"CRAFT_APPS_RELEASE_POLLING_ENABLED=false"}},
		{"poller", []string{"CRAFT_APPS_RELEASE_POLLING_ENABLED=false", "CRAFT_APPS_RELEASE_COORDINATION_ENABLED=false"}},
	}
	for _, tt := range tests {
		path := filepath.Join(out, tt.binary)
		t.Run(tt.binary+" is static", func(t *testing.T) {
			if err := Static(path); err != nil {
				t.Error(err)
			}
		})
		t.Run(tt.binary+" carries the version", func(t *testing.T) {
			data, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Contains(data, []byte(version)) {
				t.Errorf("%s does not contain the version %q that -X main.version set", path, version)
			}
		})
		t.Run(tt.binary+" --help", func(t *testing.T) {
			output, err := exec.Command(path, "--help").CombinedOutput()
			if err != nil || !bytes.Contains(output, []byte("HTTP_ADDR")) {
				t.Errorf("%s --help: %v\n%s", path, err, output)
			}
		})
		t.Run(tt.binary+" serves the probed paths", func(t *testing.T) {
			paths := probed[tt.binary]
			if !slices.Contains(paths, daemon.HealthzPath) || !slices.Contains(paths, daemon.ReadyzPath) {
				t.Fatalf("the manifests probe %q on the %s, want %s and %s among them", paths, tt.binary, daemon.HealthzPath, daemon.ReadyzPath)
			}
			addr, metricsAddr := serve(t, path, tt.env)
			// The scrape path too, where the manifests' scrape annotations
			// and PodMonitor look: the API's METRICS_ADDR, the poller's one
			// port. The API's public port must not serve it.
			type get struct {
				addr, path string
				want       int
			}
			gets := []get{{metricsAddr, daemon.MetricsPath, http.StatusOK}}
			for _, p := range paths {
				gets = append(gets, get{addr, p, http.StatusOK})
			}
			if tt.binary == "api" {
				gets = append(gets, get{addr, daemon.MetricsPath, http.StatusNotFound})
			}
			for _, p := range gets {
				resp, err := http.Get("http://" + p.addr + p.path)
				if err != nil {
					t.Fatal(err)
				}
				resp.Body.Close()
				if resp.StatusCode != p.want {
					t.Errorf("GET %s on %s of the %s: got %s, want %d", p.path, p.addr, tt.binary, resp.Status, p.want)
				}
			}
		})
	}
}

// serve starts the binary at path with env, HTTP_ADDR and METRICS_ADDR on
// free loopback ports, waits until it answers /healthz, and returns where
// it serves /metrics: the API's METRICS_ADDR, the poller's HTTP_ADDR.
// Cleanup stops it with SIGTERM and wants a clean exit.
func serve(t testing.TB, path string, env []string) (addr, metricsAddr string) {
	t.Helper()
	addr, metricsAddr = testkit.FreeAddr(t), testkit.FreeAddr(t)
	var logs bytes.Buffer
	cmd := exec.Command(path)
	cmd.Env = append([]string{"HTTP_ADDR=" + addr, "METRICS_ADDR=" + metricsAddr}, env...)
	if filepath.Base(path) == "poller" {
		metricsAddr = addr
	}
	cmd.Stdout, cmd.Stderr = &logs, &logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	var waitErr error
	go func() { waitErr = cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
			if waitErr != nil {
				t.Errorf("%s after SIGTERM: %v\n%s", path, waitErr, logs.String())
			}
		case <-time.After(20 * time.Second):
			_ = cmd.Process.Kill()
			t.Errorf("%s did not stop within 20 s of SIGTERM", path)
		}
	})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+daemon.HealthzPath, nil)
		if resp, err := http.DefaultClient.Do(req); err == nil {
			resp.Body.Close()
			return addr, metricsAddr
		}
		select {
		case <-exited:
			t.Fatalf("%s exited before serving: %v\n%s", path, waitErr, logs.String())
		case <-ctx.Done():
			_ = cmd.Process.Kill()
			<-exited
			t.Fatalf("%s did not answer %s within 10 s\n%s", path, daemon.HealthzPath, logs.String())
		case <-time.After(50 * time.Millisecond):
		}
	}
}

func TestStatic(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		path string
		want string // a part of the error; "" for none
	}{
		{"a shell", "/bin/sh", "dynamically linked"},
		{"not an executable", "../Dockerfile", "bad magic number"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := Static(tt.path)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Static(%s): got %v, want an error containing %q", tt.path, err, tt.want)
			}
		})
	}
}
