//go:build !linux

package daemon

import "net"

// ackedBytes reports false: only Linux tells what a peer acknowledged.
func ackedBytes(net.Conn) (uint64, bool) { return 0, false }

// limitUnsent does nothing: the kernel's default holds.
func limitUnsent(net.Conn, int) {}
