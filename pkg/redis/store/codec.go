package store

import (
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/storytold/craft-releases/pkg/release"
	"github.com/storytold/craft-releases/pkg/schedule"
	"github.com/storytold/craft-releases/pkg/updates/companion"
)

// formatVersion is the value of every hash's "v" field; any other value makes
// the whole hash read as absent.
const formatVersion = "1"

// Hash field names (docs/redis.md, "Keys").
const (
	fieldV          = "v"
	fieldFetchedMS  = "fetched_ms"
	fieldETag       = "etag"
	fieldRelease    = "release"
	fieldCompanions = "companions"
	fieldFailedMS   = "failed_ms"
	fieldFailures   = "failures"
	fieldClaimedMS  = "claimed_ms"

	fieldHistory           = "history"
	fieldHistoryCompanions = "history_companions"

	fieldNotFoundSinceMS = "notfound_since_ms"
	fieldNotFound        = "notfound"
	fieldBy              = "by"
	fieldUntilMS         = "until_ms"
	fieldTrouble         = "trouble"

	fieldReadMS        = "read_ms"
	fieldAppRenames    = "app_renames"
	fieldRepoRenames   = "repo_renames"
	fieldAnnouncements = "announcements"
	fieldAlerts        = "alerts"
	fieldDecisions     = "decisions"
)

// DecodeApp reads an app hash of app (HGETALL's answer, or a bounded read's;
// nil for no key) as a reader whose clock says now. A hash of another format
// version reads as the zero Entry. A time counts only if it is an integer > 0
// of at most 18 digits and no more than release.MaxSkew ahead of now;
// failures defaults to 1. The fetch part counts only when fetched_ms, etag
// and the release are all there and the release is one that release.Decode
// accepts for app (its repository and tag prefix); its companions count
// only when decodeCompanions accepts them for that release. For a history
// entry (release.HistoryChannel) the fetch part also needs the history
// field, which decodeHistory must accept for app, and its history's
// companions count only when decodeHistoryCompanions accepts them. Anything
// else reads as absent, and err says why when something was refused rather
// than merely absent: a release or history that is not app's (or is over
// its bound), companions that are not the release's, or a time in the
// future.
// The guarded write decides on what it reads, on both of its paths
// (guard.go).
func DecodeApp(app release.App, h map[string]string, now time.Time) (release.Entry, error) {
	return decodeApp(app, h, now, nil)
}

// decodeApp is DecodeApp with the release decoded by memo (nil: decoded
// every time).
func decodeApp(app release.App, h map[string]string, now time.Time, memo *releaseMemo) (e release.Entry, err error) {
	if h[fieldV] != formatVersion {
		return e, nil
	}
	refuse := func(field string, why error) {
		if err == nil {
			err = fmt.Errorf("%s: %w", field, why)
		}
	}
	at := func(field string) time.Time {
		t, ok := millis(h[field])
		if ok && t.Sub(now) > release.MaxSkew {
			refuse(field, fmt.Errorf("%s ahead of this clock", t.Sub(now).Round(time.Second)))
			return time.Time{}
		}
		return t
	}
	if fetched := at(fieldFetchedMS); !fetched.IsZero() {
		etag, hasETag := h[fieldETag]
		raw, hasRelease := h[fieldRelease]
		rawHist, hasHist := h[fieldHistory]
		if app.Channel != release.HistoryChannel {
			hasHist = true
		}
		if hasETag && hasRelease && hasHist {
			var hist *release.History
			rel, relErr := memo.decode(app, raw)
			if relErr != nil {
				refuse(fieldRelease, relErr)
			} else if app.Channel == release.HistoryChannel {
				if hist, relErr = decodeHistory(app, rawHist); relErr != nil {
					refuse(fieldHistory, relErr)
				}
			}
			if relErr == nil {
				e.FetchedAt, e.ETag, e.Release, e.History = fetched, etag, rel, hist
				if sigs, ok := h[fieldHistoryCompanions]; ok && hist != nil {
					var sigErr error
					if e.History, sigErr = decodeHistoryCompanions(hist, sigs); sigErr != nil {
						e.History = hist
						refuse(fieldHistoryCompanions, sigErr)
					}
				}
				if sigs, ok := h[fieldCompanions]; ok {
					var sigErr error
					if e.Companions, sigErr = decodeCompanions(rel, sigs); sigErr != nil {
						refuse(fieldCompanions, sigErr)
					}
				}
			}
		}
	}
	if failed := at(fieldFailedMS); !failed.IsZero() {
		e.FailedAt, e.Failures = failed, 1
		if n, ok := positive(h[fieldFailures]); ok && n <= math.MaxInt32 {
			e.Failures = int(n)
		}
		if since := at(fieldNotFoundSinceMS); !since.IsZero() && !since.After(failed) {
			if n, ok := positive(h[fieldNotFound]); ok && int(n) <= e.Failures {
				e.NotFoundSince, e.NotFound = since, int(n)
			}
		}
	}
	e.ClaimedAt = at(fieldClaimedMS)
	return e, err
}

