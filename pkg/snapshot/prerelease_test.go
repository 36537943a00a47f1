package snapshot_test

import (
	"bytes"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/storytold/craft-releases/pkg/release"
	"github.com/storytold/craft-releases/pkg/snapshot"
	"github.com/storytold/craft-releases/test/fakeclock"
)

// dated returns a small release tagged tag, published at t0 plus hours,
// marked prerelease when pre.
func dated(tag string, hours int, pre bool) *release.Release {
	r := rel(tag)
	r.PublishedAt, r.Prerelease = release.NewTime(t0.Add(time.Duration(hours)*time.Hour)), pre
	return r
}

// TestLatestPrerelease: an app on the channel has latest_prerelease, the
// pre-release release.LatestPrerelease shows, else null; the other apps
// have no such key and the very bytes they had; the app's own answer holds
// the same object.
func TestLatestPrerelease(t *testing.T) {
	t.Parallel()
	channel := photocraft
	channel.Prereleases = true
	pre := channel.PrereleaseEntry().Key
	for _, tt := range []struct {
		name         string
		stable, beta *release.Release
		want         string // the tag shown; "" for null
	}{
		{"newer than the release", dated("v1", 0, false), dated("v2-beta", 1, true), "v2-beta"},
		{"older than the release", dated("v2", 2, false), dated("v2-beta", 1, true), ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			plain := snapshot.New([]release.App{photocraft, launcher}, fakeclock.New(t0.Add(24*time.Hour)))
			s := snapshot.New([]release.App{channel, launcher}, fakeclock.New(t0.Add(24*time.Hour)))
			for _, sn := range []*snapshot.Snapshot{plain, s} {
				sn.SetAll(map[string]release.Entry{"photocraft": {FetchedAt: t0, Release: tt.stable},
					pre: {FetchedAt: t0.Add(time.Second), Release: tt.beta}, "artcraft-launcher": {FetchedAt: t0}}, time.Now())
			}
			shown := "null"
			if tt.want != "" {
				shown = string(mustMarshal(t, tt.beta))
			}
			want := strings.Replace(string(plain.Current().Apps["photocraft"].Body()),
				`,"rollout"`, `,"latest_prerelease":`+shown+`,"rollout"`, 1)
			got := s.Current().Apps["photocraft"]
			if string(got.Body()) != want {
				t.Fatalf("app answer:\n got %s\nwant %s", got.Body(), want)
			}
			if got := gunzip(t, got.Gzip()); !bytes.Equal(got, []byte(want)) {
				t.Errorf("gzip copy: %s", got)
			}
			full := string(s.Current().Body())
			if !strings.Contains(full, want[len(`{"success":true,"app":`):len(want)-1]) {
				t.Errorf("the full answer lacks the app's object: %s", full)
			}
			if a, b := plain.Current().Apps["artcraft-launcher"], s.Current().Apps["artcraft-launcher"]; !bytes.Equal(a.Body(), b.Body()) {
				t.Errorf("an app without the channel changed: %s", b.Body())
			}
			if strings.Count(full, "latest_prerelease") != 1 {
				t.Errorf("latest_prerelease %d times in %s, want once", strings.Count(full, "latest_prerelease"), full)
			}
			if (got.Prerelease.Release != nil) != (tt.want != "") || tt.want != "" && got.Prerelease.Release.Tag != tt.want {
				t.Errorf("the app's Prerelease track: %+v, want %q", got.Prerelease.Release, tt.want)
			}
			if !strings.Contains(string(s.Current().Page.Body()), `data-channel="prerelease"`) != (tt.want == "") {
				t.Errorf("the page shows a pre-release: want %v", tt.want != "")
			}
		})
	}
}

