package snapshot

import (
	"bytes"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/storytold/craft-releases/pkg/page"
	"github.com/storytold/craft-releases/pkg/release"
)

// The fixed JSON around the apps of the full answer and of an app's own.
const (
	answerHead = `{"success":true,"release_info":{"apps":{`
	appHead    = `{"success":true,"app":`
	// lastField is AppInfo's last field, as encoding/json writes it when null.
	lastField = `"app_last_fetched":null}`
	// metaHead is what encoding/json writes of an Info before its renames
	// when it has no app.
	metaHead = `{"success":true,"release_info":{"apps":{},"last_fetched":null},`
)

// renderer keeps each app's rendered pieces, and the chunks joined from them,
// from one rendering to the next, so that a rendering redoes only what
// changed: a fetch that moves only app_last_fetched re-renders two small
// pieces and rebuilds the chunks that hold them, whatever the number of
// apps. It is not safe for concurrent use.
type renderer struct {
	apps    []release.App // configured order
	byKey   []int         // indices into apps in the bytewise order of their keys: the JSON's order
	deflate *deflater
	page    *page.Renderer
	parts   []*part // by index into apps

	head, foot, meta   piece // the full answer's, bytes only: foot is last_fetched, meta the renames and notices
	pageHead, pageFoot piece
	json, html         []*chunk // the full answer's chunks (byKey order) and the page's (configured order)
}

// part is one app's pieces and its own answer.
type part struct {
	key                 piece  // `"photocraft":`, after a comma but for the first key; bytes only
	obj, tail           piece  // the app's object up to app_last_fetched (compressed, for its own answer), and from it (bytes only)
	rest                []byte // what follows obj in its own answer: tail and the closing brace
	section, checked    piece  // its part of the page: all but the checked line, and that line
	fetched             bool
	rel, pre            *release.Release // the release and the pre-release obj and section show
	plan                release.Plan     // what the app's decisions make of its releases
	tauri, tauriPre     *Feed            // the Tauri feeds of rel and of pre (nil without pre)
	updates, updatesPre *Updates         // the other updaters' answers for rel and for pre (nil without pre)
	rollout             *Rollout         // the staged release's answers; nil without one
	critical            *Feed            // the Tauri feed offered below the minimum version; nil without one
	app                 *App
}

// appEntries are an app's entries: its own, with a pre-release channel its
// pre-release entry's (else zero), and its history entry's; and its
// decisions.
type appEntries struct {
	stable, pre, history release.Entry
	decisions            release.Decisions
}

// companions returns the companions the entries hold for rel: its entry's,
// or for a release of the history, the history's.
func (e appEntries) companions(rel *release.Release) *release.Companions {
	switch {
	case rel == nil:
		return nil
	case rel == e.stable.Release:
		return e.stable.Companions
	case rel == e.pre.Release:
		return e.pre.Companions
	}
	return e.history.History.CompanionsOf(rel.Tag)
}

// fetchedAt is the app's app_last_fetched, with a pre-release channel the
// older of its two entries' fetches: zero until both were fetched.
func (e appEntries) fetchedAt(a release.App) time.Time {
	if !a.Prereleases || e.stable.FetchedAt.Before(e.pre.FetchedAt) || !e.stable.Fetched() {
		return e.stable.FetchedAt
	}
	return e.pre.FetchedAt
}

// notAfter returns t, or now when t is later.
func notAfter(t, now time.Time) time.Time {
	if t.After(now) {
		return now
	}
	return t
}

// change is what a rendering is given: the apps whose fetch moved, by
// index into the apps, the renames and notices when they changed, and the
// oldest fetch of all entries with whether every entry was fetched.
type change struct {
	entries  map[int]appEntries
	meta     *release.Bulletin
	oldest   time.Time // zero unless complete
	complete bool
}

func newRenderer(apps []release.App) *renderer {
	r := &renderer{apps: apps, deflate: newDeflater(), page: page.NewRenderer(), parts: make([]*part, len(apps))}
	r.byKey = make([]int, len(apps))
	for i := range apps {
		r.byKey[i] = i
	}
	// encoding/json orders a map's keys bytewise.
	slices.SortFunc(r.byKey, func(i, j int) int { return strings.Compare(apps[i].Key, apps[j].Key) })
	for pos, i := range r.byKey {
		key := mustMarshal(apps[i].Key)
		if pos > 0 {
			key = append([]byte{','}, key...)
		}
		r.parts[i] = &part{key: piece{plain: append(key, ':')}}
	}
	pageApps := make([]page.App, len(apps))
	for i, a := range apps {
		pageApps[i] = page.App{Key: a.Key, Name: a.Name}
	}
	r.head = piece{plain: []byte(answerHead)}
	r.pageHead, r.pageFoot = r.deflate.piece(r.page.Head(pageApps)), r.deflate.piece(r.page.Foot())
	r.json, r.html = make([]*chunk, chunks(len(apps))), make([]*chunk, chunks(len(apps)))
	return r
}

