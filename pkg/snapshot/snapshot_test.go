package snapshot_test

import (
	"bytes"
	"encoding/json"
	"maps"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/storytold/craft-releases/pkg/release"
	"github.com/storytold/craft-releases/pkg/snapshot"
	"github.com/storytold/craft-releases/test/fakeclock"
	"github.com/storytold/craft-releases/test/testkit"
)

var (
	photocraft = release.App{Key: "photocraft", Name: "PhotoCraft", Repo: "storytold/photocraft"}
	launcher   = release.App{Key: "artcraft-launcher", Name: "ArtCraft Launcher", Repo: "storytold/craft-launcher"}
	filmcraft  = release.App{Key: "filmcraft", Name: "FilmCraft", Repo: "storytold/filmcraft"}
)

var t0 = time.Date(2026, 10, 10, 12, 0, 0, 0, time.UTC)

// rel returns a small release tagged tag.
func rel(tag string) *release.Release {
	return &release.Release{Tag: tag, Version: strings.TrimPrefix(tag, "v"), Name: tag, Assets: []release.Asset{}}
}

// decode parses a rendering's body.
func decode(t testing.TB, r *snapshot.Rendering) release.Info {
	t.Helper()
	var info release.Info
	if err := json.Unmarshal(r.Body(), &info); err != nil {
		t.Fatalf("body %s: %v", r.Body(), err)
	}
	return info
}

func TestWireExample(t *testing.T) {
	t.Parallel()
	sum := "8a5edab282632443219e051e4ade2d1d5bbc671c781051bf1437897cbdfea0f1"
	x64 := "x64"
	const dl = "https://github.com/storytold/photocraft/releases/download/v0.5.0/"
	s := snapshot.New([]release.App{photocraft, launcher}, fakeclock.New(t0.Add(24*time.Hour)))
	s.Set("photocraft", release.Entry{FetchedAt: t0.Add(123 * time.Millisecond), ETag: `"abc"`, Release: &release.Release{
		Tag: "v0.5.0", Version: "0.5.0", Name: "PhotoCraft v0.5.0", PublishedAt: release.NewTime(time.Date(2026, 10, 8, 14, 52, 50, 0, time.UTC)),
		HTMLURL: "https://github.com/storytold/photocraft/releases/tag/v0.5.0", NotesMarkdown: "Notes",
		Assets: []release.Asset{
			{Name: "photocraft-0.5.0-windows-x64.msi", SizeBytes: 7, DownloadURL: dl + "photocraft-0.5.0-windows-x64.msi", SHA256: &sum,
				Platform: &release.Platform{OS: "windows", Arch: &x64, PackageType: "msi"}},
			{Name: "SHA256SUMS.txt", SizeBytes: 2048, DownloadURL: dl + "SHA256SUMS.txt"},
		},
	}})
	want := testkit.WireExample(t)
	if got := s.Current().Body(); !bytes.Equal(got, want) {
		t.Errorf("body:\n got %s\nwant %s", got, want)
	}
}

