package redistest

import (
	"crypto/tls"
	"fmt"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/storytold/craft-releases/test/testkit"
)

// Sentinel timings: a primary that does not answer for DownAfter is down, and
// a failover that stalls is tried again after FailoverTimeout. They are short
// so that a test sees a failover within a few seconds.
const (
	DownAfter       = time.Second
	FailoverTimeout = 3 * time.Second
)

// Sentinel is one `redis-server --sentinel` process started by StartSentinel.
type Sentinel struct {
	t      testing.TB
	Addr   string // host:port on loopback
	Master string // the name of the monitored primary (master_set)
	conf   string
	log    string // the sentinel's log file
	cmd    *exec.Cmd
	tls    *tls.Config // a TLS sentinel's: how its methods reach it
}

// StartSentinels starts n sentinels that monitor primary under the name
// master and agree on a failover when quorum of them see it down. It waits
// until every sentinel knows the others and every replica primary has, so a
// failover can start as soon as the primary fails. The sentinels of a
// StartTLS primary listen on TLS only, with certificates of its CA, and speak
// TLS to the servers and to each other.
func StartSentinels(t testing.TB, master string, primary *Server, n, quorum int) []*Sentinel {
	t.Helper()
	sentinels := make([]*Sentinel, n)
	for i := range sentinels {
		sentinels[i] = startSentinel(t, master, primary.Addr, quorum, primary.ca)
	}
	replicas := 0
	if info, err := primary.Info("replication"); err == nil {
		replicas, _ = strconv.Atoi(info["connected_slaves"])
	}
	for _, s := range sentinels {
		testkit.Eventually(t, "sentinel "+s.Addr+" knows the other sentinels and the replicas", func() bool {
			others, err := s.list("SENTINEL", "SENTINELS", master)
			if err != nil || len(others) != n-1 {
				return false
			}
			ok, err := s.Replicas()
			return err == nil && len(ok) >= replicas
		})
	}
	return sentinels
}

// StartSentinel starts one sentinel on a free loopback port that monitors the
// primary at primaryAddr under the name master, with quorum, DownAfter and
// FailoverTimeout. Its config file is written to a temporary directory (a
// sentinel rewrites it). It is stopped by t.Cleanup.
func StartSentinel(t testing.TB, master, primaryAddr string, quorum int) *Sentinel {
	t.Helper()
	return startSentinel(t, master, primaryAddr, quorum, nil)
}

// startSentinel is StartSentinel, on TLS only when ca is not nil.
func startSentinel(t testing.TB, master, primaryAddr string, quorum int, ca *CA) *Sentinel {
	t.Helper()
	if _, err := exec.LookPath("redis-server"); err != nil {
		t.Fatalf("redis-server not found (the test task installs it: apt-get install redis-server): %v", err)
	}
	host, port, _ := net.SplitHostPort(primaryAddr)
	s := &Sentinel{t: t, Addr: net.JoinHostPort("127.0.0.1", strconv.Itoa(testkit.FreePort(t))), Master: master}
	_, myPort, _ := net.SplitHostPort(s.Addr)
	dir := t.TempDir()
	s.conf = filepath.Join(dir, "sentinel.conf")
	s.log = filepath.Join(dir, "sentinel.log")
	ports := []string{"port " + myPort}
	if ca != nil {
		s.tls = ca.client()
		ports = []string{"port 0", "tls-port " + myPort, "tls-replication yes"}
		// The server's arguments as config lines: "--tls-cert-file", "f" → "tls-cert-file f".
		args := ca.serverArgs("sentinel")
		for i := 0; i+1 < len(args); i += 2 {
			ports = append(ports, strings.TrimPrefix(args[i], "--")+" "+args[i+1])
		}
	}
	conf := strings.Join(append(ports,
		"bind 127.0.0.1",
		"protected-mode no",
		"dir "+dir,
		"logfile "+s.log,
		fmt.Sprintf("sentinel monitor %s %s %s %d", master, host, port, quorum),
		fmt.Sprintf("sentinel down-after-milliseconds %s %d", master, DownAfter.Milliseconds()),
		fmt.Sprintf("sentinel failover-timeout %s %d", master, FailoverTimeout.Milliseconds()),
		fmt.Sprintf("sentinel parallel-syncs %s 1", master),
	), "\n") + "\n"
	if err := os.WriteFile(s.conf, []byte(conf), 0o600); err != nil {
		t.Fatalf("write sentinel config: %v", err)
	}
	s.cmd = exec.Command("redis-server", s.conf, "--sentinel")
	if err := s.cmd.Start(); err != nil {
		t.Fatalf("start redis-server --sentinel: %v", err)
	}
	t.Cleanup(s.Stop)
	testkit.Eventually(t, "sentinel "+s.Addr+" answers PING", func() bool {
		reply, err := query(s.Addr, s.tls, "PING")
		return err == nil && reply == "PONG"
	})
	return s
}

