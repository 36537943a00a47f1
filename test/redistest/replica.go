package redistest

import (
	"net"
	"slices"
	"testing"

	"github.com/storytold/craft-releases/test/testkit"
)

// StartReplica runs a redis-server that replicates primary, as Start does
// (extra config arguments after the replication ones), and waits until its
// link to the primary is up. It is stopped by t.Cleanup. A primary started
// with "--repl-diskless-sync-delay", "0" syncs a replica at once instead of
// after 5 s. The replica of a StartTLS primary is a StartTLS server with the
// same CA; that of a Shift's server has its clock moved by the same Shift.
func StartReplica(t testing.TB, primary *Server, args ...string) *Server {
	t.Helper()
	host, port, _ := net.SplitHostPort(primary.Addr)
	args = append([]string{"--replicaof", host, port}, args...)
	var s *Server
	if primary.ca != nil {
		s = StartTLS(t, primary.ca, args...)
	} else {
		s = start(t, &Server{t: t, args: args, env: primary.env})
	}
	testkit.Eventually(t, "replica "+s.Addr+" is in sync with "+primary.Addr, s.Synced)
	return s
}

// Kill ends the server with SIGKILL, as a crash would; Stop does the same.
// Start it again with RestartAsReplicaOf or Restart.
func (s *Server) Kill() { s.Stop() }

// RestartAsReplicaOf stops the server and starts it again, empty, on the same
// port as a replica of the server at addr, the way a failed primary comes
// back after a failover. It does not wait for the replica to sync (see
// Synced).
func (s *Server) RestartAsReplicaOf(addr string) {
	s.t.Helper()
	host, port, _ := net.SplitHostPort(addr)
	args := slices.Clone(s.args)
	if i := slices.Index(args, "--replicaof"); i >= 0 && i+3 <= len(args) {
		args = slices.Delete(args, i, i+3)
	}
	s.args = append([]string{"--replicaof", host, port}, args...)
	s.Restart()
}

// Role returns what the server says it is ("master" or "slave"), or "" when
// it does not answer.
func (s *Server) Role() string {
	info, err := s.Info("replication")
	if err != nil {
		return ""
	}
	return info["role"]
}

// Synced reports whether the server is a replica whose link to its primary is
// up and done with the initial sync.
func (s *Server) Synced() bool {
	info, err := s.Info("replication")
	return err == nil && info["role"] == "slave" && info["master_link_status"] == "up" &&
		info["master_sync_in_progress"] == "0"
}
