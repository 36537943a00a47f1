package redistest

import (
	"os"
	"testing"
)

func TestMain(m *testing.M) { os.Exit(Main(m.Run)) }

// TestPool: a pooled server comes back to the next test empty, whatever the
// test left in it; one whose configuration changed or that was stopped does
// not come back.
func TestPool(t *testing.T) {
	var first *Server
	t.Run("leaves things behind", func(t *testing.T) {
		first = Start(t)
		first.MustDo("SET", "k", "v")
		first.MustDo("ACL", "SETUSER", "someone", "on", ">pw", "~*", "+@all")
		first.MustDo("SCRIPT", "LOAD", "return 1")
		if _, err := first.Do("AUTH", "someone", "wrong"); err == nil {
			t.Fatal("AUTH with a wrong password: no error")
		}
	})
	t.Run("gets it back empty", func(t *testing.T) {
		s := Start(t)
		if s != first {
			t.Fatalf("got the server on %s, want the idle one on %s", s.Addr, first.Addr)
		}
		for _, c := range []struct {
			args []string
			want string
		}{{[]string{"DBSIZE"}, "0"}, {[]string{"EXISTS", "k"}, "0"}, {[]string{"ACL", "LOG"}, "0"}} {
			if got := s.MustDo(c.args...); got != c.want {
				t.Errorf("%v = %s, want %s", c.args, got, c.want)
			}
		}
		if users, _ := s.Query("ACL", "USERS"); len(users.([]any)) != 1 {
			t.Errorf("users %v, want default alone", users)
		}
		s.MustDo("CONFIG", "SET", "maxmemory", "1")
	})
	var stopped *Server
	t.Run("a changed configuration is not handed out again", func(t *testing.T) {
		stopped = Start(t)
		if stopped == first {
			t.Fatal("got the server whose maxmemory the last test set")
		}
		if first.cmd != nil {
			t.Error("the changed server still runs")
		}
		stopped.Stop()
	})
	t.Run("a stopped server is not handed out again", func(t *testing.T) {
		if s := Start(t); s == stopped || s.cmd == nil {
			t.Fatal("got the stopped server")
		}
	})
}
