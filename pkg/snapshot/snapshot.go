// Package snapshot holds what the API serves: every configured app's entry,
// merged under the merge law, and the answers rendered from them once per
// change (the full JSON, each app's own JSON and downloads, the release page;
// each with a gzip copy, ETags and header values), published behind an atomic
// pointer so that readers never lock.
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

	"github.com/storytold/craft-releases/pkg/clock"
	"github.com/storytold/craft-releases/pkg/page"
	"github.com/storytold/craft-releases/pkg/release"
)

// Cache-Control values (wire.md, "Headers and status").
const (
	// CacheCold is the Cache-Control of an answer that shows an app never
	// fetched: no cache may keep a pod's "nothing yet".
	CacheCold = "no-store"
	// CacheWarm is the Cache-Control of an answer whose every app was
	// fetched. A minute fresh; then a cache may answer with its copy for 30 s
	// more while it revalidates in the background (so that no launcher
	// waits on the origin at each expiry), and for a day when the origin
	// errs or cannot be reached (so that launchers keep an answer while every
	// pod is down). No s-maxage: it would turn both off at Cloudflare.
	CacheWarm = "public, max-age=60, stale-while-revalidate=30, stale-if-error=86400"
)

// Doc is one answer in both representations with everything a handler sends
// with them. Nothing in it may be modified, since every reader shares it.
type Doc struct {
	Body     []byte // compact JSON without a trailing newline, or the HTML page
	Gzip     []byte // Body compressed with gzip
	ETag     string // strong, quoted validator of Body
	GzipETag string // strong, quoted validator of Gzip, distinct from ETag

	CacheControl string // CacheCold until what it shows was fetched, then CacheWarm
	Values       HeaderValues
}

// Rendering is one immutable rendering of the snapshot: the full answer of
// GET /v1/craft_apps/release_info (its Doc), each app's own answer, and the
// release page. Nothing in it may be modified, since every reader shares it.
type Rendering struct {
	Doc // the full answer; CacheControl is CacheWarm once every app was fetched

	Complete    bool      // every app was fetched: last_fetched is not null
	LastFetched time.Time // the oldest app_last_fetched; zero while not Complete

	// FetchedAt is each configured app's app_last_fetched; zero means never.
	FetchedAt  map[string]time.Time
	RenderedAt time.Time // by the snapshot's clock

	// Apps holds each configured app's own answer and downloads, by key.
	Apps map[string]*App
	// Page is the release page, HTML; cached like the full answer.
	Page Doc
}

