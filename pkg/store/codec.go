package store

import (
	"encoding/json"
	"strconv"
	"time"

	"github.com/storytold/craft-releases/pkg/release"
	"github.com/storytold/craft-releases/pkg/schedule"
)

// formatVersion is the value of every hash's "v" field; any other value makes
// the whole hash read as absent.
const formatVersion = "1"

// Hash field names (redis.md, "Keys").
const (
	fieldV         = "v"
	fieldFetchedMS = "fetched_ms"
	fieldETag      = "etag"
	fieldRelease   = "release"
	fieldFailedMS  = "failed_ms"
	fieldFailures  = "failures"
	fieldClaimedMS = "claimed_ms"
	fieldBy        = "by"
	fieldUntilMS   = "until_ms"
	fieldTrouble   = "trouble"
)

// DecodeApp reads an app hash (HGETALL's answer; nil for no key) forgivingly:
// a time counts only if it is an integer > 0 of at most 18 digits; the fetch
// part counts only when fetched_ms, etag and a readable release are all
// there; failures defaults to 1. Anything unreadable reads as absent, and a
// hash of another format version reads as the zero Entry. The guarded write
// reads hashes the same way (guard.go, guard.lua).
func DecodeApp(h map[string]string) release.Entry {
	var e release.Entry
	if h[fieldV] != formatVersion {
		return e
	}
	if at, ok := millis(h[fieldFetchedMS]); ok {
		etag, hasETag := h[fieldETag]
		rel, relOK := decodeRelease(h[fieldRelease])
		if hasETag && relOK {
			e.FetchedAt, e.ETag, e.Release = at, etag, rel
		}
	}
	if at, ok := millis(h[fieldFailedMS]); ok {
		e.FailedAt, e.Failures = at, 1
		if n, err := strconv.Atoi(h[fieldFailures]); err == nil && n > 0 {
			e.Failures = n
		}
	}
	if at, ok := millis(h[fieldClaimedMS]); ok {
		e.ClaimedAt = at
	}
	return e
}

// DecodeBackoff reads the backoff hash (nil for no key) as DecodeApp reads an
// app hash: an unreadable until_ms is no backoff, an unreadable trouble is 0,
// and a hash of another format version is no backoff at all.
func DecodeBackoff(h map[string]string) schedule.Backoff {
	var b schedule.Backoff
	if h[fieldV] != formatVersion {
		return b
	}
	if at, ok := millis(h[fieldUntilMS]); ok {
		b.Until = at
	}
	if n, err := strconv.Atoi(h[fieldTrouble]); err == nil && n > 0 {
		b.Trouble = n
	}
	return b
}

// decodeRelease reads the "release" field: JSON null (no release) or a release
// object with a non-empty tag. ok is false for anything else.
func decodeRelease(s string) (rel *release.Release, ok bool) {
	if s == "" {
		return nil, false
	}
	if err := json.Unmarshal([]byte(s), &rel); err != nil {
		return nil, false
	}
	if rel != nil && rel.Tag == "" {
		return nil, false
	}
	if rel != nil && rel.Assets == nil {
		rel.Assets = []release.Asset{}
	}
	return rel, true
}

// encodeRelease is the "release" field for rel: compact JSON, or null.
func encodeRelease(rel *release.Release) (string, error) {
	b, err := release.Marshal(rel)
	return string(b), err
}

// maxMillisDigits bounds a time field's length so that the Lua script, whose
// numbers are doubles, reads exactly the same times as this decoder.
const maxMillisDigits = 18

// millis parses a Unix-millisecond time field; ok only for 1 to 18 ASCII digits
// whose value is > 0 (no sign, no spaces, as guard.lua reads it).
func millis(s string) (time.Time, bool) {
	if len(s) == 0 || len(s) > maxMillisDigits {
		return time.Time{}, false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return time.Time{}, false
		}
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n <= 0 {
		return time.Time{}, false
	}
	return time.UnixMilli(n).UTC(), true
}

// ms formats t as Unix milliseconds.
func ms(t time.Time) string { return strconv.FormatInt(t.UnixMilli(), 10) }
