package testkit

import (
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
)

// FreeAddr returns a loopback host:port that nothing listened on a moment
// ago: FreePort's.
func FreeAddr(t testing.TB) string {
	t.Helper()
	return net.JoinHostPort("127.0.0.1", strconv.Itoa(FreePort(t)))
}

// FreePort returns a loopback port that nothing listened on a moment ago,
// for a server the test starts on it. It is drawn below the kernel's
// ephemeral range (ip_local_port_range), where neither a listener on port 0
// nor an outgoing connection can take it before the server binds it, and it
// stays reserved until the test ends: no other FreePort, in this process or
// in another test process of the same user, hands it out meanwhile (so a
// server may also stop and start again on it). Without that range, it is a
// port 0 listener's.
func FreePort(t testing.TB) int {
	t.Helper()
	if low := ephemeralLow(); low > minPort+1000 {
		for range 100 {
			port := minPort + rand.IntN(low-minPort)
			if !reserve(port) {
				continue
			}
			if l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port))); err == nil {
				l.Close()
				t.Cleanup(func() { release(port) })
				return port
			}
			release(port)
		}
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
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

// reserved holds the ports this process has handed out; byte p of its lock
// file is write-locked while port p is, which keeps other test processes
// (go test runs packages side by side) off it. The kernel drops a process's
// locks when it exits, however it exits. Without the file, the reservation
// holds within this process only.
var reserved struct {
	sync.Mutex
	ports map[int]bool // nil until the first reserve opens the file
	file  *os.File
}

// reserve reserves port, reporting false when this process or another holds
// it already.
func reserve(port int) bool {
	reserved.Lock()
	defer reserved.Unlock()
	if reserved.ports == nil {
		reserved.ports = map[int]bool{}
		name := filepath.Join(os.TempDir(), fmt.Sprintf("craft-releases-test-ports-%d", os.Getuid()))
		reserved.file, _ = os.OpenFile(name, os.O_RDWR|os.O_CREATE, 0o600)
	}
	if reserved.ports[port] {
		return false
	}
	if reserved.file != nil && lock(reserved.file, port, syscall.F_WRLCK) != nil {
		return false
	}
	reserved.ports[port] = true
	return true
}

// release gives a reserved port back.
func release(port int) {
	reserved.Lock()
	defer reserved.Unlock()
	delete(reserved.ports, port)
	if reserved.file != nil {
		_ = lock(reserved.file, port, syscall.F_UNLCK)
	}
}

// lock sets (F_WRLCK) or clears (F_UNLCK) the POSIX record lock on byte port
// of f, without waiting.
func lock(f *os.File, port int, typ int16) error {
	return syscall.FcntlFlock(f.Fd(), syscall.F_SETLK, &syscall.Flock_t{Type: typ, Whence: 0, Start: int64(port), Len: 1})
}
