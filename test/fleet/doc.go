// Package fleet holds the tests of a poller fleet: several real pollers
// (pkg/poller with pkg/redis/store and pkg/github) against one real
// redis-server and one fake GitHub, on a simulated clock, so that hours of
// polling run in seconds without sleeping. Its tests check what only the
// pieces together show (docs/scheduling.md, docs/redis.md): about one GitHub
// request per app per interval for the whole fleet, life through a Redis
// outage and a flush, and what an idle tick costs Redis. The package has no
// API: everything is in its tests.
package fleet