// maxCompanionsField bounds the companions field (companion.MaxStored).
const maxCompanionsField = companion.MaxStored

// decodeCompanions reads the companions field of a hash whose release is
// rel: a JSON object of at most release.MaxCompanions names, each a
// companion of rel (companion.Names) whose value companion.Check reads as
// its own text, as a poller stores it. Anything else is refused whole;
// "{}" is none.
func decodeCompanions(rel *release.Release, raw string) (*release.Companions, error) {
	var m map[string]string
	if err := json.Unmarshal([]byte(raw), &m); err != nil || m == nil {
		return nil, fmt.Errorf("not a JSON object of strings")
	}
	if len(m) > release.MaxCompanions {
		return nil, fmt.Errorf("%d companions, over %d", len(m), release.MaxCompanions)
	}
	for name, text := range m {
		kept, err := companion.Check(rel, name, []byte(text), nil)
		if err != nil {
			return nil, fmt.Errorf("%q: %w", name, err)
		}
		if kept != text {
			return nil, fmt.Errorf("%q: not stored as its text", name)
		}
	}
	return release.NewCompanions(m), nil
}

// maxHistoryField bounds the history field: MaxHistory releases, each
// within release.MaxEncoded.
const maxHistoryField = release.MaxHistory * (release.MaxEncoded + 1)

// maxHistoryCompanionsField bounds the history_companions field: the
// companions of each release a History keeps them of.
const maxHistoryCompanionsField = 2 * release.HistoryCompanions * (maxCompanionsField + release.MaxTag + 4)

// decodeHistory reads the history field of app's history entry: a JSON
// array of at most release.MaxHistory releases, each one that
// release.Decode accepts for app, exactly as encodeHistory writes the
// History of them (newest first, of distinct tags, each dated). Anything
// else is refused whole; "[]" is a history without releases.
func decodeHistory(app release.App, raw string) (*release.History, error) {
	if len(raw) > maxHistoryField {
		return nil, fmt.Errorf("%d bytes, over %d", len(raw), maxHistoryField)
	}
	var list []json.RawMessage
	if !strings.HasPrefix(raw, "[") || json.Unmarshal([]byte(raw), &list) != nil {
		return nil, fmt.Errorf("not a JSON array")
	}
	if len(list) > release.MaxHistory {
		return nil, fmt.Errorf("%d releases, over %d", len(list), release.MaxHistory)
	}
	rels := make([]*release.Release, len(list))
	for i, b := range list {
		rel, err := release.Decode(app, b)
		if err != nil {
			return nil, fmt.Errorf("release %d: %w", i, err)
		}
		if rel == nil {
			return nil, fmt.Errorf("release %d: null", i)
		}
		rels[i] = rel
	}
	h := release.NewHistory(rels)
	if canon, err := encodeHistory(h); err != nil || canon != raw {
		return nil, fmt.Errorf("not as written (undated, repeated or out of order)")
	}
	return h, nil
}