func TestSet(t *testing.T) {
	t.Parallel()
	v1 := release.Entry{FetchedAt: t0, ETag: `"e1"`, Release: rel("v1")}
	later := t0.Add(time.Minute)
	for _, tt := range []struct {
		name       string
		before     release.Entry // set first, when fetched or failed
		app        string
		update     release.Entry
		wantRender bool
		wantAt     time.Time // photocraft's app_last_fetched after the update
		wantTag    string    // photocraft's latest_release tag after, "" for null
	}{
		{"first fetch renders", release.Entry{}, "photocraft", v1, true, t0, "v1"},
		{"newer fetch replaces", v1, "photocraft", release.Entry{FetchedAt: later, ETag: `"e2"`, Release: rel("v2")}, true, later, "v2"},
		{"newer fetch of no release replaces", v1, "photocraft", release.Entry{FetchedAt: later}, true, later, ""},
		{"newer confirmation of the same release moves the time", v1, "photocraft", release.Entry{FetchedAt: later, ETag: `"e1"`, Release: rel("v1")}, true, later, "v1"},
		{"older fetch ignored", v1, "photocraft", release.Entry{FetchedAt: t0.Add(-time.Minute), ETag: `"e0"`, Release: rel("v0")}, false, t0, "v1"},
		{"equal fetch ignored", v1, "photocraft", release.Entry{FetchedAt: t0, ETag: `"e2"`, Release: rel("v2")}, false, t0, "v1"},
		{"zero entry ignored", v1, "photocraft", release.Entry{}, false, t0, "v1"},
		{"failure renders nothing", v1, "photocraft", release.Entry{FailedAt: later, Failures: 3}, false, t0, "v1"},
		{"failure of a never fetched app renders nothing", release.Entry{}, "photocraft", release.Entry{FailedAt: t0, Failures: 1}, false, time.Time{}, ""},
		{"claim renders nothing", v1, "photocraft", release.Entry{ClaimedAt: later}, false, t0, "v1"},
		{"unknown app ignored", v1, "vectorcraft", release.Entry{FetchedAt: later, Release: rel("v9")}, false, t0, "v1"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s := snapshot.New([]release.App{photocraft, launcher}, fakeclock.New(t0.Add(time.Hour)))
			if tt.before != (release.Entry{}) {
				s.Set("photocraft", tt.before)
			}
			renders, before := s.Renders(), s.Current()

			s.Set(tt.app, tt.update)

			after := s.Current()
			if got := s.Renders() - renders; got != map[bool]uint64{false: 0, true: 1}[tt.wantRender] {
				t.Errorf("renders: got %d more, want render %v", got, tt.wantRender)
			}
			if got := after != before; got != tt.wantRender {
				t.Errorf("new rendering published: got %v, want %v", got, tt.wantRender)
			}
			info := decode(t, after)
			if _, ok := info.ReleaseInfo.Apps["vectorcraft"]; ok {
				t.Errorf("apps: got an unconfigured app vectorcraft")
			}
			p := info.ReleaseInfo.Apps["photocraft"]
			var gotAt time.Time
			if p.AppLastFetched != nil {
				gotAt = p.AppLastFetched.Time
			}
			if !gotAt.Equal(tt.wantAt) || !after.Apps["photocraft"].FetchedAt.Equal(tt.wantAt) {
				t.Errorf("app_last_fetched %v, FetchedAt %v; want %v", gotAt, after.Apps["photocraft"].FetchedAt, tt.wantAt)
			}
			var gotTag string
			if p.LatestRelease != nil {
				gotTag = p.LatestRelease.Tag
			}
			if gotTag != tt.wantTag {
				t.Errorf("latest_release tag: got %q, want %q", gotTag, tt.wantTag)
			}
		})
	}
}

