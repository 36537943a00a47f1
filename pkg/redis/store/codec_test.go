package store

import (
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/storytold/craft-releases/pkg/release"
	"github.com/storytold/craft-releases/pkg/schedule"
)

// TestDecodeApp is the codec's table of what a hash may hold, whoever wrote
// it, and what a reader makes of it: each refusal names its field.
func TestDecodeApp(t *testing.T) {
	t.Parallel()
	noon, now := at("12:00"), at("13:00")
	relJSON := `{"tag":"v1.0.0","version":"1.0.0","name":"PhotoCraft v1.0.0","published_at":"2026-10-08T14:52:50Z",` +
		`"html_url":"https://github.com/storytold/photocraft/releases/tag/v1.0.0","prerelease":false,"notes_markdown":"",` +
		`"assets":[]}`
	full := func(kv ...string) map[string]string {
		h := map[string]string{"v": "1", "fetched_ms": ms(noon), "etag": `"e"`, "release": relJSON,
			"failed_ms": ms(noon.Add(time.Minute)), "failures": "2", "claimed_ms": ms(noon.Add(-time.Minute)), "by": "poller-a"}
		return with(h, kv...)
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

	prefixed := photocraft
	prefixed.TagPrefix = "photocraft-v"
	byPrefix := rel("photocraft-v3.0.0")
	byPrefix.Version = "3.0.0"
	prefixHash := func(r *release.Release) map[string]string {
		return map[string]string{"v": "1", "fetched_ms": ms(noon), "etag": `"e"`, "release": encoded(t, r)}
	}

	v2, v1h := datedRel("v2.0.0", 2), datedRel("v1.0.0", 1)
	foreign := datedRel("v3.0.0", 3)
	foreign.Assets = []release.Asset{{Name: "a.msi", DownloadURL: "https://github.com/attacker/photocraft/releases/download/v3.0.0/a.msi",
		Platform: release.ParseAsset("a.msi")}}
	many := make([]*release.Release, 0, release.MaxHistory+1)
	for i := range release.MaxHistory + 1 {
		many = append(many, datedRel("v1.0."+string(rune('a'+i)), 20-i))
	}
	good := encList(t, v2, v1h)
	histHash := func(kv ...string) map[string]string {
		return with(map[string]string{"v": "1", "fetched_ms": ms(noon), "etag": `"l"`, "release": "null", "history": good}, kv...)
	}
	histFetch := release.Entry{FetchedAt: noon, ETag: `"l"`, History: release.NewHistory([]*release.Release{v2, v1h})}

	r, sigs := signed(t, "v1.0.0", "App_1.0.0_amd64.AppImage")
	sig := sigs["App_1.0.0_amd64.AppImage.sig"]
	manySigs := map[string]string{}
	for i := range release.MaxCompanions + 1 {
		manySigs[strings.Repeat("x", i+1)+".sig"] = sig
	}
	signedHash := func(field string) map[string]string {
		return map[string]string{"v": "1", "fetched_ms": ms(noon), "etag": `"e"`, "release": encoded(t, r), "companions": field}
	}
	signedFetch := release.Entry{FetchedAt: noon, ETag: `"e"`, Release: r}

	type row struct {
		name    string
		app     release.App // zero: photocraft
		h       map[string]string
		want    release.Entry
		refused string // a pattern of the error; "" for none
	}
	tests := []row{
		{name: "no hash"},
		{name: "empty hash", h: map[string]string{}},
		{name: "everything", h: full(), want: all},
		{name: "no version", h: full("v", "<del>")},
		{name: "another version", h: full("v", "2")},
		{name: "version with a space", h: full("v", "1 ")},
		{name: "fetch of no release", h: full("release", "null", "etag", ""), want: unfetched.Merge(release.Entry{FetchedAt: noon}, now)},
		{name: "no etag", h: full("etag", "<del>"), want: unfetched},
		{name: "empty etag", h: full("etag", ""), want: unfetched.Merge(release.Entry{FetchedAt: noon, Release: v1}, now)},
		{name: "no release", h: full("release", "<del>"), want: unfetched},
		{name: "release of another repository", h: full("release", strings.ReplaceAll(relJSON, "storytold/photocraft", "evil/photocraft")), want: unfetched, refused: "^release: "},
		{name: "release over the bound", h: full("release", `{"tag":"`+strings.Repeat("v", release.MaxEncoded)+`"}`), want: unfetched, refused: "^release: "},
		{name: "release of 29 February of a leap year", h: full("release", poisoned("2026-10-08T14:52:50Z", "2024-02-29T00:00:00Z")), want: unfetched.Merge(release.Entry{FetchedAt: noon, ETag: `"e"`, Release: leapDay(v1)}, now)},
		{name: "fetch an hour ahead", h: full("fetched_ms", ms(now.Add(time.Hour))), want: unfetched, refused: "^fetched_ms: "},
		{name: "fetch just within the margin", h: full("fetched_ms", ms(now.Add(release.MaxSkew))), want: unfetched.Merge(release.Entry{FetchedAt: now.Add(release.MaxSkew), ETag: `"e"`, Release: v1}, now)},
		{name: "failure an hour ahead", h: full("failed_ms", ms(now.Add(time.Hour))), want: fetched.Merge(claimed, now), refused: "^failed_ms: "},
		{name: "claim an hour ahead", h: full("claimed_ms", ms(now.Add(time.Hour))), want: fetched.Merge(failed, now), refused: "^claimed_ms: "},
		{name: "claim time of 18 digits, far ahead", h: full("claimed_ms", "100000000000000000"), want: fetched.Merge(failed, now), refused: "^claimed_ms: "},
		{name: "a run of 404s", h: full("notfound_since_ms", ms(noon), "notfound", "2"), want: withNotFound(all, noon, 2)},
		{name: "a run of 404s longer than the failures", h: full("notfound_since_ms", ms(noon), "notfound", "3"), want: all},
		{name: "a run of 404s that starts after the failure", h: full("notfound_since_ms", ms(noon.Add(2*time.Minute)), "notfound", "1"), want: all},
		{name: "a run of 404s ended", h: full("notfound_since_ms", "0", "notfound", "0"), want: all},
		{name: "no fetch time", h: full("fetched_ms", "<del>"), want: unfetched},
		{name: "fetch time zero", h: full("fetched_ms", "0"), want: unfetched},
		{name: "fetch time negative", h: full("fetched_ms", "-1"), want: unfetched},
		{name: "fetch time with a plus", h: full("fetched_ms", "+"+ms(noon)), want: unfetched},
		{name: "fetch time with a space", h: full("fetched_ms", ms(noon)+" "), want: unfetched},
		{name: "fetch time in seconds", h: full("fetched_ms", strconv.FormatInt(noon.Unix(), 10)), want: unfetched.Merge(release.Entry{FetchedAt: time.UnixMilli(noon.Unix()).UTC(), ETag: `"e"`, Release: v1}, now)},
		{name: "fetch time of 19 digits", h: full("fetched_ms", "1000000000000000000"), want: unfetched},
		{name: "fetch time as a float", h: full("fetched_ms", "1.7e12"), want: unfetched},
		{name: "no failure", h: full("failed_ms", "<del>", "failures", "<del>"), want: fetched.Merge(claimed, now)},
		{name: "failure time garbage", h: full("failed_ms", "x"), want: fetched.Merge(claimed, now)},
		{name: "failures missing", h: full("failures", "<del>"), want: withFailures(all, 1)},
		{name: "failures zero", h: full("failures", "0"), want: withFailures(all, 1)},
		{name: "failures negative", h: full("failures", "-3"), want: withFailures(all, 1)},
		{name: "failures garbage", h: full("failures", "many"), want: withFailures(all, 1)},
		{name: "failures without a failure", h: full("failed_ms", "<del>", "failures", "7"), want: fetched.Merge(claimed, now)},
		{name: "claim garbage", h: full("claimed_ms", "soon"), want: fetched.Merge(failed, now)},
		{name: "claim time negative", h: full("claimed_ms", "-"+ms(noon)), want: fetched.Merge(failed, now)},
		{name: "claim time with a space before", h: full("claimed_ms", " "+ms(noon)), want: fetched.Merge(failed, now)},
		{name: "claim time with a fraction", h: full("claimed_ms", ms(noon)+".0"), want: fetched.Merge(failed, now)},
		{name: "claim time with leading zeros", h: full("claimed_ms", "0"+ms(noon.Add(-time.Minute))), want: all},

		// A release's version is its tag's by the app's prefix.
		{name: "no prefix, today's version", h: prefixHash(rel("photocraft-v3.0.0")), want: fetch(noon, `"e"`, rel("photocraft-v3.0.0"))},
		{name: "no prefix, the prefix's version", h: prefixHash(byPrefix), refused: "^release: "},
		{name: "a prefix, its version", app: prefixed, h: prefixHash(byPrefix), want: fetch(noon, `"e"`, byPrefix)},
		{name: "a prefix, today's version", app: prefixed, h: prefixHash(rel("photocraft-v3.0.0")), refused: "^release: "},

		// A history entry's fetch needs its history; its companions are
		// dropped alone.
		{name: "history", app: history, h: histHash(), want: histFetch},
		{name: "no history field", app: history, h: histHash("history", "<del>")},
		{name: "an empty history", app: history, h: histHash("history", "[]"), want: release.Entry{FetchedAt: noon, ETag: `"l"`, History: release.NewHistory(nil)}},
		{name: "a history field of another entry", h: histHash("history", "[1]"), want: release.Entry{FetchedAt: noon, ETag: `"l"`}},
		{name: "history not json", app: history, h: histHash("history", "[{"), refused: "^history: "},
		{name: "history an object", app: history, h: histHash("history", `{"tag":"v1.0.0"}`), refused: "^history: "},
		{name: "history null", app: history, h: histHash("history", "null"), refused: "^history: "},
		{name: "history of a null release", app: history, h: histHash("history", "[null]"), refused: "^history: "},
		{name: "history out of order", app: history, h: histHash("history", encList(t, v1h, v2)), refused: "^history: "},
		{name: "history with a repeated tag", app: history, h: histHash("history", encList(t, v2, v2)), refused: "^history: "},
		{name: "history undated", app: history, h: histHash("history", encList(t, rel("v2.0.0"))), refused: "^history: "},
		{name: "history with a foreign download url", app: history, h: histHash("history", encList(t, foreign, v2)), refused: "^history: "},
		{name: "history over MaxHistory", app: history, h: histHash("history", encList(t, many...)), refused: "^history: "},
		{name: "history spaced", app: history, h: histHash("history", strings.Replace(good, ",", ", ", 1)), refused: "^history: "},
		{name: "history over its bound", app: history, h: histHash("history", "["+strings.Repeat(" ", maxHistoryField)+"]"), refused: "^history: "},
		{name: "history companions not an object", app: history, h: histHash("history_companions", `["x"]`), want: histFetch, refused: "^history_companions: "},
		{name: "history companions of a tag not in the history", app: history, h: histHash("history_companions", `{"v9.0.0":{}}`), want: histFetch, refused: "^history_companions: "},
		{name: "history companions not the release's", app: history, h: histHash("history_companions", `{"v2.0.0":{"App_1.0.0_amd64.AppImage.sig":`+encJSON(t, sig)+`}}`), want: histFetch, refused: "^history_companions: "},

		// Companions are the stored release's checked signatures, or none;
		// the fetch counts either way.
		{name: "companions", h: signedHash(encJSON(t, sigs)), want: withCompanions(signedFetch, sigs)},
		{name: "companions not json", h: signedHash(`{"App_1.0.0_amd64.AppImage.sig":`), want: signedFetch, refused: "^companions: not a JSON object"},
		{name: "companions an array", h: signedHash(`["x"]`), want: signedFetch, refused: "^companions: not a JSON object"},
		{name: "companions null", h: signedHash(`null`), want: signedFetch, refused: "^companions: not a JSON object"},
		{name: "a companion not of the release", h: signedHash(encJSON(t, map[string]string{"other.sig": sig})), want: signedFetch, refused: "^companions: .*no companion of the release"},
		{name: "a bundle, not its .sig", h: signedHash(encJSON(t, map[string]string{"App_1.0.0_amd64.AppImage": sig})), want: signedFetch, refused: "^companions: .*no companion of the release"},
		{name: "a companion that is no signature", h: signedHash(encJSON(t, map[string]string{"App_1.0.0_amd64.AppImage.sig": "aGVsbG8="})), want: signedFetch, refused: "^companions: .*minisign"},
		{name: "a tampered signature", h: signedHash(encJSON(t, map[string]string{"App_1.0.0_amd64.AppImage.sig": sig[:len(sig)-8] + "AAAAAAA="})), want: signedFetch, refused: "^companions: .*minisign"},
		{name: "a signature not stored as its text", h: signedHash(encJSON(t, map[string]string{"App_1.0.0_amd64.AppImage.sig": sig + "\n"})), want: signedFetch, refused: "^companions: .*not stored as its text"},
		{name: "too many companions", h: signedHash(encJSON(t, manySigs)), want: signedFetch, refused: "^companions: .*over 32"},
	}
	for name, raw := range hostileReleases(t) {
		tests = append(tests, row{name: "release " + name, h: full("release", raw), want: unfetched, refused: "^release: "})
	}
	for _, tt := range tests {
		app := tt.app
		if app.Key == "" {
			app = photocraft
		}
		check := func(how string, got release.Entry, err error) {
			if !sameEntry(got, tt.want) {
				t.Errorf("%s%s: got %s\nwant %s", tt.name, how, fmtEntry(got), fmtEntry(tt.want))
			}
			if ok := err == nil && tt.refused == "" || err != nil && tt.refused != "" && regexp.MustCompile(tt.refused).MatchString(err.Error()); !ok {
				t.Errorf("%s%s: err = %v, want one matching %q", tt.name, how, err, tt.refused)
			}
		}
		got, err := DecodeApp(app, tt.h, now)
		check("", got, err)
		// A Store's reads remember the last release accepted: the hash
		// reads the same after the release of full().
		var memo releaseMemo
		_, _ = decodeApp(app, full(), now, &memo)
		got, err = decodeApp(app, tt.h, now, &memo)
		check(", after a release was read", got, err)
	}
}

// hostileReleases are release fields no poller writes, by what is wrong
// with them: each makes a hash read as no fetch. Why release.Decode refuses
// each release is its own tests' (TestDecode, TestVerify, TestDownloadRepo,
// TestTimeUnmarshalJSON); these are the refusals those do not show, and the
// poisoned release TestRefusedFields writes.
func hostileReleases(t testing.TB) map[string]string {
	t.Helper()
	good := rel("v1.0.0")
	good.Assets = []release.Asset{{Name: "photocraft-1.0.0-linux-x64.deb",
		DownloadURL: release.DownloadURL(photocraft.Repo, "v1.0.0", "photocraft-1.0.0-linux-x64.deb"),
		Platform:    release.ParseAsset("photocraft-1.0.0-linux-x64.deb")}}
	return map[string]string{
		"with a download_url in another repository": strings.Replace(encJSON(t, good), "photocraft/releases/download", "evilcraft/releases/download", 1),
		"of the wrong shape":                        `{"tag":"v1","assets":{}}`,
		"with prerelease as text":                   `{"tag":"v1","prerelease":"yes"}`,
		"with a size as text":                       `{"tag":"v1","assets":[{"size_bytes":"7"}]}`,
		"with a fractional size":                    `{"tag":"v1","assets":[{"size_bytes":7.5}]}`,
		"with a size in exponent form":              `{"tag":"v1","assets":[{"size_bytes":1e3}]}`,
		"with a size beyond int64":                  `{"tag":"v1","assets":[{"size_bytes":9223372036854775808}]}`,
		"with a bad platform":                       `{"tag":"v1","assets":[{"platform":{"os":1}}]}`,
		"with a platform as an array":               `{"tag":"v1","assets":[{"platform":[]}]}`,
		"with 30 February":                          `{"tag":"v1","published_at":"2026-02-30T00:00:00Z"}`,
		"at 24:00":                                  `{"tag":"v1","published_at":"2026-10-08T24:00:00Z"}`,
		"at second 60":                              `{"tag":"v1","published_at":"2026-10-08T23:59:60Z"}`,
		"with an escaped time":                      `{"tag":"v1","published_at":"2026\u002d10-08T12:00:00Z"}`,
	}
}

func leapDay(r *release.Release) *release.Release {
	l := *r
	l.PublishedAt = release.NewTime(time.Date(2024, 2, 29, 0, 0, 0, 0, time.UTC))
	return &l
}

// TestReleaseMemo: the same bytes of one repository decode once; other
// bytes, or another repository's, are decoded afresh.
func TestReleaseMemo(t *testing.T) {
	t.Parallel()
	v1, v2 := encoded(t, rel("v1.0.0")), encoded(t, rel("v2.0.0"))
	var memo releaseMemo
	first := must(memo.decode(photocraft, v1))(t)
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

func encoded(t testing.TB, r *release.Release) string {
	t.Helper()
	return must(encodeRelease(r))(t)
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
		if again, err := DecodeApp(photocraft, hashOf(writes...), now); err != nil || !sameEntry(again, e) {
			t.Fatalf("written back and read again: got %s, want %s", fmtEntry(again), fmtEntry(e))
		}
	})
}

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