// chunks is the number of chunks of an answer of n apps: one for up to
// appsPerChunk, with the bytes before and after them; else one per
// appsPerChunk apps and one more for what follows the last app, which
// changes with last_fetched and gets the gzip trailer at each rendering.
func chunks(n int) int {
	if n <= appsPerChunk {
		return 1
	}
	return (n+appsPerChunk-1)/appsPerChunk + 1
}

// inChunk returns the part of s, a list with one element per app, that
// chunk i holds.
func inChunk[T any](s []T, i int) []T {
	return s[min(i*appsPerChunk, len(s)):min((i+1)*appsPerChunk, len(s))]
}

// render applies c and returns the new rendering at now, built on prev (nil
// for the first, which must change every app). No fetch time it shows is
// later than now: a time from a clock that ran ahead shows as now, so that
// nothing served is dated after the answer's Date (docs/wire.md, "What the fields mean in practice").
func (r *renderer) render(c change, prev *Rendering, now time.Time) *Rendering {
	c.oldest = notAfter(c.oldest, now)
	dirtyJSON, dirtyHTML := map[int]bool{}, map[int]bool{}
	if prev == nil {
		// Every chunk, even one of no app.
		for i := range r.json {
			dirtyJSON[i], dirtyHTML[i] = true, true
		}
	}
	pos := make(map[int]int, len(c.entries))
	for p, i := range r.byKey {
		if _, ok := c.entries[i]; ok {
			pos[i] = p
		}
	}
	for i, e := range c.entries {
		r.update(i, e, now)
		dirtyJSON[pos[i]/appsPerChunk], dirtyHTML[i/appsPerChunk] = true, true
	}
	last := len(r.json) - 1
	if c.meta != nil {
		r.meta = piece{plain: metaJSON(*c.meta)}
		dirtyJSON[last] = true
	}
	if foot := footJSON(c.oldest); !bytes.Equal(foot, r.foot.plain) {
		r.foot, dirtyJSON[last] = piece{plain: foot}, true
	}
	for i := range dirtyJSON {
		// The full answer is what launchers download every minute: its
		// bytes are worth the CPU. The page's are not.
		r.json[i] = newCompressedChunk(r.jsonPieces(i), i == 0, r.deflate)
	}
	for i := range dirtyHTML {
		r.html[i] = newChunk(r.htmlPieces(i), i == 0)
	}
	// An app's own answer points into its chunk until first served: each
	// app of a chunk made anew points into the new one (with the same bytes
	// and validators, where it did not change), so that no older chunk
	// stays alive.
	var apps []int
	for i := range dirtyJSON {
		for _, a := range inChunk(r.byKey, i) {
			p := r.parts[a]
			if _, changed := c.entries[a]; changed {
				p.app.Doc = p.appDoc()
			} else {
				p.app = p.rechunked()
			}
			apps = append(apps, a)
		}
	}
	return r.rendering(c, apps, prev, now)
}

// rendering returns the Rendering of the current chunks and parts, whose
// apps are prev's but for apps.
func (r *renderer) rendering(c change, apps []int, prev *Rendering, now time.Time) *Rendering {
	cc := CacheControlUnfetched
	if c.complete {
		cc = CacheControlFetched
	}
	out := &Rendering{
		Doc:         assemble(r.json, cc),
		Complete:    c.complete,
		LastFetched: c.oldest,
		RenderedAt:  now,
		Page:        assemble(r.html, cc),
	}
	if prev == nil {
		out.Apps = make(map[string]*App, len(r.apps))
	} else {
		out.Apps = maps.Clone(prev.Apps)
	}
	for _, i := range apps {
		out.Apps[r.apps[i].Key] = r.parts[i].app
	}
	return out
}

