// Package e2e runs the real cmd/api and cmd/poller binaries as processes
// against a fake GitHub and a real redis-server, all on loopback, one test
// per path a user sees: a release reaching every pod, a webhook, the answers
// through a real shared cache (nginx proxy_cache) with the purge through a
// fake Cloudflare, a Cluster or Sentinel failover, the Tauri feed with the
// real minisign and the other updaters' feeds with their own clients, and
// every documented answer of the running binaries; and the figures of
// docs/operations.md (propagation, throughput, scale, Redis load, failover)
// as benchmarks. It has no code of its own outside its tests.
package e2e
