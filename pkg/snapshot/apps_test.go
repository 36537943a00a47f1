package snapshot_test

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"io"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/storytold/craft-releases/pkg/release"
	"github.com/storytold/craft-releases/pkg/snapshot"
	"github.com/storytold/craft-releases/test/fakeclock"
)

func gunzip(t testing.TB, b []byte) []byte {
	t.Helper()
	zr, err := gzip.NewReader(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	plain, err := io.ReadAll(zr)
	if err != nil {
		t.Fatal(err)
	}
	return plain
}

// TestDownloads: which download URLs the door (release.Verify, as the GitHub
// parser and the Redis decoder apply it) lets in, beyond what
// release.TestVerify and TestDownloadRepo pin, and that the snapshot offers
// every platform asset of what it is given, as the one check decided.
func TestDownloads(t *testing.T) {
	t.Parallel()
	const base = "https://github.com/storytold/photocraft/releases/download/v1/"
	for _, tt := range []struct {
		name    string
		url     string
		trusted bool
	}{
		{"under the repository", base + "a-1-linux-x64.deb", true},
		{"escaped name", base + "a%2D1-linux-x64.deb", true},
		{"a query", base + "a-1-linux-x64.deb?x=1", false},
		{"the repository in another case", "https://github.com/Storytold/photocraft/releases/download/v1/a-1-linux-x64.deb", false},
		{"a repository with the same prefix", "https://github.com/storytold/photocraft-evil/releases/download/v1/a-1-linux-x64.deb", false},
		{"another host", "https://evil.example/storytold/photocraft/releases/download/v1/a-1-linux-x64.deb", false},
		{"http", "http://github.com/storytold/photocraft/releases/download/v1/a-1-linux-x64.deb", false},
		{"nothing after the prefix", base[:len(base)-3], false},
		{"dot", base + "./a-1-linux-x64.deb", false},
		{"empty segment", base + "/a-1-linux-x64.deb", false},
		{"backslash", base + `..\a-1-linux-x64.deb`, false},
		{"CRLF", base + "a-1-linux-x64.deb\r\nSet-Cookie: x=y", false},
		{"space", base + "a 1-linux-x64.deb", false},
		{"DEL", base + "a-1-linux-x64.deb\x7f", false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			r := rel("v1")
			r.HTMLURL = release.TagURL(photocraft.Repo, "v1")
			r.Assets = []release.Asset{
				{Name: "SHA256SUMS.txt", DownloadURL: base + "SHA256SUMS.txt"},
				{Name: "a-1-linux-x64.deb", DownloadURL: tt.url, Platform: release.ParseAsset("a-1-linux-x64.deb")},
			}
			if got := release.Verify(photocraft, r) == nil; got != tt.trusted {
				t.Fatalf("%q let in: got %v, want %v", tt.url, got, tt.trusted)
			}
			if !tt.trusted {
				return
			}
			s := snapshot.New([]release.App{photocraft}, fakeclock.New(t0.Add(24*time.Hour)))
			s.Set("photocraft", release.Entry{FetchedAt: t0, Release: r})
			a := s.Current().Apps["photocraft"]
			if len(a.Downloads) != 1 {
				t.Fatalf("%q not offered", tt.url)
			}
			if tt.trusted && (a.Downloads[0].DownloadURL != tt.url || len(a.Locations) != 1 || a.Locations[0][0] != tt.url) {
				t.Errorf("Downloads %v, Locations %q: want the asset and its URL", a.Downloads, a.Locations)
			}
			if !bytes.Contains(s.Current().Body(), []byte(`"a-1-linux-x64.deb"`)) {
				t.Errorf("the JSON answers must still list every asset")
			}
		})
	}
}

// TestWritersShareARendering checks that writers whose changes arrive while
// a render runs share the next one, and that each returns with its change
// served.
func TestWritersShareARendering(t *testing.T) {
	t.Parallel()
	apps, entries := fleet(40)
	s := snapshot.New(apps, fakeclock.New(t0.Add(24*time.Hour)))
	before := s.Renders()
	release := s.HoldRenders()
	var wg sync.WaitGroup
	for _, a := range apps {
		wg.Go(func() {
			s.Set(a.Key, entries[a.Key])
			if _, ok := entries[a.Key]; ok && s.Current().Apps[a.Key].FetchedAt.IsZero() {
				t.Errorf("Set(%s) returned before a rendering showed it", a.Key)
			}
		})
	}
	for s.Changes() < uint64(len(entries)) {
		time.Sleep(time.Millisecond)
	}
	release()
	wg.Wait()
	if got := s.Renders() - before; got != 1 {
		t.Errorf("renders for %d concurrent changes: got %d, want 1", len(entries), got)
	}
}

// TestConcurrent runs readers against writers; with -race it checks that
// readers never lock and never see a torn rendering, and that what they see
// never goes back in time.
func TestConcurrent(t *testing.T) {
	t.Parallel()
	apps := []release.App{photocraft, launcher, filmcraft}
	s := snapshot.New(apps, nil)
	const writes = 200
	// Writers interleave older and newer times on purpose.
	at := func(w, i int) time.Time { return t0.Add(time.Duration((i*7+w*3)%writes) * time.Second) }
	want := map[string]time.Time{}
	for w := range 2 {
		for i := range writes {
			if app := apps[i%len(apps)].Key; at(w, i).After(want[app]) {
				want[app] = at(w, i)
			}
		}
	}

	var wg sync.WaitGroup
	for w := range 2 {
		wg.Go(func() {
			for i := range writes {
				app := apps[i%len(apps)].Key
				s.Set(app, release.Entry{FetchedAt: at(w, i), Release: rel(fmt.Sprintf("v%d", i))})
				if i%50 == 0 {
					s.SetAll(map[string]release.Entry{app: {FailedAt: at(w, i), Failures: i}}, time.Now())
					s.SetMeta(release.Bulletin{Notices: release.Notices{Alerts: []release.Alert{{Title: strconv.Itoa(i)}}}})
				}
			}
		})
	}
	errs := make(chan error, 4)
	for range 4 {
		wg.Go(func() {
			seen := map[string]time.Time{}
			for range writes {
				r := s.Current()
				if got, want := r.Values.ContentLength[0], strconv.Itoa(len(r.Body())); got != want {
					errs <- fmt.Errorf("Content-Length: got %s, want %s: a torn rendering", got, want)
					return
				}
				for app, a := range r.Apps {
					if at := a.FetchedAt; at.Before(seen[app]) {
						errs <- fmt.Errorf("FetchedAt[%s]: went back from %v to %v", app, seen[app], at)
						return
					}
					seen[app] = a.FetchedAt
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	for app, w := range want {
		if got := s.Current().Apps[app].FetchedAt; !got.Equal(w) {
			t.Errorf("FetchedAt[%s] at the end: got %v, want the newest written, %v", app, got, w)
		}
	}
}
