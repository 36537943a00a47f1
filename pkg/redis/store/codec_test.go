package store

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/storytold/craft-releases/pkg/release"
	"github.com/storytold/craft-releases/pkg/schedule"
)

func TestDecodeApp(t *testing.T) {
	t.Parallel()
	noon, now := at("12:00"), at("13:00")
	relJSON := `{"tag":"v1.0.0","version":"1.0.0","name":"PhotoCraft v1.0.0","published_at":"2026-10-08T14:52:50Z",` +
		`"html_url":"https://github.com/storytold/photocraft/releases/tag/v1.0.0","prerelease":false,"notes_markdown":"",` +
		`"assets":[]}`
	full := func(kv ...string) map[string]string {
		h := map[string]string{"v": "1", "fetched_ms": ms(noon), "etag": `"e"`, "release": relJSON,
			"failed_ms": ms(noon.Add(time.Minute)), "failures": "2", "claimed_ms": ms(noon.Add(-time.Minute)), "by": "poller-a"}
		for i := 0; i+1 < len(kv); i += 2 {
			if kv[i+1] == "<del>" {
				delete(h, kv[i])
			} else {
				h[kv[i]] = kv[i+1]
			}
		}
		return h
	}
	v1 := &release.Release{Tag: "v1.0.0", Version: "1.0.0", Name: "PhotoCraft v1.0.0",
		PublishedAt: release.NewTime(time.Date(2026, 10, 8, 14, 52, 50, 0, time.UTC)),
		HTMLURL:     "https://github.com/storytold/photocraft/releases/tag/v1.0.0", Assets: []release.Asset{}}
	fetched := release.Entry{FetchedAt: noon, ETag: `"e"`, Release: v1}
	failed := release.Entry{FailedAt: noon.Add(time.Minute), Failures: 2}
	claimed := release.Entry{ClaimedAt: noon.Add(-time.Minute)}
	all := fetched.Merge(failed, now).Merge(claimed, now)
	unfetched := failed.Merge(claimed, now)

	poisoned := func(from, to string) string { return strings.Replace(relJSON, from, to, 1) }
	tests := []struct {
		name    string
		h       map[string]string
		want    release.Entry
		refused bool // DecodeApp says why
	}{
		{"no hash", nil, release.Entry{}, false},
		{"empty hash", map[string]string{}, release.Entry{}, false},
		{"everything", full(), all, false},
		{"no version", full("v", "<del>"), release.Entry{}, false},
		{"another version", full("v", "2"), release.Entry{}, false},
		{"version with a space", full("v", "1 "), release.Entry{}, false},
		{"fetch of no release", full("release", "null", "etag", ""), unfetched.Merge(release.Entry{FetchedAt: noon}, now), false},
		{"no etag", full("etag", "<del>"), unfetched, false},
		{"empty etag", full("etag", ""), unfetched.Merge(release.Entry{FetchedAt: noon, Release: v1}, now), false},
		{"no release", full("release", "<del>"), unfetched, false},
		{"empty release", full("release", ""), unfetched, true},
		{"cut release", full("release", "{"), unfetched, true},
		{"release without tag", full("release", `{"name":"x"}`), unfetched, true},
		{"release of the wrong shape", full("release", `{"tag":"v1","assets":{}}`), unfetched, true},
		{"release with a bad time", full("release", `{"tag":"v1","published_at":"yesterday"}`), unfetched, true},
		{"release as an array", full("release", `[]`), unfetched, true},
		{"release without assets", full("release", `{"tag":"v1"}`), unfetched, true},
		{"release of another repository", full("release", strings.ReplaceAll(relJSON, "storytold/photocraft", "evil/photocraft")), unfetched, true},
		{"release with a key in capitals", full("release", poisoned(`"tag"`, `"TAG"`)), unfetched, true},
		{"release with an unknown key", full("release", poisoned(`"assets"`, `"x":1,"assets"`)), unfetched, true},
		{"release whose version is not the tag's", full("release", poisoned(`"version":"1.0.0"`, `"version":"9"`)), unfetched, true},
		{"release with a bidi override", full("release", poisoned(`"name":"PhotoCraft`, `"name":"\u202ePhotoCraft`)), unfetched, true},
		{"release over the bound", full("release", `{"tag":"`+strings.Repeat("v", release.MaxEncoded)+`"}`), unfetched, true},
		{"fetch an hour ahead", full("fetched_ms", ms(now.Add(time.Hour))), unfetched, true},
		{"fetch just within the margin", full("fetched_ms", ms(now.Add(release.MaxSkew))),
			unfetched.Merge(release.Entry{FetchedAt: now.Add(release.MaxSkew), ETag: `"e"`, Release: v1}, now), false},
		{"failure an hour ahead", full("failed_ms", ms(now.Add(time.Hour))), fetched.Merge(claimed, now), true},
		{"claim an hour ahead", full("claimed_ms", ms(now.Add(time.Hour))), fetched.Merge(failed, now), true},
		{"a run of 404s", full("notfound_since_ms", ms(noon), "notfound", "2"),
			withNotFound(all, noon, 2), false},
		{"a run of 404s longer than the failures", full("notfound_since_ms", ms(noon), "notfound", "3"), all, false},
		{"a run of 404s that starts after the failure", full("notfound_since_ms", ms(noon.Add(2*time.Minute)), "notfound", "1"), all, false},
		{"a run of 404s ended", full("notfound_since_ms", "0", "notfound", "0"), all, false},
		{"no fetch time", full("fetched_ms", "<del>"), unfetched, false},
		{"fetch time zero", full("fetched_ms", "0"), unfetched, false},
		{"fetch time negative", full("fetched_ms", "-1"), unfetched, false},
		{"fetch time with a plus", full("fetched_ms", "+"+ms(noon)), unfetched, false},
		{"fetch time with a space", full("fetched_ms", ms(noon)+" "), unfetched, false},
		{"fetch time in seconds", full("fetched_ms", strconv.FormatInt(noon.Unix(), 10)),
			unfetched.Merge(release.Entry{FetchedAt: time.UnixMilli(noon.Unix()).UTC(), ETag: `"e"`, Release: v1}, now), false},
		{"fetch time of 19 digits", full("fetched_ms", "1000000000000000000"), unfetched, false},
		{"fetch time as a float", full("fetched_ms", "1.7e12"), unfetched, false},
		{"no failure", full("failed_ms", "<del>", "failures", "<del>"), fetched.Merge(claimed, now), false},
		{"failure time garbage", full("failed_ms", "x"), fetched.Merge(claimed, now), false},
		{"failures missing", full("failures", "<del>"), withFailures(all, 1), false},
		{"failures zero", full("failures", "0"), withFailures(all, 1), false},
		{"failures negative", full("failures", "-3"), withFailures(all, 1), false},
		{"failures garbage", full("failures", "many"), withFailures(all, 1), false},
		{"failures without a failure", full("failed_ms", "<del>", "failures", "7"), fetched.Merge(claimed, now), false},
		{"claim garbage", full("claimed_ms", "soon"), fetched.Merge(failed, now), false},
	}
	for _, tt := range tests {
		got, err := DecodeApp(photocraft, tt.h, now)
		if !sameEntry(t, got, tt.want) {
			t.Errorf("%s: got %s, want %s", tt.name, fmtEntry(got), fmtEntry(tt.want))
		}
		if (err != nil) != tt.refused {
			t.Errorf("%s: err = %v, want refused %v", tt.name, err, tt.refused)
		}
		// A Store's reads remember the last release accepted: the hash
		// reads the same after the release of full().
		var memo releaseMemo
		_, _ = decodeApp(photocraft, full(), now, &memo)
		got, err = decodeApp(photocraft, tt.h, now, &memo)
		if !sameEntry(t, got, tt.want) || (err != nil) != tt.refused {
			t.Errorf("%s, after a release was read: got %s, err = %v; want %s, refused %v", tt.name, fmtEntry(got), err, fmtEntry(tt.want), tt.refused)
		}
	}
}

