package testkit

import (
	"math/rand/v2"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// FreeAddr returns a loopback host:port that nothing listened on a moment
// ago: FreePort's.
func FreeAddr(t testing.TB) string {
	t.Helper()
	return net.JoinHostPort("127.0.0.1", strconv.Itoa(FreePort(t)))
}

// FreePort returns a loopback port that nothing listened on a moment ago,
// for a server the test starts on it, reserved until the test ends: see
// HoldPort.
func FreePort(t testing.TB) int {
	t.Helper()
	port, release, err := HoldPort()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(release)
	return port
}

// HoldPort returns a loopback port that nothing listened on a moment ago,
// and the function that gives it back. It is drawn below the kernel's
// ephemeral range (ip_local_port_range), where neither a listener on port 0
// nor an outgoing connection can take it before the server binds it, and no
// other HoldPort of this process hands it out until it is given back (so a
// server may also stop and start again on it). Another test process may draw
// it: a launcher whose server cannot bind its port tries another. Without
// that range, it is a port 0 listener's.
func HoldPort() (int, func(), error) {
	if low := ephemeralLow(); low > minPort+1000 {
		for range 100 {
			port := minPort + rand.IntN(low-minPort)
			if !reserve(port) {
				continue
			}
			if l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port))); err == nil {
				l.Close()
				return port, func() { unreserve(port) }, nil
			}
			unreserve(port)
		}
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, nil, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, func() {}, nil
}

// minPort is the lowest port FreePort draws: above the well-known and the
// usual registered servers' ports.
const minPort = 10000

// ephemeralLow is the first port of the kernel's ephemeral range, or 0 when
// it cannot be read; it is read once.
var ephemeralLow = sync.OnceValue(func() int {
	b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		return 0
	}
	fields := strings.Fields(string(b))
	if len(fields) != 2 {
		return 0
	}
	low, err := strconv.Atoi(fields[0])
	if err != nil {
		return 0
	}
	return low
})

// reserved holds the ports this process has handed out.
var reserved struct {
	sync.Mutex
	ports map[int]bool
}

// reserve reserves port, reporting false when this process holds it already.
func reserve(port int) bool {
	reserved.Lock()
	defer reserved.Unlock()
	if reserved.ports == nil {
		reserved.ports = map[int]bool{}
	}
	if reserved.ports[port] {
		return false
	}
	reserved.ports[port] = true
	return true
}

// unreserve gives a reserved port back.
func unreserve(port int) {
	reserved.Lock()
	defer reserved.Unlock()
	delete(reserved.ports, port)
}

// Listen returns a listener on a loopback port of the kernel's choosing,
// closed when the test ends.
func Listen(t testing.TB) net.Listener {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ln.Close() })
	return ln
}
