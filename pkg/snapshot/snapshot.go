// Package snapshot holds what the API serves: every configured app's entry,
// merged under the merge law, and the response rendered from them once per
// change (JSON, a gzip copy, their ETags and header values), published behind
// an atomic pointer so that readers never lock.
package snapshot

import (
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/storytold/craft-releases/pkg/release"
)

// Cache-Control values (wire.md, "Headers and status").
const (
	cacheCold = "no-store"           // some app was never fetched
	cacheWarm = "public, max-age=60" // every app was fetched
)

// Rendering is one immutable rendering of the snapshot: the response body in
// both representations with everything a handler sends with them. Nothing in
// it may be modified, since every reader shares it.
type Rendering struct {
	Body     []byte // the JSON body, compact, no trailing newline
	Gzip     []byte // Body compressed with gzip
	ETag     string // strong, quoted validator of Body
	GzipETag string // strong, quoted validator of Gzip, distinct from ETag

	CacheControl string    // "no-store" until every app was fetched, then "public, max-age=60"
	Complete     bool      // every app was fetched: last_fetched is not null
	LastFetched  time.Time // the oldest app_last_fetched; zero while not Complete

	// FetchedAt is each configured app's app_last_fetched; zero means never.
	FetchedAt  map[string]time.Time
	RenderedAt time.Time // by the snapshot's clock

	Values HeaderValues
}

// HeaderValues holds a rendering's response header values as one-element
// slices, built once so that a handler assigns them to an http.Header without
// allocating. Every request shares them: never modify or append to them.
type HeaderValues struct {
	CacheControl      []string
	ETag              []string // for Body
	ContentLength     []string // len(Body)
	GzipETag          []string // for Gzip
	GzipContentLength []string // len(Gzip)
}

// Snapshot is the served value. Its methods are safe for concurrent use:
// writers (Set, SetAll, SetMeta) are serialised, and Current never blocks.
// Entries and releases handed to it are kept, not copied: the caller must not
// modify them afterwards.
type Snapshot struct {
	now  func() time.Time
	apps []release.App // in configured order

	mu      sync.Mutex // serialises writers; guards entries, meta and gz
	entries map[string]release.Entry
	meta    release.Meta
	gz      *gzip.Writer // reused: a best-compression writer is large

	cur     atomic.Pointer[Rendering]
	renders atomic.Uint64
}

// New returns a snapshot that lists exactly apps, none of them fetched yet,
// already rendered. now is the clock for Rendering.RenderedAt; it must not be
// nil. A key repeated in apps is listed once, as its first App.
func New(apps []release.App, now func() time.Time) *Snapshot {
	s := &Snapshot{
		now:     now,
		entries: make(map[string]release.Entry, len(apps)),
		meta:    normalize(release.Meta{}),
	}
	for _, a := range apps {
		if _, dup := s.entries[a.Key]; dup {
			continue
		}
		s.entries[a.Key] = release.Entry{}
		s.apps = append(s.apps, a)
	}
	// The default level costs about half the CPU of the best for 0.3 % more
	// bytes, and renders sit on the propagation path. NewWriterLevel fails
	// only on an invalid level.
	s.gz, _ = gzip.NewWriterLevel(nil, gzip.DefaultCompression)
	s.render()
	return s
}

// Current returns the latest rendering. It never blocks and never returns nil.
func (s *Snapshot) Current() *Rendering { return s.cur.Load() }

// Renders reports how many renderings were made, including the first one by New.
func (s *Snapshot) Renders() uint64 { return s.renders.Load() }

// Set merges e into app's entry under the merge law (release.Entry.Merge) and
// re-renders when the served fetch changed: an older or equal fetch, a failure
// or a claim renders nothing. An app that is not configured is ignored.
func (s *Snapshot) Set(app string, e release.Entry) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.merge(app, e) {
		s.render()
	}
}

// SetAll merges every entry as Set does, with at most one render for all of them.
func (s *Snapshot) SetAll(entries map[string]release.Entry) {
	s.mu.Lock()
	defer s.mu.Unlock()
	changed := false
	for app, e := range entries {
		if s.merge(app, e) {
			changed = true
		}
	}
	if changed {
		s.render()
	}
}

// SetMeta replaces the renames and notices and re-renders when they differ
// from the ones served. The lists are copied.
func (s *Snapshot) SetMeta(m release.Meta) {
	m = normalize(m)
	s.mu.Lock()
	defer s.mu.Unlock()
	if reflect.DeepEqual(m, s.meta) {
		return
	}
	s.meta = m
	s.render()
}

