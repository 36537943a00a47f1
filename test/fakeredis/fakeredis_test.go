package fakeredis

import (
	"bufio"
	"errors"
	"fmt"
	"net"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/storytold/craft-releases/test/testkit"
)

func send(t testing.TB, conn net.Conn, args ...string) {
	t.Helper()
	var b strings.Builder
	fmt.Fprintf(&b, "*%d\r\n", len(args))
	for _, a := range args {
		fmt.Fprintf(&b, "$%d\r\n%s\r\n", len(a), a)
	}
	if _, err := conn.Write([]byte(b.String())); err != nil {
		t.Fatalf("write %v: %v", args, err)
	}
}

func dial(t testing.TB, s *Server) (net.Conn, *bufio.Reader) {
	t.Helper()
	conn, err := net.Dial("tcp", s.Addr)
	if err != nil {
		t.Fatalf("dial: %v", err)
	}
	t.Cleanup(func() { conn.Close() })
	return conn, bufio.NewReader(conn)
}

// skipElements reads n simple elements of an aggregate reply: bulk strings,
// integers and empty arrays.
func skipElements(t testing.TB, r *bufio.Reader, n int) {
	t.Helper()
	for range n {
		line, err := r.ReadString('\n')
		if err != nil {
			t.Fatalf("read element: %v", err)
		}
		if line[0] == '$' {
			if _, err := r.ReadString('\n'); err != nil {
				t.Fatalf("read bulk string: %v", err)
			}
		}
	}
}

func TestHandshakeThenSilence(t *testing.T) {
	s := StartSilent(t)
	conn, r := dial(t, s)

	tests := []struct {
		name  string
		args  []string
		first string // first line of the reply
	}{
		{"hello 3 is a RESP3 map", []string{"HELLO", "3", "AUTH", "default", "pw"}, "%7"},
		{"hello 2 is an array", []string{"HELLO", "2"}, "*14"},
		{"client setinfo", []string{"CLIENT", "SETINFO", "LIB-NAME", "rueidis"}, "+OK"},
		{"select", []string{"SELECT", "0"}, "+OK"},
		{"cluster is disabled", []string{"CLUSTER", "SLOTS"}, "-ERR This instance has cluster support disabled"},
	}
	for _, tt := range tests {
		send(t, conn, tt.args...)
		line, err := r.ReadString('\n')
		if err != nil {
			t.Fatalf("%s: read: %v", tt.name, err)
		}
		if got := strings.TrimSuffix(line, "\r\n"); got != tt.first {
			t.Errorf("%s: got %q, want %q", tt.name, got, tt.first)
		}
		if tt.first[0] == '%' || tt.first[0] == '*' {
			skipElements(t, r, 14)
		}
	}

	send(t, conn, "PING")
	send(t, conn, "CLIENT", "SETNAME", "after-silence")
	_ = conn.SetReadDeadline(time.Now().Add(200 * time.Millisecond))
	b, err := r.ReadByte()
	if !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("after PING: got byte %q, err %v; want no answer at all", b, err)
	}
	if got := s.Conns(); got != 1 {
		t.Errorf("Conns() = %d, want 1: silence must keep the connection open", got)
	}
}

func TestCountsConnections(t *testing.T) {
	s := StartSilent(t)
	a, _ := dial(t, s)
	dial(t, s)
	testkit.Eventually(t, "two open connections", func() bool { return s.Conns() == 2 })
	a.Close()
	testkit.Eventually(t, "one open connection", func() bool { return s.Conns() == 1 })
	if got := s.Accepted(); got != 2 {
		t.Errorf("Accepted() = %d, want 2", got)
	}
}

func TestCleanupClosesConnections(t *testing.T) {
	var conn net.Conn
	t.Run("server", func(t *testing.T) {
		s := StartSilent(t)
		c, err := net.Dial("tcp", s.Addr)
		if err != nil {
			t.Fatal(err)
		}
		conn = c
		send(t, conn, "PING")
		testkit.Eventually(t, "the connection", func() bool { return s.Conns() == 1 })
	})
	defer conn.Close()
	_ = conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	if _, err := conn.Read(make([]byte, 1)); err == nil || errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("read after the test ended: got %v, want the server to have closed the connection", err)
	}
}
