package daemon

import (
	"net"
	"syscall"

	"golang.org/x/sys/unix"
)

// ackedBytes returns how many of the bytes sent on c its peer acknowledged
// (TCP_INFO), and false when c does not tell.
func ackedBytes(c net.Conn) (uint64, bool) {
	sc, ok := c.(syscall.Conn)
	if !ok {
		return 0, false
	}
	raw, err := sc.SyscallConn()
	if err != nil {
		return 0, false
	}
	var info *unix.TCPInfo
	var ierr error
	if err := raw.Control(func(fd uintptr) {
		info, ierr = unix.GetsockoptTCPInfo(int(fd), unix.IPPROTO_TCP, unix.TCP_INFO)
	}); err != nil || ierr != nil {
		return 0, false
	}
	return info.Bytes_acked, true
}

// limitUnsent makes the kernel hold at most max bytes of c's that are not
// sent yet (TCP_NOTSENT_LOWAT): a write waits while more are queued. It
// does nothing where c has no socket.
func limitUnsent(c net.Conn, max int) {
	sc, ok := c.(syscall.Conn)
	if !ok {
		return
	}
	if raw, err := sc.SyscallConn(); err == nil {
		_ = raw.Control(func(fd uintptr) {
			_ = unix.SetsockoptInt(int(fd), unix.IPPROTO_TCP, unix.TCP_NOTSENT_LOWAT, max)
		})
	}
}
