// Package fakeredis is a fake Redis for tests of what a client does when
// Redis accepts connections and then never answers. It listens on loopback,
// completes the handshake a client makes on each new connection (HELLO, AUTH,
// CLIENT …, SELECT, and CLUSTER, which it answers as a server without cluster
// support), and from the first other command on (PING included) reads and
// drops everything, keeping the connection open until the client closes it
// or the test ends.
package fakeredis

import (
	"bufio"
	"errors"
	"io"
	"net"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// Server is one silent Redis started by Start.
type Server struct {
	Addr string // host:port on loopback

	ln net.Listener
	wg sync.WaitGroup

	mu       sync.Mutex
	conns    map[net.Conn]struct{}
	accepted int
	closed   bool
}

// StartSilent listens on a free loopback port and serves until the test ends, when
// it closes the listener and every connection and waits for its goroutines.
func StartSilent(t testing.TB) *Server {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("fakeredis: listen: %v", err)
	}
	s := &Server{Addr: ln.Addr().String(), ln: ln, conns: make(map[net.Conn]struct{})}
	s.wg.Add(1)
	go s.accept()
	t.Cleanup(s.close)
	return s
}

// URL is the server's address as REDIS_URL takes it.
func (s *Server) URL() string { return "redis://" + s.Addr }

// Conns returns how many connections are open now.
func (s *Server) Conns() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.conns)
}

// Accepted returns how many connections the server has accepted in all.
func (s *Server) Accepted() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.accepted
}

func (s *Server) accept() {
	defer s.wg.Done()
	for {
		conn, err := s.ln.Accept()
		if err != nil {
			return
		}
		s.mu.Lock()
		if s.closed {
			s.mu.Unlock()
			conn.Close()
			return
		}
		s.conns[conn] = struct{}{}
		s.accepted++
		s.wg.Add(1)
		s.mu.Unlock()
		go s.serve(conn)
	}
}

func (s *Server) close() {
	s.mu.Lock()
	s.closed = true
	for conn := range s.conns {
		conn.Close()
	}
	s.mu.Unlock()
	s.ln.Close()
	s.wg.Wait()
}

func (s *Server) serve(conn net.Conn) {
	defer s.wg.Done()
	defer func() {
		s.mu.Lock()
		delete(s.conns, conn)
		s.mu.Unlock()
		conn.Close()
	}()
	r := bufio.NewReader(conn)
	for {
		args, err := readCommand(r)
		if err != nil {
			break
		}
		reply, ok := handshake(args)
		if !ok {
			break
		}
		if _, err := io.WriteString(conn, reply); err != nil {
			return
		}
	}
	// Silent from here on: drain what the client sends so its writes never
	// block, until it hangs up or the test ends.
	_, _ = io.Copy(io.Discard, r)
}

// handshake returns the reply to a command of a connection's handshake, or
// false for any other command.
func handshake(args []string) (string, bool) {
	if len(args) == 0 {
		return "", false
	}
	switch strings.ToUpper(args[0]) {
	case "HELLO":
		if len(args) > 1 && args[1] == "2" {
			return "*" + strconv.Itoa(len(helloFields)) + "\r\n" + strings.Join(helloFields, ""), true
		}
		return "%" + strconv.Itoa(len(helloFields)/2) + "\r\n" + strings.Join(helloFields, ""), true
	case "AUTH", "CLIENT", "SELECT":
		return "+OK\r\n", true
	case "CLUSTER":
		return "-ERR This instance has cluster support disabled\r\n", true
	}
	return "", false
}

// helloFields is HELLO's answer, key then value, as a Redis 7.0 gives it.
var helloFields = []string{
	"$6\r\nserver\r\n", "$5\r\nredis\r\n",
	"$7\r\nversion\r\n", "$6\r\n7.0.15\r\n",
	"$5\r\nproto\r\n", ":3\r\n",
	"$2\r\nid\r\n", ":1\r\n",
	"$4\r\nmode\r\n", "$10\r\nstandalone\r\n",
	"$4\r\nrole\r\n", "$6\r\nmaster\r\n",
	"$7\r\nmodules\r\n", "*0\r\n",
}

var errProtocol = errors.New("fakeredis: not a RESP command")

// readCommand reads one command sent as a RESP array of bulk strings.
func readCommand(r *bufio.Reader) ([]string, error) {
	n, err := readHeader(r, '*')
	if err != nil {
		return nil, err
	}
	args := make([]string, 0, n)
	for range n {
		size, err := readHeader(r, '$')
		if err != nil {
			return nil, err
		}
		buf := make([]byte, size+2)
		if _, err := io.ReadFull(r, buf); err != nil {
			return nil, err
		}
		args = append(args, string(buf[:size]))
	}
	return args, nil
}

// readHeader reads a line "<kind><n>\r\n" and returns n, at most 1 MiB.
func readHeader(r *bufio.Reader, kind byte) (int, error) {
	line, err := r.ReadString('\n')
	if err != nil {
		return 0, err
	}
	line = strings.TrimSuffix(line, "\r\n")
	if len(line) < 2 || line[0] != kind {
		return 0, errProtocol
	}
	n, err := strconv.Atoi(line[1:])
	if err != nil || n < 0 || n > 1<<20 {
		return 0, errProtocol
	}
	return n, nil
}
