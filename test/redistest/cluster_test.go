package redistest_test

import (
	"strings"
	"testing"

	"github.com/storytold/craft-releases/test/redistest"
	"github.com/storytold/craft-releases/test/testkit"
)

func TestClusterFailover(t *testing.T) {
	testkit.Integration(t)
	for _, tc := range []struct {
		name   string
		start  func(t *testing.T) *redistest.Cluster
		scheme string
	}{
		{"plain", func(t *testing.T) *redistest.Cluster { return redistest.StartCluster(t, 3, 1) }, "redis://"},
		{"tls", func(t *testing.T) *redistest.Cluster { return redistest.StartClusterTLS(t, redistest.NewCA(t), 3, 1) }, "rediss://"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c := tc.start(t)
			if got := c.URL(); !strings.HasPrefix(got, tc.scheme) {
				t.Errorf("URL = %q, want %s…", got, tc.scheme)
			}
			primary := c.Primary("craftApps:releases:app:photocraft")
			replica := c.ReplicaOf(primary)
			primary.Kill()
			testkit.Eventually(t, "the replica is promoted", func() bool { return replica.Role() == "master" })
			if got := c.Primary("craftApps:releases:app:photocraft"); got != replica {
				t.Errorf("after the failover the key is served by %s, want the promoted replica %s", got.Addr, replica.Addr)
			}
		})
	}
}
