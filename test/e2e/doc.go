// Package e2e runs the real cmd/api and cmd/poller binaries as processes
// against a fake GitHub and a real redis-server, all on loopback: the split
// deployment end to end, what the pods do when Redis fails, the answers
// through a real shared cache (nginx proxy_cache) with the purge on every
// release through a fake Cloudflare, and the figures
// of the design (propagation, throughput, memory, Redis load) as benchmarks.
// It has no code of its own outside its tests.
package e2e
