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

// DeliveryKey returns the key that remembers GitHub webhook delivery id.
func DeliveryKey(id string) string { return keyPrefix + "delivery:" + id }

// RefreshKey returns the key of the hash that holds app's pending refresh
// request, the webhook's "fetch it now".
func RefreshKey(app string) string { return keyPrefix + "refresh:" + app }

// RefreshChannel is the Pub/Sub channel on which a refresh request is
// announced, the message being the app's key.
const RefreshChannel = keyPrefix + "refresh"
