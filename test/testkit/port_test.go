package testkit

import "testing"

// TestFreePortReserves checks that a port FreePort handed out is kept from
// every other FreePort of the process until the test that took it ends.
func TestFreePortReserves(t *testing.T) {
	var port int
	t.Run("taker", func(t *testing.T) {
		port = FreePort(t)
		if reserve(port) {
			t.Fatalf("port %d reserved twice in one process", port)
		}
	})
	if !reserve(port) {
		t.Fatalf("port %d still reserved after its test ended", port)
	}
	unreserve(port)
}
