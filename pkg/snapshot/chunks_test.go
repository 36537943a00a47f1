package snapshot_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/storytold/craft-releases/pkg/page"
	"github.com/storytold/craft-releases/pkg/release"
	"github.com/storytold/craft-releases/pkg/snapshot"
	"github.com/storytold/craft-releases/test/fakeclock"
)

// fleet returns n apps, in an order that is not their keys', each with a
// realistic release and fetched but for every seventh.
func fleet(n int) ([]release.App, map[string]release.Entry) {
	base, baseEntries := realisticApps()
	apps := make([]release.App, n)
	entries := make(map[string]release.Entry, n)
	for i := range n {
		b := base[i%len(base)]
		key := fmt.Sprintf("%s-%03d", b.Key, (i*37)%n)
		apps[i] = release.App{Key: key, Name: b.Name + fmt.Sprint(i), Repo: b.Repo}
		if i%7 != 3 {
			e := baseEntries[b.Key]
			e.FetchedAt = t0.Add(time.Duration(i) * time.Second)
			entries[key] = e
		}
	}
	return apps, entries
}

// wantBody is the full answer as encoding/json writes it, made apart from
// the snapshot's pieces.
func wantBody(t testing.TB, apps []release.App, entries map[string]release.Entry, m release.Bulletin) []byte {
	t.Helper()
	info := release.Info{Success: true, ReleaseInfo: release.Catalog{Apps: map[string]release.AppInfo{}},
		AppRenames: m.AppRenames, RepoRenames: m.RepoRenames, ImportantNotices: m.Notices}
	var oldest time.Time
	complete := true
	for _, a := range apps {
		e := entries[a.Key]
		info.ReleaseInfo.Apps[a.Key] = appInfo(a, e)
		complete = complete && e.Fetched()
		if oldest.IsZero() || e.FetchedAt.Before(oldest) {
			oldest = e.FetchedAt
		}
	}
	if complete {
		info.ReleaseInfo.LastFetched = release.NewTime(oldest)
	}
	b, err := release.Marshal(info)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func appInfo(a release.App, e release.Entry) release.AppInfo {
	return release.AppInfo{Name: a.Name, Repo: a.Repo, LatestRelease: e.Release, AppLastFetched: release.NewTime(e.FetchedAt)}
}

// wantPage is the release page made from page.Renderer's parts.
func wantPage(apps []release.App, entries map[string]release.Entry) []byte {
	r := page.NewRenderer()
	pa := make([]page.App, len(apps))
	for i, a := range apps {
		e := entries[a.Key]
		pa[i] = page.App{Key: a.Key, Name: a.Name, FetchedAt: e.FetchedAt, Release: e.Release}
		if e.Release != nil {
			for _, as := range e.Release.Assets {
				if as.Platform != nil {
					pa[i].Downloads = append(pa[i].Downloads, as)
				}
			}
		}
	}
	b := r.Head(pa)
	for _, a := range pa {
		b = append(append(b, r.Section(a)...), r.Checked(a.FetchedAt)...)
	}
	return append(b, r.Foot()...)
}

// checkRendering checks every answer of r against what encoding/json and
// the page renderer make of the same data, and each gzip copy against it.
func checkRendering(t *testing.T, r *snapshot.Rendering, apps []release.App, entries map[string]release.Entry, m release.Bulletin) {
	t.Helper()
	if got, want := r.Body(), wantBody(t, apps, entries, m); !bytes.Equal(got, want) {
		t.Fatalf("body: got %d bytes, want %d: the encoding/json answer\n got %.300s\nwant %.300s", len(got), len(want), got, want)
	}
	if got, want := r.Page.Body(), wantPage(apps, entries); !bytes.Equal(got, want) {
		t.Fatalf("page: got %d bytes, want the %d of the whole page", len(got), len(want))
	}
	for name, d := range map[string]*snapshot.Doc{"full answer": &r.Doc, "page": &r.Page} {
		if got := gunzip(t, d.Gzip()); !bytes.Equal(got, d.Body()) {
			t.Errorf("%s: gunzipped %d bytes, want Body's %d", name, len(got), len(d.Body()))
		}
	}
	for _, a := range apps {
		got := r.Apps[a.Key]
		want, _ := release.Marshal(appInfo(a, entries[a.Key]))
		want = append(append([]byte(`{"success":true,"app":`), want...), '}')
		if !bytes.Equal(got.Body(), want) || !bytes.Equal(gunzip(t, got.Gzip()), want) {
			t.Fatalf("app %s: body or gunzipped copy is not %s", a.Key, want)
		}
	}
}

// TestManyApps renders more apps than one chunk holds: every answer is what
// a whole rendering would be, byte for byte, after the first load, after a
// 304 poll of one app, a new release of another, and new notices. A poll
// replaces, of each answer's chunks, only its own and the full answer's
// last (which holds last_fetched), and the own answers of the apps in its
// chunk, the others' with the same bytes: the work does not grow with the
// apps. New notices change the full answer and no app's.
// An answer of several chunks is joined once, every call the same slice.
func TestManyApps(t *testing.T) {
	t.Parallel()
	apps, entries := fleet(100)
	s := snapshot.New(apps, fakeclock.New(t0.Add(24*time.Hour)))
	s.SetAll(entries, time.Now())
	m := release.Bulletin{AppRenames: []release.AppRename{}, RepoRenames: []release.RepoRename{},
		Notices: release.Notices{Announcements: []release.Announcement{}, Alerts: []release.Alert{}}}
	checkRendering(t, s.Current(), apps, entries, m)

	before, chunksBefore := s.Current(), s.Chunks()
	polled := apps[40].Key
	e := entries[polled]
	e.FetchedAt = e.FetchedAt.Add(time.Hour)
	entries[polled] = e
	s.Set(polled, e)
	after, chunksAfter := s.Current(), s.Chunks()
	checkRendering(t, after, apps, entries, m)
	for _, d := range []struct {
		name          string
		before, after [][]byte
		most          int
	}{
		{"full answer", chunksBefore.JSON, chunksAfter.JSON, 2},
		{"full answer gzip", chunksBefore.JSONGzip, chunksAfter.JSONGzip, 2},
		{"page", chunksBefore.HTML, chunksAfter.HTML, 1},
		{"page gzip", chunksBefore.HTMLGzip, chunksAfter.HTMLGzip, 1},
	} {
		if len(d.before) != len(d.after) || len(d.after) < 5 {
			t.Fatalf("%s: %d then %d chunks, want the same number, several", d.name, len(d.before), len(d.after))
		}
		rebuilt := 0
		for i := range d.after {
			if &d.before[i][0] != &d.after[i][0] {
				rebuilt++
			}
		}
		if rebuilt == 0 || rebuilt > d.most {
			t.Errorf("%s: %d of %d chunks rebuilt, want 1 to %d", d.name, rebuilt, len(d.after), d.most)
		}
	}
	// The full answer holds the apps in the order of their keys,
	// AppsPerChunk to a chunk (its last chunk none: what follows them).
	keys := slices.Sorted(maps.Keys(after.Apps))
	from := slices.Index(keys, polled) / snapshot.AppsPerChunk * snapshot.AppsPerChunk
	want := keys[from:min(from+snapshot.AppsPerChunk, len(keys))]
	var replaced []string
	for _, key := range keys {
		a, b := after.Apps[key], before.Apps[key]
		if a == b {
			continue
		}
		replaced = append(replaced, key)
		if key != polled && (a.ETag != b.ETag || !bytes.Equal(a.Body(), b.Body()) || !bytes.Equal(a.Gzip(), b.Gzip())) {
			t.Errorf("app %s: its answer changed with another app's poll", key)
		}
	}
	if !slices.Equal(replaced, want) {
		t.Errorf("answers replaced: %q, want those of the polled app's chunk, %q", replaced, want)
	}
	if before.ETag == after.ETag || before.Page.ETag == after.Page.ETag || before.GzipETag == after.GzipETag || before.Apps[polled].ETag == after.Apps[polled].ETag {
		t.Errorf("ETags did not change with app_last_fetched")
	}

	released := release.Entry{FetchedAt: t0.Add(2 * time.Hour), Release: rel("v9")}
	entries[apps[3].Key] = released // one that was never fetched: now complete
	s.Set(apps[3].Key, released)
	for i := 10; i < len(apps); i += 7 {
		e := release.Entry{FetchedAt: t0.Add(3 * time.Hour), Release: rel("v8")}
		entries[apps[i].Key] = e
		s.Set(apps[i].Key, e)
	}
	checkRendering(t, s.Current(), apps, entries, m)
	before = s.Current()
	m.Notices.Alerts = []release.Alert{{Title: "maintenance", Body: "tonight"}}
	s.SetMeta(m)
	cur := s.Current()
	checkRendering(t, cur, apps, entries, m)
	for key, a := range cur.Apps {
		if a != before.Apps[key] || cur.ETag == before.ETag {
			t.Fatalf("notices: the full answer must change (ETag %s, was %s) and app %s's must not", cur.ETag, before.ETag, key)
		}
	}
	if !cur.Complete {
		t.Errorf("Complete: got false with every app fetched")
	}
	for name, get := range map[string]func() []byte{"body": cur.Body, "gzip": cur.Gzip, "page": cur.Page.Body, "page gzip": cur.Page.Gzip} {
		if a, b := get(), get(); len(a) == 0 || &a[0] != &b[0] || len(a) != len(b) {
			t.Errorf("%s: two calls returned different slices, want the one joined once", name)
		}
	}
}

// TestETagOfOneChunk checks that an answer of one chunk keeps the tag of
// its bytes (128 bits of their SHA-256, as before answers were cut), and
// that another pod cutting the same data the same way serves the same tags.
func TestETagOfOneChunk(t *testing.T) {
	t.Parallel()
	apps, entries := realisticApps()
	s := snapshot.New(apps, fakeclock.New(t0.Add(24*time.Hour)))
	s.SetAll(entries, time.Now())
	cur := s.Current()
	if n := len(s.Chunks().JSON); n != 1 {
		t.Fatalf("13 apps: %d chunks, want 1", n)
	}
	sum := sha256.Sum256(cur.Body())
	if want := `"` + hex.EncodeToString(sum[:16]) + `"`; cur.ETag != want {
		t.Errorf("ETag: got %s, want %s", cur.ETag, want)
	}

	many, manyEntries := fleet(50)
	one, two := snapshot.New(many, nil), snapshot.New(many, nil)
	one.SetAll(manyEntries, time.Now())
	for _, a := range many { // one at a time: other renderings on the way
		two.Set(a.Key, manyEntries[a.Key])
	}
	if a, b := one.Current(), two.Current(); a.ETag != b.ETag || a.GzipETag != b.GzipETag || a.Page.ETag != b.Page.ETag {
		t.Errorf("two pods with the same data: ETags %s/%s/%s and %s/%s/%s", a.ETag, a.GzipETag, a.Page.ETag, b.ETag, b.GzipETag, b.Page.ETag)
	}
}

// BenchmarkRender measures one re-render of the 13 default apps with
// realistic releases after a new release of one: its object and page
// section compressed, the chunks that hold them joined, every ETag
// (docs/operations.md, "Sizing").
func BenchmarkRender(b *testing.B) {
	apps, entries := realisticApps()
	s := snapshot.New(apps, fakeclock.New(t0.Add(24*time.Hour)))
	s.SetAll(entries, time.Now())
	e := entries["photocraft"]
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		// Every Set is strictly newer, with another release.
		e.FetchedAt = e.FetchedAt.Add(time.Millisecond)
		r := *e.Release
		r.Name = "photocraft " + strconv.Itoa(i)
		e.Release = &r
		s.Set("photocraft", e)
	}
	b.ReportMetric(float64(len(s.Current().Body())), "body-bytes")
	b.ReportMetric(float64(len(s.Current().Gzip())), "gzip-bytes")
}

