// Package mariadbtest starts real MariaDB servers (mariadbd) on free loopback
// ports for tests. A test binary installs one template data directory the
// first time it needs a server (a few seconds) and copies it for every server
// it starts (about a second each), so a package shares one server through
// Shared and gives each test its own database with NewDatabase; a test that
// stops its server takes its own from Start.
//
// A package that uses it calls Main from its TestMain, which stops the shared
// server and removes the template once the tests are done:
//
//	func TestMain(m *testing.M) { os.Exit(mariadbtest.Main(m)) }
package mariadbtest

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/storytold/craft-releases/test/testkit"
)

// startTimeout bounds how long a server may take to accept connections.
const startTimeout = 60 * time.Second

// tuning keeps a test server small and fast; durability is not wanted.
var tuning = []string{
	"--innodb-buffer-pool-size=32M",
	"--innodb-log-file-size=8M",
	"--innodb-flush-log-at-trx-commit=0",
	"--skip-name-resolve",
}

// process is what one test binary shares: the template data directory and
// the shared server. Main sets main; the rest is made on first use.
var process struct {
	mu       sync.Mutex
	main     bool
	dir      string // holds the template and every server's files
	template string // an installed, never started data directory
	shared   *Server
	err      error // of the template's installation
}

// Main runs m's tests, then stops the shared server and removes every file
// the package made. It returns m.Run's exit code, for os.Exit.
func Main(m *testing.M) int {
	process.mu.Lock()
	process.main = true
	process.mu.Unlock()
	code := m.Run()
	process.mu.Lock()
	defer process.mu.Unlock()
	if process.shared != nil {
		process.shared.Stop()
	}
	if process.dir != "" {
		os.RemoveAll(process.dir)
	}
	return code
}

// Server is one mariadbd process. Its methods are safe for concurrent use,
// except Stop and Restart, which a test calls from one goroutine.
type Server struct {
	Addr string // host:port on loopback

	dir  string // data directory and socket
	mu   sync.Mutex
	cmd  *exec.Cmd
	done chan struct{} // closed when cmd exits
	root *sql.DB       // administration as root over TCP
	next int           // databases made by NewDatabase
}

// errMissing is installTemplate's error when MariaDB is not installed.
var errMissing = errors.New("mariadb is not installed")

// fail fails tb with err, or skips it when MariaDB is missing and the
// integration switch is off: the unit set needs only Go and redis-server.
func fail(tb testing.TB, err error) {
	tb.Helper()
	if errors.Is(err, errMissing) && !testkit.IntegrationOn() {
		tb.Skip(err)
	}
	tb.Fatal(err)
}

// Shared returns the package's shared server, starting it the first time.
// It fails the test when MariaDB does not start or the package did not call
// Main from TestMain, and when MariaDB is missing (see fail).
func Shared(tb testing.TB) *Server {
	tb.Helper()
	process.mu.Lock()
	defer process.mu.Unlock()
	if process.shared != nil {
		return process.shared
	}
	// The server outlives the test that starts it: its failures are
	// reported by whichever test uses it at the time.
	s, err := newServer()
	if err != nil {
		fail(tb, err)
	}
	process.shared = s
	return s
}

// Start returns a server of the test's own, stopped by tb.Cleanup, for a test
// that stops or restarts it. It fails the test as Shared does.
func Start(tb testing.TB) *Server {
	tb.Helper()
	process.mu.Lock()
	s, err := newServer()
	process.mu.Unlock()
	if err != nil {
		fail(tb, err)
	}
	tb.Cleanup(func() {
		s.Stop()
		os.RemoveAll(s.dir)
	})
	return s
}