func TestSetAll(t *testing.T) {
	t.Parallel()
	at := func(m int) time.Time { return t0.Add(time.Duration(m) * time.Minute) }
	for _, tt := range []struct {
		name        string
		entries     map[string]release.Entry
		wantRenders uint64
		wantMoved   bool
		wantAt      map[string]time.Time
	}{
		{"many fetches render once", map[string]release.Entry{
			"photocraft": {FetchedAt: at(1), Release: rel("v2")}, "artcraft-launcher": {FetchedAt: at(2), Release: rel("v1")}, "filmcraft": {FetchedAt: at(3)},
		}, 1, true, map[string]time.Time{"photocraft": at(1), "artcraft-launcher": at(2), "filmcraft": at(3)}},
		{"one change among no-ops renders once", map[string]release.Entry{
			"photocraft": {FetchedAt: at(-1), Release: rel("v0")}, "artcraft-launcher": {FetchedAt: t0}, "vectorcraft": {FetchedAt: at(60)},
		}, 1, true, map[string]time.Time{"photocraft": t0, "artcraft-launcher": t0}},
		{"a failure moves without a render", map[string]release.Entry{
			"photocraft": {FetchedAt: t0, Release: rel("v9")}, "filmcraft": {FailedAt: t0, Failures: 1}, "vectorcraft": {FetchedAt: at(60)},
		}, 0, true, map[string]time.Time{"photocraft": t0}},
		{"no-ops move nothing", map[string]release.Entry{
			"photocraft": {FetchedAt: t0, Release: rel("v9")}, "filmcraft": {}, "vectorcraft": {FetchedAt: at(60)},
		}, 0, false, map[string]time.Time{"photocraft": t0}},
		{"empty renders nothing", nil, 0, false, map[string]time.Time{"photocraft": t0}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s := snapshot.New([]release.App{photocraft, launcher, filmcraft}, fakeclock.New(t0.Add(24*time.Hour)))
			s.Set("photocraft", release.Entry{FetchedAt: t0, Release: rel("v1")})
			renders := s.Renders()

			if moved := s.SetAll(tt.entries, time.Now()); moved != tt.wantMoved {
				t.Errorf("SetAll = %v, want %v", moved, tt.wantMoved)
			}
			if got := s.Renders() - renders; got != tt.wantRenders {
				t.Errorf("renders: got %d, want %d", got, tt.wantRenders)
			}
			got := s.Current().Apps
			if len(got) != 3 {
				t.Errorf("Apps: got %d apps, want 3", len(got))
			}
			for _, a := range []string{"photocraft", "artcraft-launcher", "filmcraft"} {
				if !got[a].FetchedAt.Equal(tt.wantAt[a]) {
					t.Errorf("FetchedAt[%s]: got %v, want %v", a, got[a].FetchedAt, tt.wantAt[a])
				}
			}
		})
	}
}

// TestLastFetched: last_fetched is the oldest fetch once every app was
// fetched, else null; the full answer and the page are cached only then.
func TestLastFetched(t *testing.T) {
	t.Parallel()
	const public = "public, max-age=60, stale-while-revalidate=30, stale-if-error=86400"
	for _, tt := range []struct {
		name         string
		apps         []release.App
		fetched      map[string]time.Time
		wantLast     string // last_fetched as JSON
		wantComplete bool
		wantCache    string
	}{
		{"no apps", nil, nil, "null", false, "no-store"},
		{"none fetched", []release.App{photocraft, launcher}, nil, "null", false, "no-store"},
		{"one of two fetched", []release.App{photocraft, launcher}, map[string]time.Time{"photocraft": t0}, "null", false, "no-store"},
		{"one app fetched", []release.App{photocraft}, map[string]time.Time{"photocraft": t0}, `"2026-10-10T12:00:00Z"`, true, public},
		{"all fetched: the oldest", []release.App{photocraft, launcher, filmcraft}, map[string]time.Time{
			"photocraft": t0.Add(time.Minute), "artcraft-launcher": t0.Add(120 * time.Millisecond), "filmcraft": t0.Add(time.Hour),
		}, `"2026-10-10T12:00:00.120Z"`, true, public},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s := snapshot.New(tt.apps, fakeclock.New(t0.Add(24*time.Hour)))
			for app, at := range tt.fetched {
				s.Set(app, release.Entry{FetchedAt: at})
			}
			r := s.Current()
			if !bytes.Contains(r.Body(), []byte(`"last_fetched":`+tt.wantLast+`}`)) {
				t.Errorf("body %s, want last_fetched %s", r.Body(), tt.wantLast)
			}
			if r.Complete != tt.wantComplete || r.LastFetched.IsZero() == tt.wantComplete {
				t.Errorf("Complete %v, LastFetched %v; want complete %v", r.Complete, r.LastFetched, tt.wantComplete)
			}
			if got := r.Values.CacheControl; r.CacheControl != tt.wantCache || len(got) != 1 || got[0] != tt.wantCache || r.Page.CacheControl != tt.wantCache {
				t.Errorf("CacheControl %q, Values %q, page %q; want %q", r.CacheControl, got, r.Page.CacheControl, tt.wantCache)
			}
		})
	}
}

