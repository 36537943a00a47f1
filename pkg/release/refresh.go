package release

import "time"

// Refresh is a request to ask GitHub about an app at once, whatever its
// freshness: a signed GitHub webhook said that the app's releases changed.
// It is a hint, never data to serve.
type Refresh struct {
	At  time.Time // when the request was made: the delivery's arrival
	Tag string    // the tag the delivery named as published (not a draft, not a prerelease); "" for none
}