// TestReleaseMemo: the same bytes of one repository decode once; other
// bytes, or another repository's, are decoded afresh.
func TestReleaseMemo(t *testing.T) {
	t.Parallel()
	v1, v2 := encoded(t, rel("v1.0.0")), encoded(t, rel("v2.0.0"))
	var memo releaseMemo
	first, err := memo.decode(photocraft, v1)
	if err != nil {
		t.Fatal(err)
	}
	if again, err := memo.decode(photocraft, strings.Clone(v1)); err != nil || again != first {
		t.Errorf("the same bytes again: %p, %v; want the release decoded first, %p", again, err, first)
	}
	if got, err := memo.decode(photocraft, v2); err != nil || got.Tag != "v2.0.0" {
		t.Errorf("other bytes: %v, %v; want v2.0.0", got, err)
	}
	if got, err := memo.decode(release.App{Key: "photocraft", Repo: "evil/photocraft"}, v2); err == nil {
		t.Errorf("photocraft's release as another repository's: %v, want refused", got.Tag)
	}
	if got, err := memo.decode(photocraft, v1); err != nil || got == first || got.Tag != "v1.0.0" {
		t.Errorf("the first bytes after others: %p, %v; want v1.0.0 decoded again", got, err)
	}
	// A release whose version is its tag's without a prefix is not the
	// release of an app with one, remembered or not.
	old := encoded(t, rel("photocraft-v3.0.0"))
	if _, err := memo.decode(photocraft, old); err != nil {
		t.Fatalf("photocraft-v3.0.0 without a prefix: %v", err)
	}
	prefixed := photocraft
	prefixed.TagPrefix = "photocraft-v"
	if got, err := memo.decode(prefixed, old); err == nil {
		t.Errorf("version %q as the release of an app with prefix %q: accepted, want refused", got.Version, prefixed.TagPrefix)
	}
}

