// Package snapshot holds what the API serves: every configured app's entry,
// merged under the merge law, and the answers rendered from them once per
// change (the full JSON, each app's own JSON and downloads, the release page;
// each with a gzip copy, ETags and header values), published behind an atomic
// pointer so that readers never lock. A rendering redoes only the apps that
// changed: each app's pieces are rendered and compressed once and joined
// into the answers, so that a fetch costs the same at 13 apps or 1,000.
package snapshot

import (
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"fmt"
	"reflect"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/storytold/craft-releases/pkg/clock"
	"github.com/storytold/craft-releases/pkg/release"
)

// Cache-Control values (docs/wire.md, "Headers and status codes").
const (
	// CacheControlUnfetched is the Cache-Control of an answer that shows an app never
	// fetched: no cache may keep a pod's "nothing yet".
	CacheControlUnfetched = "no-store"
	// CacheControlFetched is the Cache-Control of an answer whose every app was
	// fetched. A minute fresh; then a cache may answer with its copy for 30 s
	// more while it revalidates in the background (so that no launcher
	// waits on the origin at each expiry), and for a day when the origin
	// errs or cannot be reached (so that launchers keep an answer while every
	// pod is down). No s-maxage: it would turn both off at Cloudflare.
	CacheControlFetched = "public, max-age=60, stale-while-revalidate=30, stale-if-error=86400"
)

// Doc is one answer in both representations with everything a handler sends
// with them. Nothing in it may be modified, since every reader shares it.
// Its methods are safe for concurrent use.
type Doc struct {
	body, gzip *joined // the compact JSON without a trailing newline, or the HTML page; and its gzip copy
	ETag       string  // strong, quoted validator of Body
	GzipETag   string  // strong, quoted validator of Gzip, distinct from ETag

	CacheControl string // CacheControlUnfetched until what it shows was fetched, then CacheControlFetched
	Values       HeaderValues
}

// Body returns the answer's bytes: the compact JSON without a trailing
// newline, or the HTML page. They are one slice, joined from the rendering's
// parts the first time they are asked for, so that an answer is written at
// once and a rendering that is not served costs no copy.
func (d *Doc) Body() []byte { return d.body.bytes() }

// Gzip returns Body compressed with gzip, joined as Body is.
func (d *Doc) Gzip() []byte { return d.gzip.bytes() }

// joined is bytes kept as the parts they are made of until first asked
// for, then joined once.
type joined struct {
	once  sync.Once
	parts [][]byte // nil once joined
	b     []byte
}

func join(parts ...[]byte) *joined {
	if len(parts) == 1 {
		return &joined{b: parts[0]}
	}
	return &joined{parts: parts}
}

func (j *joined) bytes() []byte {
	if j == nil { // a zero Doc, such as a 404 Offer's
		return nil
	}
	j.once.Do(j.join)
	return j.b
}

// len returns how many bytes j has; only before j is shared.
func (j *joined) len() int {
	n := len(j.b)
	for _, p := range j.parts {
		n += len(p)
	}
	return n
}

// sum returns the SHA-256 of j's bytes, without joining them.
func (j *joined) sum() [32]byte {
	if j.parts == nil {
		return sha256.Sum256(j.b)
	}
	h := sha256.New()
	for _, p := range j.parts {
		h.Write(p)
	}
	var sum [32]byte
	h.Sum(sum[:0])
	return sum
}

func (j *joined) join() {
	if j.parts == nil {
		return
	}
	n := 0
	for _, p := range j.parts {
		n += len(p)
	}
	b := make([]byte, 0, n)
	for _, p := range j.parts {
		b = append(b, p...)
	}
	j.b, j.parts = b, nil
}