// TestSetMeta: renames and notices render, and render again only when
// they change; an empty list, as a release's absent assets, is []; a caller
// reusing its slices after SetMeta cannot change what a later render serves.
func TestSetMeta(t *testing.T) {
	t.Parallel()
	link := "https://example.invalid/notice"
	full := release.Bulletin{
		AppRenames: []release.AppRename{{OldName: "PicCraft", OldNameLower: "piccraft", NewName: "PhotoCraft",
			NewNameLower: "photocraft", Description: "renamed", RenamedAt: release.NewTime(t0)}},
		RepoRenames: []release.RepoRename{{OldName: "storytold/pic", NewName: "storytold/photocraft"}},
		Notices: release.Notices{
			Announcements: []release.Announcement{{Title: "Hello", Body: "Welcome"}},
			Alerts:        []release.Alert{{Title: "Update", Body: "Please update", MaybeWebLink: &link}},
		},
	}
	const fullJSON = `"app_renames":[{"old_name":"PicCraft","old_name_lower":"piccraft","new_name":"PhotoCraft",` +
		`"new_name_lower":"photocraft","description":"renamed","renamed_at":"2026-10-10T12:00:00Z"}],` +
		`"repo_renames":[{"old_name":"storytold/pic","new_name":"storytold/photocraft","renamed_at":null}],` +
		`"important_notices":{"announcements":[{"title":"Hello","body":"Welcome","created_at":null}],` +
		`"alerts":[{"title":"Update","body":"Please update","maybe_web_link":"https://example.invalid/notice","created_at":null}]}}`
	const emptyJSON = `"app_renames":[],"repo_renames":[],"important_notices":{"announcements":[],"alerts":[]}}`

	for _, tt := range []struct {
		name        string
		before      *release.Bulletin
		meta        release.Bulletin
		wantRenders uint64
		wantSuffix  string
	}{
		{name: "zero meta renders nothing", meta: release.Bulletin{}, wantRenders: 0, wantSuffix: emptyJSON},
		{name: "empty lists render nothing", meta: release.Bulletin{AppRenames: []release.AppRename{}, Notices: release.Notices{Alerts: []release.Alert{}}}, wantSuffix: emptyJSON},
		{name: "lists render", meta: full, wantRenders: 1, wantSuffix: fullJSON},
		{name: "same lists render nothing", before: &full, meta: full, wantRenders: 0, wantSuffix: fullJSON},
		{name: "cleared lists render", before: &full, meta: release.Bulletin{}, wantRenders: 1, wantSuffix: emptyJSON},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s := snapshot.New([]release.App{photocraft}, fakeclock.New(t0.Add(24*time.Hour)))
			s.Set("photocraft", release.Entry{FetchedAt: t0, Release: &release.Release{Tag: "v1"}})
			if tt.before != nil {
				s.SetMeta(*tt.before)
			}
			renders := s.Renders()

			meta := tt.meta
			meta.RepoRenames = slices.Clone(meta.RepoRenames)
			s.SetMeta(meta)

			if got := s.Renders() - renders; got != tt.wantRenders {
				t.Errorf("renders: got %d, want %d", got, tt.wantRenders)
			}
			for i := range meta.RepoRenames {
				meta.RepoRenames[i].NewName = "storytold/changed"
			}
			s.Set("photocraft", release.Entry{FetchedAt: t0.Add(time.Minute), Release: &release.Release{Tag: "v1"}})
			if body := s.Current().Body(); !bytes.HasSuffix(body, []byte(tt.wantSuffix)) || !bytes.Contains(body, []byte(`"assets":[]`)) {
				t.Errorf("body: got %s, want it to end with %s and assets []", body, tt.wantSuffix)
			}
			// The caller's lists, changed since, are a change to render: the
			// snapshot held a copy, not them.
			s.SetMeta(meta)
			if changed := bytes.Contains(s.Current().Body(), []byte("storytold/changed")); changed != (len(meta.RepoRenames) > 0) {
				t.Errorf("the changed renames given again: shown %v, want %v", changed, len(meta.RepoRenames) > 0)
			}
		})
	}
}

