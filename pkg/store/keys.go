package store

// Every Redis key the service uses is built here.

const keyPrefix = "craftApps:releases:"

// AppKey returns the key of the hash that holds app's shared entry.
func AppKey(app string) string { return keyPrefix + "app:" + app }

// BackoffKey is the key of the hash that holds the fleet backoff.
const BackoffKey = keyPrefix + "backoff"

// MetaKey is the key of the hash that holds the renames and notices the
// pollers read from MySQL.
const MetaKey = keyPrefix + "meta"