// merge stores app's merged entry and reports whether its fetch moved, which
// is the only part of an entry the wire shows. s.mu must be held.
func (s *Snapshot) merge(app string, e release.Entry) bool {
	old, ok := s.entries[app]
	if !ok {
		return false
	}
	merged := old.Merge(e)
	s.entries[app] = merged
	// Merge replaces the fetch part only with a strictly newer FetchedAt, so
	// the time alone tells whether ETag or Release may have changed.
	return !merged.FetchedAt.Equal(old.FetchedAt)
}

// render builds a new Rendering from the entries and publishes it. s.mu must
// be held, except by New before s is shared.
func (s *Snapshot) render() {
	info := release.Info{
		Success: true,
		ReleaseInfo: release.ReleaseInfo{
			Apps: make(map[string]release.AppInfo, len(s.apps)),
		},
		AppRenames:       s.meta.AppRenames,
		RepoRenames:      s.meta.RepoRenames,
		ImportantNotices: s.meta.Notices,
	}
	fetched := make(map[string]time.Time, len(s.apps))
	var oldest time.Time
	complete := len(s.apps) > 0
	for _, a := range s.apps {
		e := s.entries[a.Key]
		fetched[a.Key] = e.FetchedAt
		info.ReleaseInfo.Apps[a.Key] = release.AppInfo{
			Name:           a.Name,
			Repo:           a.Repo,
			LatestRelease:  wireRelease(e.Release),
			AppLastFetched: release.NewTime(e.FetchedAt),
		}
		switch {
		case !e.Fetched():
			complete = false
		case oldest.IsZero() || e.FetchedAt.Before(oldest):
			oldest = e.FetchedAt
		}
	}
	if !complete {
		oldest = time.Time{}
	}
	info.ReleaseInfo.LastFetched = release.NewTime(oldest)

	body, err := release.Marshal(info)
	if err != nil {
		// The wire types hold no value encoding/json refuses.
		panic(fmt.Sprintf("snapshot: render: %v", err))
	}
	gz := s.compress(body)

	r := &Rendering{
		Body:         body,
		Gzip:         gz,
		ETag:         etag(body),
		GzipETag:     etag(gz),
		CacheControl: cacheCold,
		Complete:     complete,
		LastFetched:  oldest,
		FetchedAt:    fetched,
		RenderedAt:   s.now(),
	}
	if complete {
		r.CacheControl = cacheWarm
	}
	r.Values = HeaderValues{
		CacheControl:      []string{r.CacheControl},
		ETag:              []string{r.ETag},
		ContentLength:     []string{strconv.Itoa(len(body))},
		GzipETag:          []string{r.GzipETag},
		GzipContentLength: []string{strconv.Itoa(len(gz))},
	}
	s.cur.Store(r)
	s.renders.Add(1)
}

// compress returns body gzipped with the snapshot's reusable writer.
func (s *Snapshot) compress(body []byte) []byte {
	var buf bytes.Buffer
	buf.Grow(len(body) / 4)
	s.gz.Reset(&buf)
	// Writing to a bytes.Buffer cannot fail.
	_, _ = s.gz.Write(body)
	_ = s.gz.Close()
	return buf.Bytes()
}

// etag is a strong, quoted entity tag for b: 128 bits of its SHA-256.
func etag(b []byte) string {
	sum := sha256.Sum256(b)
	var t [2 + 2*16]byte
	t[0], t[len(t)-1] = '"', '"'
	hex.Encode(t[1:len(t)-1], sum[:16])
	return string(t[:])
}

// wireRelease returns rel as served: its assets as [] rather than null.
func wireRelease(rel *release.Release) *release.Release {
	if rel == nil || rel.Assets != nil {
		return rel
	}
	c := *rel
	c.Assets = []release.Asset{}
	return &c
}

// normalize returns a copy of m's lists, with every nil list made empty so
// that it encodes as [].
func normalize(m release.Meta) release.Meta {
	return release.Meta{
		AppRenames:  nonNil(slices.Clone(m.AppRenames)),
		RepoRenames: nonNil(slices.Clone(m.RepoRenames)),
		Notices: release.Notices{
			Announcements: nonNil(slices.Clone(m.Notices.Announcements)),
			Alerts:        nonNil(slices.Clone(m.Notices.Alerts)),
		},
	}
}

// nonNil returns s, or an empty slice when s is nil, so it encodes as [].
func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}