// newServer copies the template and starts a server on it. process.mu must
// be held.
func newServer() (*Server, error) {
	if !process.main {
		return nil, errors.New("mariadbtest: call mariadbtest.Main from the package's TestMain")
	}
	if err := installTemplate(); err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp(process.dir, "server-")
	if err != nil {
		return nil, fmt.Errorf("mariadbtest: %w", err)
	}
	if err := os.CopyFS(filepath.Join(dir, "data"), os.DirFS(process.template)); err != nil {
		return nil, fmt.Errorf("mariadbtest: copy the template: %w", err)
	}
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	s := &Server{Addr: net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), dir: dir}
	cfg := mysql.NewConfig()
	cfg.User, cfg.Net, cfg.Addr = "root", "tcp", s.Addr
	cfg.Timeout = 5 * time.Second
	// Administration must not count in the server's prepared statements,
	// which tests measure.
	cfg.InterpolateParams = true
	connector, err := mysql.NewConnector(cfg)
	if err != nil {
		return nil, fmt.Errorf("mariadbtest: %w", err)
	}
	s.root = sql.OpenDB(connector)
	if err := s.start(); err != nil {
		s.root.Close()
		return nil, err
	}
	return s, nil
}

// installTemplate runs mariadb-install-db once per test binary. process.mu
// must be held.
func installTemplate() error {
	if process.template != "" || process.err != nil {
		return process.err
	}
	for _, bin := range []string{"mariadb-install-db", "mariadbd"} {
		if _, err := exec.LookPath(bin); err != nil {
			process.err = fmt.Errorf("mariadbtest: %s not found (the test task installs it: apt-get install mariadb-server): %w: %w", bin, errMissing, err)
			return process.err
		}
	}
	// Unix socket paths are short (108 bytes), so everything lives in a
	// short directory of its own rather than under a test's TempDir.
	dir, err := os.MkdirTemp("", "mariadbtest-")
	if err != nil {
		process.err = fmt.Errorf("mariadbtest: %w", err)
		return process.err
	}
	process.dir = dir
	template := filepath.Join(dir, "template")
	// Its own temporary directory: bootstrap servers of test binaries run
	// at once would collide on the names of their temporary tables in /tmp.
	args := append([]string{"--no-defaults", "--datadir=" + template, "--tmpdir=" + dir,
		"--auth-root-authentication-method=normal", "--skip-test-db",
		// Without --force the script refuses to run where neither the host
		// name nor localhost resolves (containers, sandboxes); the servers
		// resolve no names anyway (--skip-name-resolve) and root is reached
		// as root@127.0.0.1.
		"--force"}, tuning...)
	args = append(args, asRoot()...)
	out, err := exec.Command("mariadb-install-db", args...).CombinedOutput()
	if err != nil {
		process.err = fmt.Errorf("mariadbtest: mariadb-install-db: %w\n%s", err, out)
		return process.err
	}
	process.template = template
	return nil
}

// asRoot is the flag mariadbd needs to run as root, the user of CI containers.
func asRoot() []string {
	if os.Geteuid() == 0 {
		return []string{"--user=root"}
	}
	return nil
}

// start runs mariadbd on s's data directory and port and waits until root
// can run a query.
func (s *Server) start() error {
	_, port, _ := net.SplitHostPort(s.Addr)
	args := append([]string{"--no-defaults",
		"--datadir=" + filepath.Join(s.dir, "data"),
		"--socket=" + filepath.Join(s.dir, "sock"),
		"--pid-file=" + filepath.Join(s.dir, "pid"),
		"--log-error=" + filepath.Join(s.dir, "error.log"),
		"--tmpdir=" + s.dir,
		"--port=" + port,
		"--bind-address=127.0.0.1",
		"--skip-log-bin",
	}, tuning...)
	args = append(args, asRoot()...)
	cmd := exec.Command("mariadbd", args...)
	cmd.SysProcAttr = sysProcAttr()
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("mariadbtest: start mariadbd: %w", err)
	}
	done := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		close(done)
	}()
	s.mu.Lock()
	s.cmd, s.done = cmd, done
	s.mu.Unlock()

	deadline := time.Now().Add(startTimeout)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		err := s.root.PingContext(ctx)
		cancel()
		if err == nil {
			return nil
		}
		select {
		case <-done:
			return fmt.Errorf("mariadbtest: mariadbd on %s exited at start-up: %s", s.Addr, s.errorLog())
		default:
		}
		if time.Now().After(deadline) {
			s.Stop()
			return fmt.Errorf("mariadbtest: mariadbd on %s did not answer within %v: %w\n%s", s.Addr, startTimeout, err, s.errorLog())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// errorLog returns the end of the server's error log, for failure messages.
func (s *Server) errorLog() string {
	b, err := os.ReadFile(filepath.Join(s.dir, "error.log"))
	if err != nil {
		return err.Error()
	}
	if len(b) > 4000 {
		b = b[len(b)-4000:]
	}
	return string(b)
}

// Stop shuts the server down cleanly (SIGTERM, then SIGKILL if it takes more
// than 30 s) and waits for it to exit; its data stays for Restart. It is safe
// to call more than once.
func (s *Server) Stop() {
	s.mu.Lock()
	cmd, done := s.cmd, s.done
	s.cmd = nil
	s.mu.Unlock()
	if cmd == nil {
		return
	}
	_ = cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		_ = cmd.Process.Kill()
		<-done
	}
	// Connections to the old process are dead; the next use dials anew.
	s.root.SetMaxIdleConns(0)
	s.root.SetMaxIdleConns(2)
}

