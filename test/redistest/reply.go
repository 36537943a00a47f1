package redistest

import (
	"bufio"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"time"
)

// Query sends one command to the server at addr (a redis-server or a
// sentinel) on a fresh connection and returns its whole reply: a string for
// a simple or bulk string, an int64 for an integer, nil for a null, a []any
// for an array (RESP2, so maps come as flat arrays). An error reply is
// returned as an error. It is meant for administration in tests, like Do;
// it does not speak TLS (Server.Query does for StartTLS's servers).
func Query(addr string, args ...string) (any, error) {
	return query(addr, nil, args...)
}

// Query is the package's Query on the server, over TLS for StartTLS's.
func (s *Server) Query(args ...string) (any, error) {
	return query(s.Addr, s.tls, args...)
}

// Info is the package's Info on the server, over TLS for StartTLS's.
func (s *Server) Info(section string) (map[string]string, error) {
	return info(s.Addr, s.tls, section)
}

// dial connects to addr, over TLS when cfg is not nil.
func dial(addr string, cfg *tls.Config) (net.Conn, error) {
	d := &net.Dialer{Timeout: time.Second}
	if cfg != nil {
		return tls.DialWithDialer(d, "tcp", addr, cfg)
	}
	return d.Dial("tcp", addr)
}

func query(addr string, cfg *tls.Config, args ...string) (any, error) {
	conn, err := dial(addr, cfg)
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(5 * time.Second))
	var b strings.Builder
	fmt.Fprintf(&b, "*%d\r\n", len(args))
	for _, a := range args {
		fmt.Fprintf(&b, "$%d\r\n%s\r\n", len(a), a)
	}
	if _, err := io.WriteString(conn, b.String()); err != nil {
		return nil, err
	}
	return readReply(bufio.NewReader(conn))
}

// Info returns the fields of one INFO section of the server at addr
// (name → value).
func Info(addr, section string) (map[string]string, error) {
	return info(addr, nil, section)
}

func info(addr string, cfg *tls.Config, section string) (map[string]string, error) {
	reply, err := query(addr, cfg, "INFO", section)
	if err != nil {
		return nil, err
	}
	s, ok := reply.(string)
	if !ok {
		return nil, fmt.Errorf("info %s: reply %T", section, reply)
	}
	fields := make(map[string]string)
	for line := range strings.Lines(s) {
		if k, v, ok := strings.Cut(strings.TrimSpace(line), ":"); ok && !strings.HasPrefix(k, "#") {
			fields[k] = v
		}
	}
	return fields, nil
}

func readReply(r *bufio.Reader) (any, error) {
	line, err := r.ReadString('\n')
	if err != nil {
		return nil, err
	}
	line = strings.TrimSuffix(line, "\r\n")
	if line == "" {
		return nil, errors.New("redis: empty reply line")
	}
	body := line[1:]
	switch line[0] {
	case '+':
		return body, nil
	case '-':
		return nil, fmt.Errorf("redis: %s", body)
	case ':':
		return strconv.ParseInt(body, 10, 64)
	case '$':
		n, err := strconv.Atoi(body)
		if err != nil {
			return nil, fmt.Errorf("redis: bulk length %q", body)
		}
		if n < 0 {
			return nil, nil
		}
		buf := make([]byte, n+2)
		if _, err := io.ReadFull(r, buf); err != nil {
			return nil, err
		}
		return string(buf[:n]), nil
	case '*':
		n, err := strconv.Atoi(body)
		if err != nil {
			return nil, fmt.Errorf("redis: array length %q", body)
		}
		if n < 0 {
			return nil, nil
		}
		out := make([]any, n)
		for i := range out {
			if out[i], err = readReply(r); err != nil {
				return nil, err
			}
		}
		return out, nil
	}
	return nil, fmt.Errorf("redis: unknown reply %q", line)
}

// BytesSent is how many bytes the server has sent its clients
// (total_net_output_bytes), for a test that must show a value was not read.
func (s *Server) BytesSent() (int64, error) {
	info, err := s.Info("stats")
	if err != nil {
		return 0, err
	}
	return strconv.ParseInt(info["total_net_output_bytes"], 10, 64)
}