// TestPrereleaseFreshness: an app on the channel is fetched once both of
// its requests were answered; its app_last_fetched, and last_fetched, are
// the older of the two.
func TestPrereleaseFreshness(t *testing.T) {
	t.Parallel()
	channel := photocraft
	channel.Prereleases = true
	s := snapshot.New([]release.App{channel}, fakeclock.New(t0.Add(24*time.Hour)))
	s.Set("photocraft", release.Entry{FetchedAt: t0.Add(time.Minute), Release: dated("v1", 0, false)})
	cur := s.Current()
	if cur.Complete || cur.CacheControl != snapshot.CacheControlUnfetched || cur.Apps["photocraft"].Fetched {
		t.Fatalf("the list not fetched yet: Complete %v, %s, app fetched %v; want not fetched, no-store",
			cur.Complete, cur.CacheControl, cur.Apps["photocraft"].Fetched)
	}
	if !strings.Contains(string(cur.Body()), `"latest_prerelease":null,"rollout":null,"minimum_version":null,"app_last_fetched":null`) {
		t.Errorf("body: %s", cur.Body())
	}
	s.Set("photocraft:prerelease", release.Entry{FetchedAt: t0})
	cur = s.Current()
	a := cur.Apps["photocraft"]
	if !cur.Complete || !cur.LastFetched.Equal(t0) || !a.Fetched || !a.FetchedAt.Equal(t0) || a.CacheControl != snapshot.CacheControlFetched {
		t.Fatalf("both fetched: Complete %v, LastFetched %v, app %v at %v (%s); want the older fetch, %v",
			cur.Complete, cur.LastFetched, a.Fetched, a.FetchedAt, a.CacheControl, t0)
	}
	s.Set("photocraft:prerelease", release.Entry{FetchedAt: t0.Add(2 * time.Minute)})
	if a := s.Current().Apps["photocraft"]; !a.FetchedAt.Equal(t0.Add(time.Minute)) {
		t.Errorf("app_last_fetched %v, want the release's fetch, now the older", a.FetchedAt)
	}
}

func mustMarshal(t testing.TB, r *release.Release) []byte {
	t.Helper()
	b, err := release.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// BenchmarkChannelSize prints what the pre-release channel adds to the full
// answer of the 13 realistic apps, plain and gzip: with every app on the
// channel and no pre-release newer than its release (null), and with a
// pre-release as large as its release for each.
func BenchmarkChannelSize(b *testing.B) {
	apps, entries := realisticApps()
	// Notes of their own, as a pre-release has: the release's words in
	// another order.
	rnd := rand.New(rand.NewPCG(3, 4))
	notesOf := map[string]string{}
	for _, a := range apps {
		notesOf[a.Key] = notes(rnd, strings.Fields(entries[a.Key].Release.NotesMarkdown))
	}
	size := func(channel, shown bool) (plain, zipped int) {
		as := append([]release.App(nil), apps...)
		es := map[string]release.Entry{}
		for i, a := range as {
			es[a.Key] = entries[a.Key]
			if !channel {
				continue
			}
			as[i].Prereleases = true
			var pre *release.Release
			if shown {
				c := *entries[a.Key].Release
				c.Tag, c.Version, c.Prerelease = c.Tag+"-beta.1", c.Version+"-beta.1", true
				c.PublishedAt, c.NotesMarkdown = release.NewTime(c.PublishedAt.Add(time.Hour)), notesOf[a.Key]
				c.Assets = nil
				for _, as := range entries[a.Key].Release.Assets {
					as.Name = strings.Replace(as.Name, c.Version[:len(c.Version)-len("-beta.1")], c.Version, 1)
					as.DownloadURL = "https://github.com/" + a.Repo + "/releases/download/" + c.Tag + "/" + as.Name
					c.Assets = append(c.Assets, as)
				}
				pre = &c
			}
			es[a.PrereleaseEntry().Key] = release.Entry{FetchedAt: t0, Release: pre}
		}
		s := snapshot.New(as, fakeclock.New(t0.Add(24*time.Hour)))
		s.SetAll(es, time.Now())
		cur := s.Current()
		return len(cur.Body()), len(cur.Gzip())
	}
	var base, null, full [2]int
	for b.Loop() {
		base[0], base[1] = size(false, false)
		null[0], null[1] = size(true, false)
		full[0], full[1] = size(true, true)
	}
	n := float64(len(apps))
	b.ReportMetric(float64(base[0]), "plain-bytes")
	b.ReportMetric(float64(base[1]), "gzip-bytes")
	b.ReportMetric(float64(null[0]-base[0])/n, "null-plain-bytes/app")
	b.ReportMetric(float64(null[1]-base[1])/n, "null-gzip-bytes/app")
	b.ReportMetric(float64(full[0]-base[0])/n, "prerelease-plain-bytes/app")
	b.ReportMetric(float64(full[1]-base[1])/n, "prerelease-gzip-bytes/app")
}