// Restart starts a stopped server again, on the same port with the same data.
func (s *Server) Restart(tb testing.TB) {
	tb.Helper()
	if err := s.start(); err != nil {
		tb.Fatal(err)
	}
}

// Exec runs statements as root, failing the test on error.
func (s *Server) Exec(tb testing.TB, query string, args ...any) {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := s.root.ExecContext(ctx, query, args...); err != nil {
		tb.Fatalf("mariadbtest: %s: %v", query, err)
	}
}

// GlobalStatus returns a numeric server status variable, such as
// Prepared_stmt_count or Com_stmt_prepare (SHOW GLOBAL STATUS), failing the
// test on error.
func (s *Server) GlobalStatus(tb testing.TB, name string) int64 {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var n string
	var v int64
	// SHOW takes no placeholders; name is the caller's constant.
	if err := s.root.QueryRowContext(ctx, "SHOW GLOBAL STATUS LIKE '"+name+"'").Scan(&n, &v); err != nil {
		tb.Fatalf("mariadbtest: SHOW GLOBAL STATUS LIKE %q: %v", name, err)
	}
	return v
}

// Database is one database of a server with a user of its own.
type Database struct {
	Name     string
	User     string
	Password string
	Addr     string
}

// DSN returns the database's go-sql-driver/mysql data source name, with no
// parameters.
func (d Database) DSN() string {
	cfg := mysql.NewConfig()
	cfg.User, cfg.Passwd, cfg.Net, cfg.Addr, cfg.DBName = d.User, d.Password, "tcp", d.Addr, d.Name
	return cfg.FormatDSN()
}

// NewDatabase creates an empty database and a user with a random password
// that may do anything in it and nothing elsewhere, as a service's own user
// would; tb.Cleanup drops both.
func (s *Server) NewDatabase(tb testing.TB) Database {
	tb.Helper()
	s.mu.Lock()
	s.next++
	n := s.next
	s.mu.Unlock()
	secret := make([]byte, 8)
	_, _ = rand.Read(secret)
	d := Database{
		Name: fmt.Sprintf("test_%d", n),
		User: fmt.Sprintf("user_%d", n),
		// A password with the characters a DSN or a URL must escape.
		Password: "p@ss/w:rd?" + hex.EncodeToString(secret),
		Addr:     s.Addr,
	}
	s.Exec(tb, "CREATE DATABASE "+d.Name+" CHARACTER SET utf8mb4")
	s.Exec(tb, "CREATE USER '"+d.User+"'@'%' IDENTIFIED BY ?", d.Password)
	s.Exec(tb, "GRANT ALL ON "+d.Name+".* TO '"+d.User+"'@'%'")
	tb.Cleanup(func() {
		if !s.running() {
			return
		}
		s.Exec(tb, "DROP DATABASE IF EXISTS "+d.Name)
		s.Exec(tb, "DROP USER IF EXISTS '"+d.User+"'@'%'")
	})
	return d
}

func (s *Server) running() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.cmd != nil
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("mariadbtest: free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}
