// Package redistest starts real redis-server processes on free loopback ports
// for tests. Each server lives in its own temporary directory, persists
// nothing, and is stopped by t.Cleanup.
package redistest

import (
	"bufio"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/redis/rueidis"

	"github.com/storytold/craft-releases/test/testkit"
)

// Server is one redis-server process started by Start.
type Server struct {
	t    testing.TB
	Addr string // host:port on loopback
	args []string
	cmd  *exec.Cmd
	ca   *CA         // StartTLS's: the server listens on TLS only, with a certificate ca signed
	tls  *tls.Config // StartTLS's: how Do, Query and Info reach it
	env  []string    // a Shift's: added to the environment redis-server inherits

	dir      string // a pooled server's directory; "" for a server of one test (t.TempDir)
	pristine string // a pooled server's CONFIG GET * and ACL LIST as launched
}

// Start runs redis-server on a free loopback port with the extra config
// arguments given (such as "--enable-debug-command", "yes") and waits until it
// answers PING. It fails the test when redis-server is missing or does not
// start. In a package whose TestMain runs Main, it hands out an empty server
// of the package's pool instead (see Main).
func Start(t testing.TB, args ...string) *Server {
	t.Helper()
	if s := fromPool(t, args); s != nil {
		return s
	}
	return start(t, &Server{t: t, args: args})
}

// start starts s, set up by its caller, and stops it when the test ends.
func start(t testing.TB, s *Server) *Server {
	t.Helper()
	if _, err := exec.LookPath("redis-server"); err != nil {
		t.Fatalf("redis-server not found (the test task installs it: apt-get install redis-server): %v", err)
	}
	s.startFresh()
	t.Cleanup(s.Stop)
	return s
}

// URL is the server's address as REDIS_URL takes it: rediss:// for
// StartTLS's.
func (s *Server) URL() string {
	if s.tls != nil {
		return "rediss://" + s.Addr
	}
	return "redis://" + s.Addr
}

// Stop kills the server; it is safe to call more than once.
func (s *Server) Stop() {
	if s.cmd == nil {
		return
	}
	_ = s.cmd.Process.Kill()
	_ = s.cmd.Wait()
	s.cmd = nil
}

// Restart stops the server and starts an empty one on the same port.
func (s *Server) Restart() {
	s.t.Helper()
	s.Stop()
	s.start()
}

// errExited is launch's error when redis-server exited before it answered.
var errExited = errors.New("redis-server exited")

// startFresh starts the server on a free port, and on another when that one
// was taken between freePort and redis-server's bind, as tests that run in
// parallel can make happen.
func (s *Server) startFresh() {
	s.t.Helper()
	for attempt := 1; ; attempt++ {
		s.Addr = net.JoinHostPort("127.0.0.1", strconv.Itoa(s.freePort()))
		err := s.launch()
		if err == nil {
			return
		}
		if !errors.Is(err, errExited) || attempt == 5 {
			s.t.Fatal(err)
		}
	}
}

// start starts the server again on its port.
func (s *Server) start() {
	s.t.Helper()
	if err := s.launch(); err != nil {
		s.t.Fatal(err)
	}
}