// BenchmarkPoll measures the render of a 304 poll, which moves only one
// app's app_last_fetched, at 13 and at 1,000 apps: its CPU should not grow
// with the apps.
func BenchmarkPoll(b *testing.B) {
	for _, n := range []int{13, 1000} {
		b.Run(fmt.Sprintf("apps=%d", n), func(b *testing.B) {
			apps, entries := fleet(n)
			s := snapshot.New(apps, fakeclock.New(t0.Add(24*time.Hour)))
			s.SetAll(entries, time.Now())
			key := apps[0].Key
			e := entries[key]
			b.ReportAllocs()
			for b.Loop() {
				e.FetchedAt = e.FetchedAt.Add(time.Millisecond)
				s.Set(key, e)
			}
			b.ReportMetric(float64(len(s.Current().Body())), "body-bytes")
			b.ReportMetric(float64(len(s.Current().Gzip())), "gzip-bytes")
		})
	}
}

// realisticApps returns the 13 default apps with a realistic release each:
// 10 assets and 2 KiB of notes.
func realisticApps() ([]release.App, map[string]release.Entry) {
	keys := []string{"photocraft", "vectorcraft", "filmcraft", "lightcraft", "pdfcraft", "effectcraft",
		"designcraft", "wordcraft", "deckcraft", "gridcraft", "cadcraft", "soundcraft", "artcraft-launcher"}
	suffixes := []string{"windows-x64.msi", "windows-arm64.msi", "windows-x64-portable.zip", "macos-universal.dmg",
		"linux-x86_64.AppImage", "linux-x86_64.AppImage.zsync", "linux-x86_64.deb", "linux-x86_64.rpm",
		"linux-aarch64.tar.gz", "SHA256SUMS.txt"}
	words := strings.Fields("fixed added improved the brush layer export import crash undo redo panel " +
		"canvas color profile window macOS Linux Windows performance memory leak when on with a an of to in")
	// A seeded generator: the notes vary like real ones but every run renders the same bytes.
	rnd := rand.New(rand.NewPCG(1, 2))
	published := release.NewTime(t0.Add(-48 * time.Hour))
	apps := make([]release.App, 0, len(keys))
	entries := make(map[string]release.Entry, len(keys))
	for i, k := range keys {
		repo := "storytold/" + k
		apps = append(apps, release.App{Key: k, Name: strings.ToUpper(k[:1]) + k[1:], Repo: repo})
		tag := fmt.Sprintf("v0.%d.0", i+1)
		r := &release.Release{
			Tag: tag, Version: tag[1:], Name: k + " " + tag, PublishedAt: published,
			HTMLURL:       "https://github.com/" + repo + "/releases/tag/" + tag,
			NotesMarkdown: notes(rnd, words),
		}
		for j, suf := range suffixes {
			name := k + "-" + tag[1:] + "-" + suf
			sum := fmt.Sprintf("%064x", j*1000+i)
			arch := "x64"
			r.Assets = append(r.Assets, release.Asset{
				Name: name, SizeBytes: int64(50_000_000 + j), SHA256: &sum,
				DownloadURL: "https://github.com/" + repo + "/releases/download/" + tag + "/" + name,
				Platform:    &release.Platform{OS: "linux", Arch: &arch, PackageType: "deb"},
			})
		}
		entries[k] = release.Entry{FetchedAt: t0, ETag: `"etag"`, Release: r}
	}
	return apps, entries
}

// notes returns 2 KiB of release notes made of words in random order.
func notes(rnd *rand.Rand, words []string) string {
	var b strings.Builder
	for b.Len() < 2048 {
		b.WriteString("- ")
		for range 6 + rnd.IntN(10) {
			b.WriteString(words[rnd.IntN(len(words))])
			b.WriteByte(' ')
		}
		b.WriteString(strconv.Itoa(rnd.IntN(10000)))
		b.WriteByte('\n')
	}
	return b.String()[:2048]
}
