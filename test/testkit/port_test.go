package testkit

import (
	"bufio"
	"os"
	"os/exec"
	"strconv"
	"testing"
)

// TestFreePortReserves checks that a port FreePort handed out is kept from
// every other FreePort until the test that took it ends: in this process,
// and in another test process (go test runs packages side by side).
func TestFreePortReserves(t *testing.T) {
	if port := os.Getenv("TESTKIT_HOLD_PORT"); port != "" {
		// The child: hold the port until the parent closes stdin.
		p, _ := strconv.Atoi(port)
		if !reserve(p) {
			os.Stdout.WriteString("taken\n")
			return
		}
		os.Stdout.WriteString("held\n")
		_, _ = bufio.NewReader(os.Stdin).ReadString('\n')
		return
	}
	var port int
	t.Run("taker", func(t *testing.T) {
		port = FreePort(t)
		if reserve(port) {
			t.Fatalf("port %d reserved twice in one process", port)
		}
	})
	if !reserve(port) {
		t.Fatalf("port %d still reserved after its test ended", port)
	}
	release(port)

	child := exec.Command(os.Args[0], "-test.run=^TestFreePortReserves$")
	child.Env = append(os.Environ(), "TESTKIT_HOLD_PORT="+strconv.Itoa(port))
	stdin, err := child.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := child.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := child.Start(); err != nil {
		t.Fatal(err)
	}
	if line, _ := bufio.NewReader(stdout).ReadString('\n'); line != "held\n" {
		t.Fatalf("the other process says %q, want held", line)
	}
	if reserve(port) {
		t.Errorf("port %d reserved here while another process holds it", port)
	}
	stdin.Close()
	if err := child.Wait(); err != nil {
		t.Fatal(err)
	}
	if !reserve(port) {
		t.Errorf("port %d still reserved after the other process exited", port)
	}
	release(port)
}
