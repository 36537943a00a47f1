package redistest

import (
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"testing"
)

// pool holds the package's idle servers while Main runs.
var pool struct {
	sync.Mutex
	on      bool
	idle    map[string][]*Server // by their config arguments
	all     []*Server
	release []func() // the ports of the pooled servers
}

// Main is the body of the TestMain of a package whose tests start
// redis-servers: it runs run (m.Run, or another launcher's Main around it)
// with a pool of servers that Start hands out, by their config arguments,
// and stops them after. A server goes back to the pool when its test ends, emptied
// (keys, scripts, clients, users, statistics, the ACL LOG), unless the test
// stopped it or left its configuration or role changed: then it is stopped.
// So a package starts about as many servers as it runs tests at once.
func Main(run func() int) int {
	pool.Lock()
	pool.on, pool.idle = true, map[string][]*Server{}
	pool.Unlock()
	code := run()
	pool.Lock()
	defer pool.Unlock()
	for _, s := range pool.all {
		s.Stop()
		os.RemoveAll(s.dir)
	}
	for _, release := range pool.release {
		release()
	}
	pool.on, pool.idle, pool.all, pool.release = false, nil, nil, nil
	return code
}

// fromPool returns an idle pooled server started with args for t, or a new
// one, or nil when Main does not run.
func fromPool(t testing.TB, args []string) *Server {
	t.Helper()
	pool.Lock()
	if !pool.on {
		pool.Unlock()
		return nil
	}
	var s *Server
	key := strings.Join(args, "\x00")
	if idle := pool.idle[key]; len(idle) > 0 {
		s, pool.idle[key] = idle[len(idle)-1], idle[:len(idle)-1]
	}
	pool.Unlock()
	if s == nil {
		dir, err := os.MkdirTemp("", "redistest-")
		if err != nil {
			t.Fatal(err)
		}
		s = &Server{t: t, dir: dir, args: args}
		pool.Lock()
		pool.all = append(pool.all, s)
		pool.Unlock()
		if _, err := exec.LookPath("redis-server"); err != nil {
			t.Fatalf("redis-server not found (the test task installs it: apt-get install redis-server): %v", err)
		}
		s.startFresh()
		if s.pristine, err = s.state(); err != nil {
			t.Fatal(err)
		}
	}
	s.t = t
	t.Cleanup(func() { s.giveBack() })
	return s
}

// giveBack empties s and puts it back in the pool, or stops it when it
// cannot be made as launched.
func (s *Server) giveBack() {
	if s.cmd != nil && s.empty() == nil {
		if state, err := s.state(); err == nil && state == s.pristine {
			pool.Lock()
			key := strings.Join(s.args, "\x00")
			pool.idle[key] = append(pool.idle[key], s)
			pool.Unlock()
			return
		}
	}
	s.Stop()
}

// empty drops everything a test may have left in s.
func (s *Server) empty() error {
	users, err := s.Query("ACL", "USERS")
	if err != nil {
		return err
	}
	list, _ := users.([]any)
	for _, u := range list {
		if name := fmt.Sprint(u); name != "default" {
			if _, err := s.Do("ACL", "DELUSER", name); err != nil {
				return err
			}
		}
	}
	for _, cmd := range [][]string{
		{"CLIENT", "KILL", "TYPE", "normal"},
		{"CLIENT", "KILL", "TYPE", "pubsub"},
		{"CLIENT", "KILL", "TYPE", "replica"},
		{"FLUSHALL"},
		{"SCRIPT", "FLUSH"},
		{"FUNCTION", "FLUSH"},
		{"CONFIG", "RESETSTAT"},
		{"ACL", "LOG", "RESET"},
		{"SLOWLOG", "RESET"},
	} {
		if _, err := s.Do(cmd...); err != nil {
			return fmt.Errorf("%v: %w", cmd, err)
		}
	}
	return nil
}

// state is what must be as launched for s to serve another test: its
// configuration, its users and its role.
func (s *Server) state() (string, error) {
	var b []string
	config, err := s.Query("CONFIG", "GET", "*")
	if err != nil {
		return "", err
	}
	pairs, _ := config.([]any)
	for i := 0; i+1 < len(pairs); i += 2 {
		b = append(b, fmt.Sprintf("%v=%v", pairs[i], pairs[i+1]))
	}
	users, err := s.Query("ACL", "LIST")
	if err != nil {
		return "", err
	}
	list, _ := users.([]any)
	for _, u := range list {
		b = append(b, fmt.Sprint(u))
	}
	info, err := s.Info("replication")
	if err != nil {
		return "", err
	}
	b = append(b, "role:"+info["role"])
	slices.Sort(b)
	return fmt.Sprint(b), nil
}
