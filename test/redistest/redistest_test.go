package redistest

import (
	"errors"
	"net"
	"testing"
)

// TestLaunchOnATakenPort: a redis-server that cannot bind its port is told
// apart from one that is slow to answer, so that Start tries another port
// instead of waiting out its deadline and failing the test (tests that run
// in parallel can take a port between freePort and the bind).
func TestLaunchOnATakenPort(t *testing.T) {
	t.Parallel()
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	go func() { // its owner hangs up on every client
		for {
			c, err := taken.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	s := &Server{t: t, Addr: taken.Addr().String()}
	if err := s.launch(); !errors.Is(err, errExited) {
		s.Stop()
		t.Fatalf("launch on a taken port: %v, want errExited", err)
	}
	if s.cmd != nil {
		t.Error("the exited server is still held")
	}
	fresh := Start(t)
	if reply, err := fresh.Do("PING"); err != nil || reply != "PONG" {
		t.Errorf("a server started after: %q, %v", reply, err)
	}
}
