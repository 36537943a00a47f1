// Package fleet holds the end-to-end tests of a poller fleet: several real
// pollers (pkg/poller with pkg/redis/store and pkg/github) against one real
// redis-server and one fake GitHub, on a simulated clock, so that hours of
// polling run in seconds without sleeping. Its tests check the fleet's
// promises of docs/scheduling.md and docs/redis.md (about one GitHub request per app per
// interval for the whole fleet, a rate limit that pauses every poller, life
// through a Redis outage), and its benchmarks print the fleet's figures.
// The package has no API: everything is in its tests.
package fleet
