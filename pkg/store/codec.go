package store

import (
	"encoding/json"
	"strconv"
	"strings"
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

	fieldReadMS        = "read_ms"
	fieldAppRenames    = "app_renames"
	fieldRepoRenames   = "repo_renames"
	fieldAnnouncements = "announcements"
	fieldAlerts        = "alerts"
)

// DecodeApp reads an app hash (HGETALL's answer; nil for no key) forgivingly:
// a time counts only if it is an integer > 0 of at most 18 digits; the fetch
// part counts only when fetched_ms, etag and a readable release are all
// there; failures defaults to 1. Anything unreadable reads as absent, and a
// hash of another format version reads as the zero Entry. The guarded write
// decides on what it reads, on both of its paths (guard.go).
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
// app hash: an unreadable until_ms is no backoff, a trouble that is not 1 to
// 18 ASCII digits is 0, and a hash of another format version is no backoff
// at all. The guarded clearing of the backoff decides on what it reads.
func DecodeBackoff(h map[string]string) schedule.Backoff {
	var b schedule.Backoff
	if h[fieldV] != formatVersion {
		return b
	}
	if at, ok := millis(h[fieldUntilMS]); ok {
		b.Until = at
	}
	if n, ok := positive(h[fieldTrouble]); ok {
		b.Trouble = int(n)
	}
	return b
}

// DecodeMeta reads the meta hash (nil for no key) as DecodeApp reads an app
// hash: it counts only when read_ms is a readable time and each of the four
// lists (app_renames, repo_renames, announcements, alerts) is a JSON array of
// its wire type; otherwise it reads as the zero Meta and a zero time. The
// lists of a readable hash are never nil. The guarded write reads the hash the
// same way (guard.go).
func DecodeMeta(h map[string]string) (release.Meta, time.Time) {
	var m release.Meta
	if h[fieldV] != formatVersion {
		return release.Meta{}, time.Time{}
	}
	at, ok := millis(h[fieldReadMS])
	if !ok ||
		!decodeList(h[fieldAppRenames], &m.AppRenames) ||
		!decodeList(h[fieldRepoRenames], &m.RepoRenames) ||
		!decodeList(h[fieldAnnouncements], &m.Notices.Announcements) ||
		!decodeList(h[fieldAlerts], &m.Notices.Alerts) {
		return release.Meta{}, time.Time{}
	}
	return m, at
}

// decodeList reads a JSON array into *list, never leaving it nil; JSON null
// or anything but an array is unreadable.
func decodeList[T any](s string, list *[]T) bool {
	if !strings.HasPrefix(strings.TrimLeft(s, " \t\r\n"), "[") {
		return false
	}
	if err := json.Unmarshal([]byte(s), list); err != nil {
		return false
	}
	if *list == nil {
		*list = []T{}
	}
	return true
}

// encodeMeta returns the meta hash's four list fields and their values, each
// list as compact JSON, a nil list as [].
func encodeMeta(m release.Meta) ([]string, error) {
	pairs := make([]string, 0, 8)
	for _, f := range []struct {
		name string
		v    any
	}{
		{fieldAppRenames, nonNil(m.AppRenames)},
		{fieldRepoRenames, nonNil(m.RepoRenames)},
		{fieldAnnouncements, nonNil(m.Notices.Announcements)},
		{fieldAlerts, nonNil(m.Notices.Alerts)},
	} {
		b, err := release.Marshal(f.v)
		if err != nil {
			return nil, err
		}
		pairs = append(pairs, f.name, string(b))
	}
	return pairs, nil
}

// nonNil returns s, or an empty slice when s is nil, so it encodes as [].
func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

// decodeRelease reads the "release" field: JSON null (no release) or a release
// object whose tag is release.ValidTag, whose html_url, if any, is a page of
// the releases of a repository (release.PageRepo), and whose assets have
// sizes of 0 to release.MaxSizeBytes, names without bidirectional formatting
// characters and download URLs, if any, that are exactly theirs for the tag
// (release.DownloadRepo). ok is false for anything else: an entry written
// before those rules were the parser's reads as never fetched, and is asked
// of GitHub again without an ETag rather than served.
func decodeRelease(s string) (rel *release.Release, ok bool) {
	if s == "" {
		return nil, false
	}
	if err := json.Unmarshal([]byte(s), &rel); err != nil {
		return nil, false
	}
	if rel == nil {
		return nil, true
	}
	if !release.ValidTag(rel.Tag) {
		return nil, false
	}
	if _, ok := release.PageRepo(rel.HTMLURL); !ok && rel.HTMLURL != "" {
		return nil, false
	}
	for _, a := range rel.Assets {
		if _, ok := release.DownloadRepo(a.DownloadURL, rel.Tag, a.Name); (!ok && a.DownloadURL != "") ||
			a.SizeBytes < 0 || a.SizeBytes > release.MaxSizeBytes || strings.ContainsFunc(a.Name, release.Bidi) {
			return nil, false
		}
	}
	if rel.Assets == nil {
		rel.Assets = []release.Asset{}
	}
	return rel, true
}

// encodeRelease is the "release" field for rel: compact JSON, or null.
func encodeRelease(rel *release.Release) (string, error) {
	b, err := release.Marshal(rel)
	return string(b), err
}

// maxMillisDigits bounds a time field's length, well within int64.
const maxMillisDigits = 18

// millis parses a Unix-millisecond time field as positive does.
func millis(s string) (time.Time, bool) {
	n, ok := positive(s)
	if !ok {
		return time.Time{}, false
	}
	return time.UnixMilli(n).UTC(), true
}

// positive parses a time or count field; ok only for 1 to 18 ASCII digits
// whose value is > 0 (no sign, no spaces).
func positive(s string) (int64, bool) {
	if len(s) == 0 || len(s) > maxMillisDigits {
		return 0, false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return 0, false
		}
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n <= 0 {
		return 0, false
	}
	return n, true
}

// ms formats t as Unix milliseconds.
func ms(t time.Time) string { return strconv.FormatInt(t.UnixMilli(), 10) }