// update re-renders app i's pieces for e at now: its object and section only
// when a release shown or whether it was fetched changed, its fetch time
// always.
func (r *renderer) update(i int, e appEntries, now time.Time) {
	p, a := r.parts[i], r.apps[i]
	fetchedAt := notAfter(e.fetchedAt(a), now)
	plan := release.Decide(e.stable.Release, e.pre.Release, e.history.History.List(), e.decisions)
	fetched, rel, pre := !fetchedAt.IsZero(), plan.Latest, (*release.Release)(nil)
	if a.Prereleases {
		pre = release.LatestPrerelease(rel, plan.Prerelease)
	}
	minimum := ""
	if e.decisions.Minimum != nil {
		minimum = e.decisions.Minimum.Version
	}
	if p.app == nil || rel != p.rel || pre != p.pre || fetched != p.fetched || plan.Staged != p.plan.Staged ||
		plan.Percent != p.plan.Percent || minimum != p.app.Minimum {
		// A release read again (from Redis, say) is a new pointer to the
		// same bytes: compare the bytes before compressing them again.
		obj := objJSON(a, rel, pre, plan, minimum)
		if p.app == nil || fetched != p.fetched || !bytes.Equal(obj, p.obj.plain) {
			downloads, _ := downloadsOf(rel)
			preDownloads, _ := downloadsOf(pre)
			p.obj = r.deflate.piece(obj)
			p.section = r.deflate.piece(r.page.Section(page.App{Key: a.Key, Name: a.Name, FetchedAt: fetchedAt,
				Release: rel, Downloads: downloads, Prerelease: pre, PrereleaseDownloads: preDownloads}))
		}
		p.fetched, p.rel, p.pre = fetched, rel, pre
	}
	p.plan = plan
	oldPre, oldUpdatesPre := p.tauriPre, p.updatesPre
	p.tauri, p.tauriPre = renderFeed(a.Key, p.tauri, rel, e.companions(rel), false), nil
	p.updates, p.updatesPre = renderUpdates(a.Key, p.updates, rel, e.companions(rel)), nil
	if pre != nil {
		p.tauriPre = renderFeed(a.Key, oldPre, pre, e.companions(pre), false)
		p.updatesPre = renderUpdates(a.Key, oldUpdatesPre, pre, e.companions(pre))
	}
	p.rollout = renderRollout(a.Key, p.rollout, plan, e.companions(plan.Staged))
	oldCritical := p.critical
	p.critical = nil
	if newest := plan.Staged; minimum != "" {
		if newest == nil || plan.Percent == 0 {
			// A halted rollout is offered to nobody, below the minimum too.
			newest = rel
		}
		p.critical = renderFeed(a.Key, oldCritical, newest, e.companions(newest), true)
	}
	p.tail = piece{plain: tailJSON(fetchedAt)}
	p.checked = storedPiece(r.page.Checked(fetchedAt))
	p.app = p.newApp(fetchedAt, minimum)
	p.app.Withdrawn = e.stable.Release != nil && e.decisions.Withdraws(e.stable.Release.Tag)
	p.app.Unfound = plan.Unfound
}

// jsonPieces returns the pieces of the full answer's chunk i.
func (r *renderer) jsonPieces(i int) []*piece {
	var ps []*piece
	if i == 0 {
		ps = append(ps, &r.head)
	}
	for _, a := range inChunk(r.byKey, i) {
		p := r.parts[a]
		ps = append(ps, &p.key, &p.obj, &p.tail)
	}
	if i == len(r.json)-1 {
		ps = append(ps, &r.foot, &r.meta)
	}
	return ps
}

// htmlPieces returns the pieces of the page's chunk i.
func (r *renderer) htmlPieces(i int) []*piece {
	var ps []*piece
	if i == 0 {
		ps = append(ps, &r.pageHead)
	}
	for _, p := range inChunk(r.parts, i) {
		ps = append(ps, &p.section, &p.checked)
	}
	if i == len(r.html)-1 {
		ps = append(ps, &r.pageFoot)
	}
	return ps
}

// objJSON returns a's wire object without its last field, app_last_fetched:
// with latest_prerelease pre when a has the channel, the rollout plan has
// under way, and the minimum version ("" for none).
func objJSON(a release.App, rel, pre *release.Release, plan release.Plan, minimum string) []byte {
	info := release.AppInfo{Name: a.Name, Repo: a.Repo, LatestRelease: wireRelease(rel)}
	if a.Prereleases {
		info.LatestPrerelease = &release.OptionalRelease{Release: wireRelease(pre)}
	}
	if plan.Staged != nil {
		info.Rollout = &release.RolloutInfo{Tag: plan.Staged.Tag, Percent: plan.Percent, Release: wireRelease(plan.Staged)}
	}
	if minimum != "" {
		info.MinimumVersion = &minimum
	}
	b := mustMarshal(info)
	obj, ok := bytes.CutSuffix(b, []byte(lastField))
	if !ok {
		panic(fmt.Sprintf("snapshot: render: AppInfo no longer ends with %s: %s", lastField, b))
	}
	return obj
}

// tailJSON returns the end of an app's wire object: app_last_fetched.
func tailJSON(fetchedAt time.Time) []byte {
	b := append([]byte(`"app_last_fetched":`), mustMarshal(release.NewTime(fetchedAt))...)
	return append(b, '}')
}

// footJSON returns what follows the last app up to the renames.
func footJSON(oldest time.Time) []byte {
	b := append([]byte(`},"last_fetched":`), mustMarshal(release.NewTime(oldest))...)
	return append(b, '}', ',')
}

// metaJSON returns the end of the full answer: the renames and notices of m,
// whose lists are not nil.
func metaJSON(m release.Bulletin) []byte {
	b := mustMarshal(release.Info{Success: true, ReleaseInfo: release.Catalog{Apps: map[string]release.AppInfo{}},
		AppRenames: m.AppRenames, RepoRenames: m.RepoRenames, ImportantNotices: m.Notices})
	rest, ok := bytes.CutPrefix(b, []byte(metaHead))
	if !ok {
		panic(fmt.Sprintf("snapshot: render: Info no longer starts with %s: %s", metaHead, b))
	}
	return rest
}