// Rendering is one immutable rendering of the snapshot: the full answer of
// GET /v1/craft_apps/release_info (its Doc), each app's own answer, and the
// release page. Nothing in it may be modified, since every reader shares it.
type Rendering struct {
	Doc // the full answer; CacheControl is CacheControlFetched once every app was fetched

	Complete    bool      // every app was fetched: last_fetched is not null
	LastFetched time.Time // the oldest app_last_fetched; zero while not Complete

	RenderedAt time.Time // by the snapshot's clock

	// Apps holds each configured app's own answer and downloads, by key.
	Apps map[string]*App
	// Page is the release page, HTML; cached like the full answer.
	Page Doc
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
// writers (Set, SetAll, SetMeta) may run at once, and Current never blocks.
// Entries and releases handed to it are kept, not copied: the caller must not
// modify them afterwards. It trusts what it is given: every release must
// have passed release.Verify for its app's repository.
//
// Writers that change what is served at the same time share one rendering:
// each returns once a rendering shows its change, and one render serves all
// the changes made while the previous one ran.
type Snapshot struct {
	clock clock.Clock
	apps  []release.App  // in configured order
	index map[string]int // entry key (release.Entries) → index into apps

	mu      sync.Mutex // guards entries, meta, the pending change and changes
	entries map[string]release.Entry
	meta    release.Bulletin
	pending change // not rendered yet
	changes uint64 // changes made, rendered or not

	renderMu sync.Mutex // serialises renders; guards r and rendered
	r        *renderer
	rendered uint64 // changes the current rendering shows

	cur     atomic.Pointer[Rendering]
	renders atomic.Uint64
}

// New returns a snapshot that lists exactly apps, none of them fetched yet,
// already rendered. It keeps an entry for each of release.Entries(apps): an
// app with a pre-release channel has two, and shows as fetched once both
// were. c is the clock of Rendering.RenderedAt (nil: clock.System). A key
// repeated in apps is listed once, as its first App.
func New(apps []release.App, c clock.Clock) *Snapshot {
	s := &Snapshot{
		clock:   clock.Or(c),
		index:   make(map[string]int, len(apps)),
		entries: make(map[string]release.Entry, len(apps)),
		meta:    normalize(release.Bulletin{}),
	}
	for _, a := range apps {
		if _, dup := s.index[a.Key]; dup {
			continue
		}
		for _, e := range release.Entries([]release.App{a}) {
			s.index[e.Key] = len(s.apps)
			s.entries[e.Key] = release.Entry{}
		}
		s.apps = append(s.apps, a)
	}
	s.r = newRenderer(s.apps)
	first := change{entries: make(map[int]appEntries, len(s.apps)), meta: &s.meta}
	first.oldest, first.complete = s.oldestFetch()
	for i := range s.apps {
		first.entries[i] = appEntries{}
	}
	s.publish(s.r.render(first, nil, s.clock.Now()))
	return s
}

// Current returns the latest rendering. It never blocks and never returns nil.
func (s *Snapshot) Current() *Rendering { return s.cur.Load() }

// Renders reports how many renderings were made, including the first one by New.
func (s *Snapshot) Renders() uint64 { return s.renders.Load() }

// Set merges e into the entry of key (an app's, or its pre-release entry's:
// release.Entries) under the merge law (release.Entry.Merge), judged at the
// snapshot's clock, and re-renders when the served fetch changed: an older or
// equal fetch, a failure or a claim renders nothing. A key that is not
// configured is ignored.
func (s *Snapshot) Set(key string, e release.Entry) {
	s.SetAll(map[string]release.Entry{key: e}, s.clock.Now())
}

// SetAll merges every entry as Set does, judged at now (the fleet's time,
// which may differ from the snapshot's clock: docs/redis.md, "Time you cannot
// trust"), with at most one render for all of them, and reports whether any
// entry moved forward in any part (a failure or a claim too, which render
// nothing). This is the one place an API pod applies the merge law.
func (s *Snapshot) SetAll(entries map[string]release.Entry, now time.Time) bool {
	s.mu.Lock()
	moved, fetched := false, false
	for key, e := range entries {
		old, ok := s.entries[key]
		if !ok {
			continue
		}
		merged := old.Merge(e, now)
		if merged == old {
			continue
		}
		s.entries[key], moved = merged, true
		// Merge replaces the fetch part only along with its time, so the
		// time tells whether ETag or Release may have changed; signatures
		// also arrive for the same fetch.
		if !merged.FetchedAt.Equal(old.FetchedAt) || merged.Companions != old.Companions || merged.History != old.History {
			s.changeApp(s.index[key])
			fetched = true
		}
	}
	s.renderChange(fetched)
	return moved
}

// changeApp marks app i as changed in the pending change. s.mu must be
// held.
func (s *Snapshot) changeApp(i int) {
	if s.pending.entries == nil {
		s.pending.entries = map[int]appEntries{}
	}
	a := s.apps[i]
	s.pending.entries[i] = appEntries{stable: s.entries[a.Key], pre: s.entries[a.PrereleaseEntry().Key],
		history: s.entries[a.HistoryEntry().Key], decisions: s.meta.Decisions[a.Key]}
}

// SetMeta replaces the renames, notices and decisions, and re-renders what
// they change: the renames and notices, and each app whose decisions
// changed. What it is given is copied.
func (s *Snapshot) SetMeta(m release.Bulletin) {
	m = normalize(m)
	s.mu.Lock()
	changed := false
	if !reflect.DeepEqual(m.Decisions, s.meta.Decisions) {
		old := s.meta.Decisions
		s.meta.Decisions = m.Decisions
		for i, a := range s.apps {
			if !reflect.DeepEqual(old[a.Key], m.Decisions[a.Key]) {
				s.changeApp(i)
				changed = true
			}
		}
	}
	if m.Decisions = s.meta.Decisions; !reflect.DeepEqual(m, s.meta) {
		s.meta = m
		s.pending.meta = &m
		changed = true
	}
	s.renderChange(changed)
}

// renderChange counts a change when changed, releases s.mu (which the
// caller holds) and returns once the current rendering shows every change
// made so far.
func (s *Snapshot) renderChange(changed bool) {
	if changed {
		s.changes++
	}
	want := s.changes
	s.mu.Unlock()
	s.renderMu.Lock()
	defer s.renderMu.Unlock()
	if s.rendered >= want {
		// Rendered by another writer while this one waited.
		return
	}
	s.mu.Lock()
	c, upTo := s.pending, s.changes
	c.oldest, c.complete = s.oldestFetch()
	s.pending = change{}
	s.mu.Unlock()
	s.publish(s.r.render(c, s.cur.Load(), s.clock.Now()))
	s.rendered = upTo
}

// oldestFetch returns the oldest app_last_fetched and whether every app was
// fetched; the time is zero while one was not (or there is no app). A
// history entry does not count: only the apps with decisions have one
// fetched. s.mu must be held, except by New before s is shared.
func (s *Snapshot) oldestFetch() (time.Time, bool) {
	var oldest time.Time
	for key, e := range s.entries {
		if _, ch := release.AppOf(key); ch == release.HistoryChannel {
			continue
		}
		if !e.Fetched() {
			return time.Time{}, false
		}
		if oldest.IsZero() || e.FetchedAt.Before(oldest) {
			oldest = e.FetchedAt
		}
	}
	return oldest, len(s.entries) > 0
}

// publish makes r the current rendering.
func (s *Snapshot) publish(r *Rendering) {
	s.cur.Store(r)
	s.renders.Add(1)
}

// NewDoc returns body as a Doc served with Cache-Control cacheControl, with
// its gzip copy, ETags and header values, as a rendering's answers are made:
// for a document that never changes, such as the OpenAPI document. It is
// safe for concurrent use; body is kept, not copied.
func NewDoc(body []byte, cacheControl string) Doc {
	// NewWriterLevel fails only on an invalid level.
	gz, _ := gzip.NewWriterLevel(nil, gzip.DefaultCompression)
	zipped := compress(gz, body)
	return newDoc(join(body), join(zipped),
		tag([][32]byte{sha256.Sum256(body)}), tag([][32]byte{sha256.Sum256(zipped)}), cacheControl)
}

// mustMarshal returns v's wire JSON.
func mustMarshal(v any) []byte {
	b, err := release.Marshal(v)
	if err != nil {
		// The wire types hold no value encoding/json refuses.
		panic(fmt.Sprintf("snapshot: render: %v", err))
	}
	return b
}

// compress returns body gzipped with gz, a writer that is reused.
func compress(gz *gzip.Writer, body []byte) []byte {
	var buf bytes.Buffer
	buf.Grow(len(body) / 4)
	gz.Reset(&buf)
	// Writing to a bytes.Buffer cannot fail.
	_, _ = gz.Write(body)
	_ = gz.Close()
	return buf.Bytes()
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
// that it encodes as [], and of its decisions, without the empty ones.
func normalize(m release.Bulletin) release.Bulletin {
	n := release.Bulletin{
		AppRenames:  nonNil(slices.Clone(m.AppRenames)),
		RepoRenames: nonNil(slices.Clone(m.RepoRenames)),
		Notices: release.Notices{
			Announcements: nonNil(slices.Clone(m.Notices.Announcements)),
			Alerts:        nonNil(slices.Clone(m.Notices.Alerts)),
		},
	}
	for key, d := range m.Decisions {
		if d.Empty() {
			continue
		}
		if n.Decisions == nil {
			n.Decisions = map[string]release.Decisions{}
		}
		d.Withdrawn = slices.Clone(d.Withdrawn)
		if d.Rollout != nil {
			d.Rollout = &release.Rollout{Tag: d.Rollout.Tag, Percent: d.Rollout.Percent}
		}
		if d.Minimum != nil {
			d.Minimum = &release.Minimum{Version: d.Minimum.Version, Reason: d.Minimum.Reason}
		}
		n.Decisions[key] = d
	}
	return n
}

// nonNil returns s, or an empty slice when s is nil, so it encodes as [].
func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}