// TestDecodeAppTagPrefix: an app hash holds a release of its app only when
// the version is the tag's by the app's prefix, so that a release written
// under another prefix, or none, reads as no fetch and is refused.
func TestDecodeAppTagPrefix(t *testing.T) {
	t.Parallel()
	now := at("13:00")
	prefixed := photocraft
	prefixed.TagPrefix = "photocraft-v"
	byPrefix := rel("photocraft-v3.0.0")
	byPrefix.Version = "3.0.0"
	for _, tt := range []struct {
		name string
		app  release.App
		rel  *release.Release
		ok   bool
	}{
		{"no prefix, today's version", photocraft, rel("photocraft-v3.0.0"), true},
		{"no prefix, the prefix's version", photocraft, byPrefix, false},
		{"a prefix, its version", prefixed, byPrefix, true},
		{"a prefix, today's version", prefixed, rel("photocraft-v3.0.0"), false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			h := map[string]string{"v": "1", "fetched_ms": ms(at("12:00")), "etag": `"e"`, "release": encoded(t, tt.rel)}
			e, err := DecodeApp(tt.app, h, now)
			if got := e.Fetched() && err == nil; got != tt.ok {
				t.Errorf("DecodeApp(prefix %q, version %q) = %s, err %v; want fetched %v", tt.app.TagPrefix, tt.rel.Version, fmtEntry(e), err, tt.ok)
			}
		})
	}
}

func encoded(t testing.TB, r *release.Release) string {
	t.Helper()
	s, err := encodeRelease(r)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestDecodeBackoff(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		h    map[string]string
		want schedule.Backoff
	}{
		{"none", nil, schedule.Backoff{}},
		{"backoff", map[string]string{"v": "1", "until_ms": ms(at("13:00")), "trouble": "3"}, schedule.Backoff{Until: at("13:00"), Trouble: 3}},
		{"no trouble", map[string]string{"v": "1", "until_ms": ms(at("13:00"))}, schedule.Backoff{Until: at("13:00")}},
		{"until zero", map[string]string{"v": "1", "until_ms": "0", "trouble": "3"}, schedule.Backoff{Trouble: 3}},
		{"until garbage", map[string]string{"v": "1", "until_ms": "later", "trouble": "3"}, schedule.Backoff{Trouble: 3}},
		{"trouble garbage", map[string]string{"v": "1", "until_ms": ms(at("13:00")), "trouble": "x"}, schedule.Backoff{Until: at("13:00")}},
		{"another version", map[string]string{"v": "2", "until_ms": ms(at("13:00")), "trouble": "3"}, schedule.Backoff{}},
	}
	for _, tt := range tests {
		if got := DecodeBackoff(tt.h); !got.Until.Equal(tt.want.Until) || got.Trouble != tt.want.Trouble {
			t.Errorf("%s: got %+v, want %+v", tt.name, got, tt.want)
		}
	}
}