// App is one app's part of a rendering.
type App struct {
	// Doc is {"success":true,"app":AppInfo}, where AppInfo is byte for byte
	// the app's object in the full answer; CacheCold until the app was fetched.
	Doc

	Fetched bool
	Release *release.Release // nil: never fetched, or no release
	// Downloads are the release's assets that a download link may redirect
	// to, in the release's order: those with a platform. Every release the
	// snapshot is given passed release.Verify at its door (the GitHub
	// parser, the Redis decoder), so each URL is exactly the asset's own.
	Downloads []release.Asset
	// Locations[i] is Downloads[i]'s URL as a Location header value.
	Locations [][]string

	fetchedAt time.Time // the fetch it shows, so that a new rendering can reuse it
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
// modify them afterwards. It trusts what it is given: every release must
// have passed release.Verify for its app's repository.
type Snapshot struct {
	clock clock.Clock
	apps  []release.App // in configured order

	mu      sync.Mutex // serialises writers; guards entries, meta, gz and page
	entries map[string]release.Entry
	meta    release.Meta
	gz      *gzip.Writer // reused: a best-compression writer is large
	page    *page.Renderer

	cur     atomic.Pointer[Rendering]
	renders atomic.Uint64
}

// New returns a snapshot that lists exactly apps, none of them fetched yet,
// already rendered. c is the clock of Rendering.RenderedAt (nil:
// clock.System). A key repeated in apps is listed once, as its first App.
func New(apps []release.App, c clock.Clock) *Snapshot {
	s := &Snapshot{
		clock:   clock.Or(c),
		entries: make(map[string]release.Entry, len(apps)),
		meta:    normalize(release.Meta{}),
		page:    page.NewRenderer(),
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
	s.SetAll(map[string]release.Entry{app: e})
}

// SetAll merges every entry as Set does, with at most one render for all of
// them, and reports whether any entry moved forward in any part (a failure or
// a claim too, which render nothing). This is the one place an API pod
// applies the merge law.
func (s *Snapshot) SetAll(entries map[string]release.Entry) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	moved, fetched := false, false
	for app, e := range entries {
		old, ok := s.entries[app]
		if !ok {
			continue
		}
		merged := old.Merge(e)
		if merged == old {
			continue
		}
		s.entries[app], moved = merged, true
		// Merge replaces the fetch part only with a strictly newer FetchedAt,
		// so the time alone tells whether ETag or Release may have changed.
		fetched = fetched || !merged.FetchedAt.Equal(old.FetchedAt)
	}
	if fetched {
		s.render()
	}
	return moved
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

// render builds a new Rendering from the entries and publishes it. An app
// whose fetch did not move keeps its part of the last rendering. s.mu must be
// held, except by New before s is shared.
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
	prev := s.cur.Load() // nil when called by New
	fetched := make(map[string]time.Time, len(s.apps))
	apps := make(map[string]*App, len(s.apps))
	pageApps := make([]page.App, 0, len(s.apps))
	var oldest time.Time
	complete := len(s.apps) > 0
	for _, a := range s.apps {
		e := s.entries[a.Key]
		fetched[a.Key] = e.FetchedAt
		ai := release.AppInfo{
			Name:           a.Name,
			Repo:           a.Repo,
			LatestRelease:  wireRelease(e.Release),
			AppLastFetched: release.NewTime(e.FetchedAt),
		}
		info.ReleaseInfo.Apps[a.Key] = ai
		app := s.renderApp(prev, a, e, ai)
		apps[a.Key] = app
		pageApps = append(pageApps, page.App{Key: a.Key, Name: a.Name, FetchedAt: e.FetchedAt,
			Release: e.Release, Downloads: app.Downloads})
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

	r := &Rendering{
		Doc:         s.doc(mustMarshal(info), complete),
		Complete:    complete,
		LastFetched: oldest,
		FetchedAt:   fetched,
		RenderedAt:  s.clock.Now(),
		Apps:        apps,
		Page:        s.doc(s.page.Render(pageApps), complete),
	}
	s.cur.Store(r)
	s.renders.Add(1)
}

// renderApp returns app's part of the rendering: prev's when it shows the
// same fetch, else a new one for entry e and its wire object ai.
func (s *Snapshot) renderApp(prev *Rendering, a release.App, e release.Entry, ai release.AppInfo) *App {
	if prev != nil {
		if p := prev.Apps[a.Key]; p != nil && p.fetchedAt.Equal(e.FetchedAt) {
			return p
		}
	}
	body := append([]byte(`{"success":true,"app":`), mustMarshal(ai)...)
	app := &App{
		Doc:       s.doc(append(body, '}'), e.Fetched()),
		Fetched:   e.Fetched(),
		Release:   e.Release,
		fetchedAt: e.FetchedAt,
	}
	if e.Release != nil {
		for _, as := range e.Release.Assets {
			if as.Platform != nil {
				app.Downloads = append(app.Downloads, as)
				app.Locations = append(app.Locations, []string{as.DownloadURL})
			}
		}
	}
	return app
}

// doc returns body as a Doc: its gzip copy, ETags and header values, and
// the Cache-Control of an answer whose data was fetched (warm) or not yet.
func (s *Snapshot) doc(body []byte, warm bool) Doc {
	cc := CacheCold
	if warm {
		cc = CacheWarm
	}
	return newDoc(s.gz, body, cc)
}

// NewDoc returns body as a Doc served with Cache-Control cacheControl, with
// its gzip copy, ETags and header values, as a rendering's answers are made:
// for a document that never changes, such as the OpenAPI document. It is
// safe for concurrent use; body is kept, not copied.
func NewDoc(body []byte, cacheControl string) Doc {
	// NewWriterLevel fails only on an invalid level.
	gz, _ := gzip.NewWriterLevel(nil, gzip.DefaultCompression)
	return newDoc(gz, body, cacheControl)
}

// newDoc returns body as a Doc, compressed with gz.
func newDoc(gz *gzip.Writer, body []byte, cacheControl string) Doc {
	zipped := compress(gz, body)
	d := Doc{
		Body:         body,
		Gzip:         zipped,
		ETag:         etag(body),
		GzipETag:     etag(zipped),
		CacheControl: cacheControl,
	}
	d.Values = HeaderValues{
		CacheControl:      []string{d.CacheControl},
		ETag:              []string{d.ETag},
		ContentLength:     []string{strconv.Itoa(len(body))},
		GzipETag:          []string{d.GzipETag},
		GzipContentLength: []string{strconv.Itoa(len(zipped))},
	}
	return d
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