func TestNewListsConfiguredApps(t *testing.T) {
	t.Parallel()
	dup := release.App{Key: "photocraft", Name: "Other", Repo: "storytold/other"}
	s := snapshot.New([]release.App{photocraft, launcher, dup}, fakeclock.New(t0))
	r := s.Current()
	if r == nil || s.Renders() != 1 || !r.RenderedAt.Equal(t0) {
		t.Fatalf("after New: %v, %d renders; want a rendering at %v, one render", r, s.Renders(), t0)
	}
	want := map[string]release.AppInfo{
		"photocraft":        {Name: "PhotoCraft", Repo: "storytold/photocraft"},
		"artcraft-launcher": {Name: "ArtCraft Launcher", Repo: "storytold/craft-launcher"},
	}
	if apps := decode(t, r).ReleaseInfo.Apps; !maps.Equal(apps, want) {
		t.Errorf("apps: got %+v, want %+v", apps, want)
	}
}

// TestRepresentations: the full answer and each app's answer, before and
// after a change: a gzip copy of the body, strong and distinct ETags, the
// header values ready to serve, and each app's body and cacheability.
// Another pod with the same data serves the same validators.
func TestRepresentations(t *testing.T) {
	t.Parallel()
	s := snapshot.New([]release.App{photocraft, launcher}, fakeclock.New(t0.Add(24*time.Hour)))
	first := s.Current()
	s.Set("photocraft", release.Entry{FetchedAt: t0, Release: rel("v1")})
	second := s.Current()
	twin := snapshot.New([]release.App{launcher, photocraft}, fakeclock.New(t0.Add(time.Hour)))
	twin.Set("photocraft", release.Entry{FetchedAt: t0, Release: rel("v1")})

	photo, other := second.Apps["photocraft"], second.Apps["artcraft-launcher"]
	for name, d := range map[string]*snapshot.Doc{"first": &first.Doc, "second": &second.Doc, "photocraft": &photo.Doc, "launcher": &other.Doc} {
		t.Run(name, func(t *testing.T) {
			if plain := gunzip(t, d.Gzip()); !bytes.Equal(plain, d.Body()) {
				t.Errorf("gunzipped: got %s, want Body %s", plain, d.Body())
			}
			for _, tag := range []string{d.ETag, d.GzipETag} {
				if len(tag) < 18 || tag[0] != '"' || tag[len(tag)-1] != '"' || strings.Contains(tag[1:len(tag)-1], `"`) {
					t.Errorf("ETag %s: want a strong, quoted entity tag", tag)
				}
			}
			if d.ETag == d.GzipETag {
				t.Errorf("ETag and GzipETag: both %s, want them distinct", d.ETag)
			}
			for _, c := range []struct {
				name string
				got  []string
				want string
			}{
				{"ETag", d.Values.ETag, d.ETag},
				{"GzipETag", d.Values.GzipETag, d.GzipETag},
				{"ContentLength", d.Values.ContentLength, strconv.Itoa(len(d.Body()))},
				{"GzipContentLength", d.Values.GzipContentLength, strconv.Itoa(len(d.Gzip()))},
				{"CacheControl", d.Values.CacheControl, d.CacheControl},
			} {
				if len(c.got) != 1 || cap(c.got) != 1 || c.got[0] != c.want {
					t.Errorf("Values.%s: got %q (cap %d), want [%q] (cap 1)", c.name, c.got, cap(c.got), c.want)
				}
			}
		})
	}
	if first.ETag == second.ETag || first.GzipETag == second.GzipETag {
		t.Errorf("ETags: got %s/%s before and %s/%s after a change, want them to change",
			first.ETag, first.GzipETag, second.ETag, second.GzipETag)
	}
	if got, want := twin.Current(), second; got.ETag != want.ETag || got.GzipETag != want.GzipETag {
		t.Errorf("ETags of an identical snapshot: got %s/%s, want %s/%s", got.ETag, got.GzipETag, want.ETag, want.GzipETag)
	}
	if len(second.Apps) != 2 || photo.ETag == other.ETag || photo.ETag == second.ETag {
		t.Errorf("%d apps, ETags %s, %s, full answer %s: want two apps, each ETag distinct", len(second.Apps), photo.ETag, other.ETag, second.ETag)
	}
	for _, tt := range []struct {
		a             *snapshot.App
		fetched       bool
		cache, bodyIs string
	}{
		{photo, true, "public, max-age=60, stale-while-revalidate=30, stale-if-error=86400", `{"success":true,"app":{"name":"PhotoCraft","repo":"storytold/photocraft","latest_release":{"tag":"v1","version":"1","name":"v1","published_at":null,"html_url":"","prerelease":false,"notes_markdown":"","assets":[]},"rollout":null,"minimum_version":null,"app_last_fetched":"2026-10-10T12:00:00Z"}}`},
		{other, false, "no-store", `{"success":true,"app":{"name":"ArtCraft Launcher","repo":"storytold/craft-launcher","latest_release":null,"rollout":null,"minimum_version":null,"app_last_fetched":null}}`},
	} {
		if string(tt.a.Body()) != tt.bodyIs || tt.a.Fetched != tt.fetched || tt.a.CacheControl != tt.cache {
			t.Errorf("app: %s, fetched %v, %q; want %s, %v, %q", tt.a.Body(), tt.a.Fetched, tt.a.CacheControl, tt.bodyIs, tt.fetched, tt.cache)
		}
	}
}