// Stop kills the sentinel; it is safe to call more than once.
func (s *Sentinel) Stop() {
	if s.cmd == nil {
		return
	}
	_ = s.cmd.Process.Kill()
	_ = s.cmd.Wait()
	s.cmd = nil
}

// MasterAddr returns the address the sentinel gives for its primary now.
func (s *Sentinel) MasterAddr() (string, error) {
	reply, err := query(s.Addr, s.tls, "SENTINEL", "GET-MASTER-ADDR-BY-NAME", s.Master)
	if err != nil {
		return "", err
	}
	parts, ok := reply.([]any)
	if !ok || len(parts) != 2 {
		return "", fmt.Errorf("sentinel get-master-addr-by-name: reply %v", reply)
	}
	host, _ := parts[0].(string)
	port, _ := parts[1].(string)
	return net.JoinHostPort(host, port), nil
}

// Replicas returns the replicas the sentinel knows of that it sees healthy
// (flags exactly "slave"), by address.
func (s *Sentinel) Replicas() ([]string, error) {
	all, err := s.list("SENTINEL", "REPLICAS", s.Master)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, r := range all {
		if r["flags"] == "slave" && r["master-link-status"] == "ok" {
			out = append(out, net.JoinHostPort(r["ip"], r["port"]))
		}
	}
	return out, nil
}

// State describes what the sentinel knows of its replicas and the end of
// its log, for a test that waited on it in vain.
func (s *Sentinel) State() string {
	replicas, err := s.list("SENTINEL", "REPLICAS", s.Master)
	log, _ := os.ReadFile(s.log)
	lines := strings.Split(strings.TrimSpace(string(log)), "\n")
	return fmt.Sprintf("sentinel %s: replicas %v (%v); log:\n%s", s.Addr, replicas, err,
		strings.Join(lines[max(0, len(lines)-20):], "\n"))
}

// list runs a SENTINEL command whose reply is a list of field/value arrays.
func (s *Sentinel) list(args ...string) ([]map[string]string, error) {
	reply, err := query(s.Addr, s.tls, args...)
	if err != nil {
		return nil, err
	}
	items, ok := reply.([]any)
	if !ok {
		return nil, fmt.Errorf("%v: reply %T", args, reply)
	}
	out := make([]map[string]string, 0, len(items))
	for _, item := range items {
		kv, _ := item.([]any)
		m := make(map[string]string, len(kv)/2)
		for i := 0; i+1 < len(kv); i += 2 {
			k, _ := kv[i].(string)
			v, _ := kv[i+1].(string)
			m[k] = v
		}
		out = append(out, m)
	}
	return out, nil
}

// SentinelURL is the REDIS_URL that reaches the primary named master through
// the given sentinels, as rueidis.ParseURL takes it:
// redis://S1?addr=S2&addr=S3&master_set=NAME, rediss:// for TLS sentinels.
func SentinelURL(master string, sentinels ...*Sentinel) string {
	addrs := make([]string, len(sentinels))
	for i, s := range sentinels {
		addrs[i] = s.Addr
	}
	scheme := "redis"
	if sentinels[0].tls != nil {
		scheme = "rediss"
	}
	return sentinelURL(scheme, master, addrs)
}

// SentinelURLOf is SentinelURL for plain-text sentinel addresses given as
// host:port.
func SentinelURLOf(master string, addrs ...string) string {
	return sentinelURL("redis", master, addrs)
}

func sentinelURL(scheme, master string, addrs []string) string {
	var b strings.Builder
	b.WriteString(scheme + "://" + addrs[0] + "?")
	for _, a := range addrs[1:] {
		b.WriteString("addr=" + a + "&")
	}
	b.WriteString("master_set=" + url.QueryEscape(master))
	return b.String()
}