// FuzzDecodeApp feeds DecodeApp hashes from anyone: it must not panic, what
// it returns must be consistent, and writing it back must read the same.
func FuzzDecodeApp(f *testing.F) {
	relJSON, err := release.Marshal(rel("v1.0.0"))
	if err != nil {
		f.Fatal(err)
	}
	noon := ms(at("12:00"))
	f.Add("1", noon, `"e"`, true, string(relJSON), noon, "2", noon)
	f.Add("1", noon, "", true, "null", "", "", "")
	f.Add("1", "soon", `"e"`, true, "{", "0", "-1", "+5")
	f.Add("2", noon, `"e"`, false, `{"tag":""}`, noon, "x", " 5")
	f.Add("1", "1000000000000000000", "W/\"e\"", true, `{"tag":"v1","assets":null,"published_at":"2026-10-08T14:52:50.5Z"}`, "999999999999999999", "99999999999999999999", "007")

	s := New(nil, "fuzz", testApps)
	now := at("12:00").Add(time.Hour)
	f.Fuzz(func(t *testing.T, v, fetchedMS, etag string, hasETag bool, rel, failedMS, failures, claimedMS string) {
		h := map[string]string{"v": v, "fetched_ms": fetchedMS, "release": rel,
			"failed_ms": failedMS, "failures": failures, "claimed_ms": claimedMS}
		if hasETag {
			h["etag"] = etag
		}
		e, _ := DecodeApp(photocraft, h, now)

		if v != "1" && (e.Fetched() || !e.FailedAt.IsZero() || !e.ClaimedAt.IsZero()) {
			t.Fatalf("a hash of version %q read as %s", v, fmtEntry(e))
		}
		if !e.Fetched() && (e.ETag != "" || e.Release != nil) {
			t.Fatalf("no fetch, yet etag %q and release %v", e.ETag, e.Release)
		}
		if e.Fetched() && (!hasETag || e.ETag != etag || ms(e.FetchedAt) != trimZeros(fetchedMS)) {
			t.Fatalf("fetch %s from fetched_ms %q etag %q (present %v)", fmtEntry(e), fetchedMS, etag, hasETag)
		}
		if err := release.Verify(photocraft, e.Release); err != nil {
			t.Fatalf("release %+v fails the trust check: %v", e.Release, err)
		}
		for _, when := range []time.Time{e.FetchedAt, e.FailedAt, e.ClaimedAt} {
			if when.Sub(now) > release.MaxSkew {
				t.Fatalf("time %v believed, over %v ahead of %v", when, release.MaxSkew, now)
			}
		}
		if e.FailedAt.IsZero() != (e.Failures == 0) {
			t.Fatalf("failed at %v with %d failures", e.FailedAt, e.Failures)
		}
		for _, when := range []time.Time{e.FetchedAt, e.FailedAt, e.ClaimedAt} {
			if !when.IsZero() && (when.UnixMilli() <= 0 || when.Location() != time.UTC || when.Nanosecond()%1e6 != 0) {
				t.Fatalf("time %v: want a UTC millisecond after 1970", when)
			}
		}

		// What the Store would write of e reads back as e.
		back := map[string]string{}
		var writes []write
		if e.Fetched() {
			w, err := s.fetchWrite("photocraft", e)
			if err != nil {
				t.Fatalf("encode %s: %v", fmtEntry(e), err)
			}
			writes = append(writes, w)
		}
		if !e.FailedAt.IsZero() {
			writes = append(writes, s.failureWrite(e))
		}
		if !e.ClaimedAt.IsZero() {
			writes = append(writes, s.claimWrite(e.ClaimedAt, 0))
		}
		for _, w := range writes {
			for i := 0; i+1 < len(w.pairs); i += 2 {
				back[w.pairs[i]] = w.pairs[i+1]
			}
		}
		if again, err := DecodeApp(photocraft, back, now); err != nil || !sameEntry(t, again, e) {
			t.Fatalf("written back and read again: got %s, want %s", fmtEntry(again), fmtEntry(e))
		}
	})
}

// trimZeros drops the leading zeros of a decimal number.
func trimZeros(s string) string {
	for len(s) > 1 && s[0] == '0' {
		s = s[1:]
	}
	return s
}

func withNotFound(e release.Entry, since time.Time, n int) release.Entry {
	e.NotFoundSince, e.NotFound = since, n
	return e
}

func withFailures(e release.Entry, n int) release.Entry {
	e.Failures = n
	return e
}