// TestClockSetBack follows a pod through a fleet clock that ran an hour
// ahead and was set back: what it served meanwhile is never dated after the
// rendering, and once set back, an honest fetch replaces the one from the
// future at once instead of an hour later.
func TestClockSetBack(t *testing.T) {
	t.Parallel()
	clk := fakeclock.New(t0)
	s := snapshot.New([]release.App{photocraft}, clk)
	ahead := t0.Add(time.Hour)

	s.SetAll(map[string]release.Entry{"photocraft": {FetchedAt: ahead, ETag: `"e1"`, Release: rel("v1")}}, ahead)
	info := decode(t, s.Current())
	p := info.ReleaseInfo.Apps["photocraft"]
	if p.AppLastFetched == nil || !p.AppLastFetched.Equal(t0) {
		t.Errorf("app_last_fetched of a fetch an hour ahead: got %v, want the rendering's time %v", p.AppLastFetched, t0)
	}
	if info.ReleaseInfo.LastFetched == nil || !info.ReleaseInfo.LastFetched.Equal(t0) {
		t.Errorf("last_fetched: got %v, want %v", info.ReleaseInfo.LastFetched, t0)
	}

	clk.Advance(time.Minute)
	now := clk.Now()
	if !s.SetAll(map[string]release.Entry{"photocraft": {FetchedAt: now, ETag: `"e2"`, Release: rel("v2")}}, now) {
		t.Fatalf("SetAll of an honest fetch after the clock was set back: moved nothing")
	}
	p = decode(t, s.Current()).ReleaseInfo.Apps["photocraft"]
	if p.LatestRelease == nil || p.LatestRelease.Tag != "v2" || !p.AppLastFetched.Equal(now) {
		t.Errorf("after the set back: got %+v at %v, want v2 at %v", p.LatestRelease, p.AppLastFetched, now)
	}
}
