package redistest_test

import (
	"testing"

	"github.com/storytold/craft-releases/test/redistest"
	"github.com/storytold/craft-releases/test/testkit"
)

func TestClusterFailover(t *testing.T) {
	c := redistest.StartCluster(t, 3, 1)
	primary := c.Primary("craftApps:releases:app:photocraft")
	replica := c.ReplicaOf(primary)
	primary.Kill()
	testkit.Eventually(t, "the replica is promoted", func() bool { return replica.Role() == "master" })
	if got := c.Primary("craftApps:releases:app:photocraft"); got != replica {
		t.Errorf("after the failover the key is served by %s, want the promoted replica %s", got.Addr, replica.Addr)
	}
}
