package redistest

import (
	"net"
	"os/exec"
	"strconv"
	"strings"
	"testing"

	"github.com/storytold/craft-releases/test/testkit"
)

// ClusterNodeTimeout is the cluster-node-timeout of StartCluster's nodes, in
// milliseconds: a primary that does not answer for this long is failed over
// to its replica.
const ClusterNodeTimeout = 1000

// Cluster is a Redis Cluster started by StartCluster.
type Cluster struct {
	t     testing.TB
	Nodes []*Server // the primaries first, then their replicas, as created
}

// StartCluster runs primaries redis-servers in cluster mode with replicas
// replicas each on free loopback ports, joins them with redis-cli --cluster
// create (the slots split evenly between the primaries), and waits until
// every node reports the cluster ok. The nodes are stopped by t.Cleanup.
func StartCluster(t testing.TB, primaries, replicas int, args ...string) *Cluster {
	t.Helper()
	return startCluster(t, nil, primaries, replicas, args...)
}

// StartClusterTLS is StartCluster with StartTLS's nodes, whose cluster bus
// speaks TLS too: nothing listens in plain text.
func StartClusterTLS(t testing.TB, ca *CA, primaries, replicas int, args ...string) *Cluster {
	t.Helper()
	return startCluster(t, ca, primaries, replicas, append([]string{"--tls-cluster", "yes"}, args...)...)
}

func startCluster(t testing.TB, ca *CA, primaries, replicas int, args ...string) *Cluster {
	t.Helper()
	if _, err := exec.LookPath("redis-cli"); err != nil {
		t.Fatalf("redis-cli not found (it comes with redis-server): %v", err)
	}
	c := &Cluster{t: t}
	create := []string{"--cluster", "create"}
	for range primaries * (1 + replicas) {
		// The bus port has a free port of its own: the default, 10000 above
		// the node's, may be taken or past 65535.
		nodeArgs := append([]string{"--cluster-enabled", "yes", "--cluster-node-timeout", strconv.Itoa(ClusterNodeTimeout),
			"--cluster-port", strconv.Itoa(testkit.FreePort(t)), "--repl-diskless-sync-delay", "0"}, args...)
		var s *Server
		if ca != nil {
			s = StartTLS(t, ca, nodeArgs...)
		} else {
			s = Start(t, nodeArgs...)
		}
		c.Nodes = append(c.Nodes, s)
		create = append(create, s.Addr)
	}
	create = append(create, "--cluster-replicas", strconv.Itoa(replicas), "--cluster-yes")
	if ca != nil {
		create = append(create, "--tls", "--cacert", ca.File)
	}
	if out, err := exec.Command("redis-cli", create...).CombinedOutput(); err != nil {
		t.Fatalf("redis-cli --cluster create: %v\n%s", err, out)
	}
	for _, s := range c.Nodes {
		testkit.Eventually(t, "cluster node "+s.Addr+" is ok", func() bool {
			info, err := s.Query("CLUSTER", "INFO")
			text, _ := info.(string)
			return err == nil && strings.Contains(text, "cluster_state:ok")
		})
	}
	for _, s := range c.Nodes {
		if s.Role() == "slave" {
			testkit.Eventually(t, "replica "+s.Addr+" is in sync", s.Synced)
		}
	}
	return c
}

// URL is the cluster as REDIS_URL takes it: one node and the others as
// addr= seeds, rediss:// for StartClusterTLS's.
func (c *Cluster) URL() string {
	u := c.Nodes[0].URL()
	for i, s := range c.Nodes[1:] {
		sep := "&"
		if i == 0 {
			sep = "?"
		}
		u += sep + "addr=" + s.Addr
	}
	return u
}

// Primary returns the node that serves key now: the one primary that
// answers for it instead of redirecting.
func (c *Cluster) Primary(key string) *Server {
	c.t.Helper()
	for _, s := range c.Nodes {
		if s.cmd == nil || s.Role() != "master" {
			continue
		}
		if _, err := s.Do("EXISTS", key); err == nil {
			return s
		}
	}
	c.t.Fatalf("no primary of the cluster serves %q", key)
	return nil
}

// ReplicaOf returns a live replica of primary.
func (c *Cluster) ReplicaOf(primary *Server) *Server {
	c.t.Helper()
	_, port, _ := net.SplitHostPort(primary.Addr)
	for _, s := range c.Nodes {
		if s.cmd == nil {
			continue
		}
		if info, err := s.Info("replication"); err == nil && info["role"] == "slave" && info["master_port"] == port {
			return s
		}
	}
	c.t.Fatalf("no replica of %s", primary.Addr)
	return nil
}
