package redistest

import (
	"testing"
	"time"

	"github.com/storytold/craft-releases/test/testkit"
)

func TestSentinelFailover(t *testing.T) {
	testkit.Integration(t)
	for _, tc := range []struct {
		name   string
		start  func(t *testing.T, args ...string) *Server
		scheme string
	}{
		{"plain", func(t *testing.T, args ...string) *Server { return Start(t, args...) }, "redis"},
		{"tls", func(t *testing.T, args ...string) *Server { return StartTLS(t, NewCA(t), args...) }, "rediss"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			testSentinelFailover(t, tc.start, tc.scheme)
		})
	}
}

// testSentinelFailover fails over from the primary that start starts to its
// replica, and brings the old primary back as a replica.
func testSentinelFailover(t *testing.T, start func(t *testing.T, args ...string) *Server, scheme string) {
	primary := start(t, "--repl-diskless-sync-delay", "0")
	replica := StartReplica(t, primary, "--repl-diskless-sync-delay", "0")
	sentinels := StartSentinels(t, "craft", primary, 3, 2)
	if got, err := sentinels[0].MasterAddr(); err != nil || got != primary.Addr {
		t.Fatalf("master before the failover = %q, %v; want %s", got, err, primary.Addr)
	}
	primary.MustDo("SET", "k", "v")

	began := time.Now()
	primary.Kill()
	testkit.Eventually(t, "every sentinel names the replica as the primary", func() bool {
		for _, s := range sentinels {
			if got, err := s.MasterAddr(); err != nil || got != replica.Addr {
				return false
			}
		}
		return true
	})
	t.Logf("failover took %v", time.Since(began).Round(time.Millisecond))
	if got := replica.Role(); got != "master" {
		t.Fatalf("promoted replica's role = %q, want master", got)
	}
	if got, err := replica.Query("GET", "k"); err != nil || got != "v" {
		t.Errorf("GET k on the promoted replica = %v, %v; want v", got, err)
	}

	began = time.Now()
	primary.RestartAsReplicaOf(replica.Addr)
	testkit.Eventually(t, "the old primary syncs as a replica", primary.Synced)
	// A sentinel whose timer ran over 2 s late (a starved process on a
	// loaded machine) enters TILT mode for 30 s and meanwhile keeps the
	// old primary flagged down: the wait outlasts that.
	const wait = 45 * time.Second
	if !testkit.Within(wait, func() bool {
		rs, err := sentinels[0].Replicas()
		return err == nil && len(rs) == 1 && rs[0] == primary.Addr
	}) {
		for _, s := range sentinels {
			t.Log(s.State())
		}
		t.Fatalf("timed out after %v waiting until a sentinel sees the old primary as a healthy replica", wait)
	}
	t.Logf("the old primary was back as a healthy replica after %v", time.Since(began).Round(time.Millisecond))
	if got, want := SentinelURL("craft", sentinels...), scheme+"://"+sentinels[0].Addr+"?addr="+sentinels[1].Addr+"&addr="+sentinels[2].Addr+"&master_set=craft"; got != want {
		t.Errorf("SentinelURL = %q, want %q", got, want)
	}
}
