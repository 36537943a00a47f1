package store

import "strings"

// The least-privilege Redis users of the two binaries (docs/operations.md,
// "Least-privilege users"), as ACL SETUSER takes their rules after the user
// name and its password. Each reaches only the keys under keyPrefix and the
// one Pub/Sub channel RefreshChannel, and may send only the commands its binary sends, the
// handshake included; the binaries' tests run as these users, so that a new
// command fails a test before it fails a deploy. The handshake is HELLO
// (with AUTH in it) and, on a Sentinel's primary, ROLE; a Cluster's topology
// is CLUSTER SLOTS (CLUSTER SHARDS from Redis 8). Neither client sends CLIENT
// SETINFO (rueidis would ignore its refusal, but
// each would fill the ACL LOG, and Redis 7.0 cannot grant it).
const (
	// PollerACL: the claims, fetches, 304s, failures and meta through the
	// guarded-write script (EVALSHA, EVAL, and the commands it calls) or
	// WATCH/MULTI/EXEC where scripts are refused; the backoff in a
	// MULTI/EXEC; the bounded reads (HSTRLEN, then HMGET), of the webhook's
	// refresh requests too, and status reads with their TTLs; TIME, the
	// fleet's clock; the cluster's topology; SUBSCRIBE to RefreshChannel,
	// and PUBLISH on it for the refresh requests an operator's verb files.
	PollerACL = "on resetkeys ~craftApps:releases:* resetchannels &craftApps:releases:refresh -@all " +
		"+hello +ping +role +cluster|slots +cluster|shards " +
		"+hmget +hget +hstrlen +type +pttl " +
		"+hset +del +pexpire +evalsha +eval +watch +unwatch +multi +exec +subscribe +publish +time"

	// APIACL: read-only keys (%R~), and only the reads of the hydrator:
	// the bounded reads (HSTRLEN, then HMGET) with client-side caching
	// (CLIENT TRACKING, and CLIENT CACHING, PTTL and MULTI/EXEC around each
	// cached read), and TIME, the fleet's clock: an API pod cannot write a
	// release entry, whatever command it sent. The webhook writes only its
	// delivery ids and refresh requests (SET, HSET, PEXPIRE, DEL in a
	// MULTI/EXEC) and announces them on RefreshChannel (PUBLISH).
	APIACL = "on resetkeys %R~craftApps:releases:* ~craftApps:releases:delivery:* ~craftApps:releases:refresh:* " +
		"resetchannels &craftApps:releases:refresh -@all " +
		"+hello +ping +role +cluster|slots +cluster|shards " +
		"+client|tracking +client|caching +multi +exec " +
		"+hmget +hstrlen +time +pttl +set +hset +del +pexpire +publish"
)

// SetUser returns the arguments of ACL SETUSER that create or update user
// with password and rules (PollerACL or APIACL), as a client sends them.
func SetUser(user, password, rules string) []string {
	return append([]string{"ACL", "SETUSER", user, ">" + password}, strings.Fields(rules)...)
}