// encodeHistory is the history field for h: its releases as a JSON array,
// newest first; "[]" for none.
func encodeHistory(h *release.History) (string, error) {
	var b strings.Builder
	b.WriteByte('[')
	for i, r := range h.List() {
		enc, err := release.Marshal(r)
		if err != nil {
			return "", err
		}
		if i > 0 {
			b.WriteByte(',')
		}
		b.Write(enc)
	}
	b.WriteByte(']')
	return b.String(), nil
}

// decodeHistoryCompanions reads the history_companions field of a history
// entry whose history is h: a JSON object by tag, each tag one of the
// releases h keeps the companions of (release.History.Keeps), each value
// what decodeCompanions accepts for that release. It returns h with them.
// Anything else is refused whole; "{}" is none.
func decodeHistoryCompanions(h *release.History, raw string) (*release.History, error) {
	var m map[string]json.RawMessage
	if err := json.Unmarshal([]byte(raw), &m); err != nil || m == nil {
		return nil, fmt.Errorf("not a JSON object")
	}
	add := make(map[string]*release.Companions, len(m))
	for tag, sigs := range m {
		i := slices.IndexFunc(h.Companioned(), func(r *release.Release) bool { return r.Tag == tag })
		if i < 0 {
			return nil, fmt.Errorf("%q: not a release whose companions are kept", tag)
		}
		c, err := decodeCompanions(h.Companioned()[i], string(sigs))
		if err != nil {
			return nil, fmt.Errorf("%q: %w", tag, err)
		}
		add[tag] = c
	}
	return h.WithCompanions(add), nil
}

// encodeHistoryCompanions is the history_companions field for h: a JSON
// object by tag of each release's companions as encodeCompanions writes
// them; "{}" for none.
func encodeHistoryCompanions(h *release.History) (string, error) {
	m := make(map[string]json.RawMessage)
	for _, r := range h.Companioned() {
		c := h.CompanionsOf(r.Tag)
		if c.Len() == 0 {
			continue
		}
		enc, err := encodeCompanions(c)
		if err != nil {
			return "", err
		}
		m[r.Tag] = json.RawMessage(enc)
	}
	b, err := release.Marshal(m)
	return string(b), err
}

// encodeCompanions is the companions field for s: a JSON object, "{}" for
// none. Companions that would take the field over its bound are left out,
// the first names in order kept.
func encodeCompanions(s *release.Companions) (string, error) {
	m := make(map[string]string, s.Len())
	size := 2
	for _, name := range s.Names() {
		if len(m) == release.MaxCompanions {
			break
		}
		text, _ := s.Get(name)
		b, err := release.Marshal(map[string]string{name: text})
		if err != nil {
			return "", err
		}
		if size+len(b) > maxCompanionsField {
			break
		}
		m[name], size = text, size+len(b)
	}
	b, err := release.Marshal(m)
	return string(b), err
}

// releaseMemo remembers the last release an app's hash held that
// release.Decode accepted, and the release it decoded to: a poller reads
// every app's hash at every tick, and the release in it changes only with a
// release, so that each is decoded once, not once a tick. Each app has its
// own (an app and its pre-release entry share a repository, not a release).
// Decode depends on nothing but its app and bytes, and a release is never
// changed once decoded, so a remembered one is what decoding the same bytes
// again would give. It is safe for concurrent use.
type releaseMemo struct {
	mu  sync.Mutex
	app release.App
	raw string
	rel *release.Release // nil: none remembered
}