// launch runs redis-server on s.Addr and waits until it answers, as itself.
func (s *Server) launch() error {
	_, port, _ := net.SplitHostPort(s.Addr)
	ports := []string{"--port", port}
	if s.tls != nil {
		ports = []string{"--port", "0", "--tls-port", port}
	}
	dir := s.dir
	if dir == "" {
		dir = s.t.TempDir()
	}
	args := append(append(ports, "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
		"--dir", dir, "--protected-mode", "no",
	), s.args...)
	cmd := exec.Command("redis-server", args...)
	if s.env != nil {
		cmd.Env = append(os.Environ(), s.env...)
	}
	// A file, not a buffer: no goroutine copies it, so tests that count
	// goroutines see none of the server's.
	out, err := os.CreateTemp(dir, "redis-server-*.log")
	if err != nil {
		return err
	}
	defer out.Close()
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start redis-server: %w", err)
	}
	s.cmd = cmd
	deadline := time.Now().Add(10 * time.Second)
	for {
		if exited(cmd) {
			s.cmd = nil
			log, _ := os.ReadFile(out.Name())
			return fmt.Errorf("%w on %s: %s", errExited, s.Addr, lastLine(string(log)))
		}
		// Its own process id: not another test's server that took the port.
		info, err := s.Info("server")
		if err == nil && info["process_id"] == strconv.Itoa(cmd.Process.Pid) {
			return nil
		}
		if time.Now().After(deadline) {
			s.Stop()
			if err == nil {
				err = fmt.Errorf("process_id %q, not %d", info["process_id"], cmd.Process.Pid)
			}
			return fmt.Errorf("redis-server on %s did not answer INFO as itself: %w", s.Addr, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// exited reports whether cmd's process has exited, and then reaps it.
func exited(cmd *exec.Cmd) bool {
	var status syscall.WaitStatus
	pid, err := syscall.Wait4(cmd.Process.Pid, &status, syscall.WNOHANG, nil)
	return err == nil && pid == cmd.Process.Pid
}

// lastLine is the last non-empty line of out.
func lastLine(out string) string {
	lines := strings.Split(strings.TrimSpace(out), "\n")
	return lines[len(lines)-1]
}

// Do sends one command on a fresh connection and returns the first line of
// the reply without its type byte (an error reply is returned as an error).
// It is meant for administration in tests (ACL SETUSER, FLUSHALL, DEBUG),
// independent of the client under test.
func (s *Server) Do(args ...string) (string, error) {
	conn, err := dial(s.Addr, s.tls)
	if err != nil {
		return "", err
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(5 * time.Second))
	var b strings.Builder
	fmt.Fprintf(&b, "*%d\r\n", len(args))
	for _, a := range args {
		fmt.Fprintf(&b, "$%d\r\n%s\r\n", len(a), a)
	}
	if _, err := conn.Write([]byte(b.String())); err != nil {
		return "", err
	}
	line, err := bufio.NewReader(conn).ReadString('\n')
	if err != nil {
		return "", err
	}
	line = strings.TrimRight(line, "\r\n")
	if strings.HasPrefix(line, "-") {
		return "", fmt.Errorf("redis: %s", line[1:])
	}
	return strings.TrimLeft(line, "+:$*"), nil
}

// MustDo is Do that fails the test on error.
func (s *Server) MustDo(args ...string) string {
	s.t.Helper()
	reply, err := s.Do(args...)
	if err != nil {
		s.t.Fatalf("redis %v: %v", args, err)
	}
	return reply
}

// freePort returns a free port for the server: held until its test ends,
// or for a pooled server until the pool stops.
func (s *Server) freePort() int {
	s.t.Helper()
	if s.dir == "" {
		return testkit.FreePort(s.t)
	}
	port, release, err := testkit.HoldPort()
	if err != nil {
		s.t.Fatal(err)
	}
	pool.Lock()
	pool.release = append(pool.release, release)
	pool.Unlock()
	return port
}

// Denied returns one line for each entry of the server's ACL LOG (each
// command or key a user was denied), such as "user=craft-api reason=command
// object=hset", newest first, and resets the log. It fails the test when the
// server does not answer.
func (s *Server) Denied() []string {
	s.t.Helper()
	reply, err := s.Query("ACL", "LOG")
	if err != nil {
		s.t.Fatalf("acl log of %s: %v", s.Addr, err)
	}
	entries, _ := reply.([]any)
	lines := make([]string, 0, len(entries))
	for _, e := range entries {
		fields, _ := e.([]any)
		var parts []string
		for i := 0; i+1 < len(fields); i += 2 {
			switch k := fmt.Sprint(fields[i]); k {
			case "username", "reason", "context", "object":
				parts = append(parts, fmt.Sprintf("%s=%v", k, fields[i+1]))
			}
		}
		lines = append(lines, strings.Join(parts, " "))
	}
	s.MustDo("ACL", "LOG", "RESET")
	return lines
}

// Client returns a plain rueidis client of s (no client-side caching), as
// a tool or a test needs one, closed when the test ends.
func (s *Server) Client(t testing.TB) rueidis.Client {
	t.Helper()
	c, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{s.Addr}, TLSConfig: s.tls, DisableCache: true})
	if err != nil {
		t.Fatalf("client of %s: %v", s.Addr, err)
	}
	t.Cleanup(c.Close)
	return c
}
