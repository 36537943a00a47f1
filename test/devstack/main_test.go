package main

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/storytold/craft-releases/test/testkit"
)

func TestMain(m *testing.M) { os.Exit(testkit.IntegrationMain(m.Run)) }

// TestCtrlC runs `task dev` as the README says, and sends SIGINT to its
// whole process group, as a terminal's Ctrl-C does: the devstack must stop
// everything it started, and the task exit 0.
func TestCtrlC(t *testing.T) {
	apis := []string{testkit.FreeAddr(t), testkit.FreeAddr(t)}
	apiMetrics := []string{testkit.FreeAddr(t), testkit.FreeAddr(t)}
	pollers := []string{testkit.FreeAddr(t), testkit.FreeAddr(t)}
	cmd := exec.Command("go", "tool", "-modfile=tools/go.mod", "task", "dev", "--",
		"-api", strings.Join(apis, ","), "-api-metrics", strings.Join(apiMetrics, ","), "-pollers", strings.Join(pollers, ","))
	cmd.Dir = filepath.Join("..", "..")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	r, w := io.Pipe()
	cmd.Stdout, cmd.Stderr = w, w
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) })
	logs := &testkit.Buffer{}
	up := make(chan struct{})
	go func() {
		sc := bufio.NewScanner(r)
		for sc.Scan() {
			_, _ = logs.Write([]byte(sc.Text() + "\n")) // a buffer: it never fails
			if strings.HasPrefix(sc.Text(), "the split deployment is up") {
				close(up)
			}
		}
	}()
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait(); w.Close() }()

	select {
	case <-up:
	case err := <-exited:
		t.Fatalf("devstack exited before it was up: %v\n%s", err, logs)
	case <-time.After(5 * time.Minute):
		t.Fatalf("task dev not up after 5 minutes\n%s", logs)
	}
	for _, addr := range apis {
		testkit.Eventually(t, addr+" answers", func() bool {
			res, err := http.Get("http://" + addr + "/readyz")
			if err != nil {
				return false
			}
			res.Body.Close()
			return res.StatusCode == http.StatusOK
		})
	}

	if err := syscall.Kill(-cmd.Process.Pid, syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-exited:
		if err != nil {
			t.Errorf("task dev after Ctrl-C: %v, want exit status 0\n%s", err, logs)
		}
	case <-time.After(time.Minute):
		t.Fatalf("devstack still running a minute after Ctrl-C\n%s", logs)
	}
	if !strings.Contains(logs.String(), "\nstopped\n") {
		t.Errorf("devstack did not say it stopped everything\n%s", logs)
	}
	for _, addr := range slices.Concat(apis, apiMetrics, pollers) {
		if conn, err := net.DialTimeout("tcp", addr, time.Second); err == nil {
			conn.Close()
			t.Errorf("%s still accepts connections after the devstack exited", addr)
		}
	}
}