// decode is release.Decode(app, raw), remembered when accepted. A nil memo
// remembers nothing.
func (m *releaseMemo) decode(app release.App, raw string) (*release.Release, error) {
	if m == nil {
		return release.Decode(app, []byte(raw))
	}
	m.mu.Lock()
	rel, hit := m.rel, m.rel != nil && m.app == app && m.raw == raw
	m.mu.Unlock()
	if hit {
		return rel, nil
	}
	rel, err := release.Decode(app, []byte(raw))
	if err != nil {
		return nil, err
	}
	m.mu.Lock()
	m.app, m.raw, m.rel = app, raw, rel
	m.mu.Unlock()
	return rel, nil
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
// hash: it counts only when read_ms is a readable time, each of the four
// lists (app_renames, repo_renames, announcements, alerts) is a JSON array of
// its wire type, and decisions, when there is the field, is what the poller
// writes (decodeDecisions); otherwise it reads as the zero Bulletin and a
// zero time. A hash without decisions (written by an older poller) decides
// nothing. The lists and the decisions of a readable hash are never nil. The
// guarded write reads the hash the same way (guard.go).
func DecodeMeta(h map[string]string) (release.Bulletin, time.Time) {
	var m release.Bulletin
	if h[fieldV] != formatVersion {
		return release.Bulletin{}, time.Time{}
	}
	at, ok := millis(h[fieldReadMS])
	if !ok ||
		!decodeList(h[fieldAppRenames], &m.AppRenames) ||
		!decodeList(h[fieldRepoRenames], &m.RepoRenames) ||
		!decodeList(h[fieldAnnouncements], &m.Notices.Announcements) ||
		!decodeList(h[fieldAlerts], &m.Notices.Alerts) {
		return release.Bulletin{}, time.Time{}
	}
	m.Decisions = map[string]release.Decisions{}
	if s, ok := h[fieldDecisions]; ok {
		if m.Decisions, ok = decodeDecisions(s); !ok {
			return release.Bulletin{}, time.Time{}
		}
	}
	return m, at
}

// decodeDecisions reads the decisions field: a JSON object of app keys
// (a-z, 0-9, '.', '_', '-') to decisions that pass release.Verify, written
// exactly as encodeDecisions writes it (no other spelling, order, key case
// or white space), so that a reader never applies a decision no poller
// published. ok is false for anything else.
func decodeDecisions(s string) (map[string]release.Decisions, bool) {
	var d map[string]release.Decisions
	if !strings.HasPrefix(s, "{") || json.Unmarshal([]byte(s), &d) != nil {
		return nil, false
	}
	for app, dec := range d {
		if !release.ValidKey(app) || dec.Verify() != nil {
			return nil, false
		}
	}
	if again, err := encodeDecisions(d); err != nil || again != s {
		return nil, false
	}
	return d, true
}

// encodeDecisions is the decisions field for d: compact JSON, apps in the
// order of their keys, {} for none. It fails when that is over
// release.MaxEncoded bytes, which no reader would read.
func encodeDecisions(d map[string]release.Decisions) (string, error) {
	if d == nil {
		d = map[string]release.Decisions{}
	}
	b, err := release.Marshal(d)
	if err != nil {
		return "", err
	}
	if len(b) > release.MaxEncoded {
		return "", fmt.Errorf("decisions of %d bytes are over %d", len(b), release.MaxEncoded)
	}
	return string(b), nil
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

// encodeMeta returns the meta hash's four list fields and the decisions
// field, and their values, each list as compact JSON, a nil list as [], the
// decisions as encodeDecisions writes them.
func encodeMeta(m release.Bulletin) ([]string, error) {
	pairs := make([]string, 0, 10)
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
	d, err := encodeDecisions(m.Decisions)
	if err != nil {
		return nil, err
	}
	return append(pairs, fieldDecisions, d), nil
}

// nonNil returns s, or an empty slice when s is nil, so it encodes as [].
func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
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

// msOrZero is ms(t), or "0" (absent to a reader) for the zero time.
func msOrZero(t time.Time) string {
	if t.IsZero() {
		return "0"
	}
	return ms(t)
}
