package store

import (
	"context"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/storytold/craft-releases/pkg/redis"
	"github.com/storytold/craft-releases/pkg/release"
	"github.com/storytold/craft-releases/test/redistest"
)

// history is photocraft's history entry.
var history = photocraft.HistoryEntry()

// datedRel is rel(tag) published h hours after t0.
func datedRel(tag string, h int) *release.Release {
	r := rel(tag)
	r.PublishedAt = release.NewTime(t0.Add(time.Duration(h) * time.Hour))
	return r
}

// newHistoryStore returns a Store of testApps and photocraft's history
// entry on url.
func newHistoryStore(t testing.TB, url string) *Store {
	t.Helper()
	c, err := redis.OpenURL(url)
	if err != nil {
		t.Fatalf("OpenURL(%q): %v", url, err)
	}
	t.Cleanup(c.Close)
	return New(c, "poller-a", append([]release.App{history}, testApps...))
}

// TestHistoryStored: a history entry's releases and companions are written
// with its fetch and read back; the same fetch's companions written by
// another poller are kept with ours, and each write is told whether it
// changed what is served; on both write paths.
func TestHistoryStored(t *testing.T) {
	srv := redistest.Start(t)
	ctx := context.Background()
	for _, p := range paths {
		t.Run(p.name, func(t *testing.T) {
			srv.MustDo("FLUSHALL")
			s := newHistoryStore(t, p.url(t, srv))
			v3, sigs3 := signed(t, "v3.0.0", "App_3.0.0_amd64.AppImage")
			v3.PublishedAt = release.NewTime(t0.Add(3 * time.Hour))
			v2, sigs2 := signed(t, "v2.0.0", "App_2.0.0_amd64.AppImage")
			v2.PublishedAt = release.NewTime(t0.Add(2 * time.Hour))
			h := release.NewHistory([]*release.Release{v3, v2, datedRel("v1.0.0", 1)})
			e := release.Entry{FetchedAt: at("12:00"), ETag: `"l1"`,
				History: h.WithCompanions(map[string]*release.Companions{"v3.0.0": release.NewCompanions(sigs3)})}
			read := func() release.Entry {
				t.Helper()
				got, _, err := s.LoadApp(ctx, history.Key)
				if err != nil {
					t.Fatal(err)
				}
				return got
			}
			publish := func(e release.Entry, wantChanged bool) {
				t.Helper()
				if ok, changed, err := s.PublishFetch(ctx, history.Key, e); !ok || err != nil || changed != wantChanged {
					t.Fatalf("PublishFetch: written %v, changed %v, %v; want written, changed %v", ok, changed, err, wantChanged)
				}
			}

			publish(e, true)
			got := read()
			if tags := got.History.Tags(); !reflect.DeepEqual(tags, []string{"v3.0.0", "v2.0.0", "v1.0.0"}) || got.Release != nil {
				t.Fatalf("read back: history %q, release %v; want the three and no release", tags, got.Release)
			}
			if c := got.History.CompanionsOf("v3.0.0").Map(); !reflect.DeepEqual(c, sigs3) {
				t.Errorf("v3's companions: got %v, want %v", c, sigs3)
			}
			if !reflect.DeepEqual(got.History.Releases[0], v3) {
				t.Errorf("v3 read back as %+v, want %+v", got.History.Releases[0], v3)
			}
			publish(e, false)

			other := release.Entry{FetchedAt: at("12:00"), ETag: `"l1"`,
				History: h.WithCompanions(map[string]*release.Companions{"v2.0.0": release.NewCompanions(sigs2)})}
			publish(other, true)
			got = read()
			if c3, c2 := got.History.CompanionsOf("v3.0.0").Map(), got.History.CompanionsOf("v2.0.0").Map(); !reflect.DeepEqual(c3, sigs3) || !reflect.DeepEqual(c2, sigs2) {
				t.Errorf("after another poller's companions of the same fetch: v3 %v, v2 %v; want both kept", c3, c2)
			}

			newer := release.Entry{FetchedAt: at("12:30"), ETag: `"l2"`, History: release.NewHistory([]*release.Release{datedRel("v4.0.0", 4), v3})}
			publish(newer, true)
			if got := read(); !reflect.DeepEqual(got.History.Tags(), []string{"v4.0.0", "v3.0.0"}) || got.History.Companions != nil {
				t.Errorf("a newer list: %q with companions %v; want v4, v3 and none", got.History.Tags(), got.History.Companions)
			}
			if ok, err := s.PutFetch(ctx, history.Key, e); ok || err != nil {
				t.Errorf("an older list: written %v, %v; want refused", ok, err)
			}
		})
	}
}

// TestHistoryHostile: a history field that is not what a poller writes for
// the app leaves the entry without a fetch, and history companions that are
// not the kept releases' are dropped, the history kept; each refusal names
// its field. Another entry ignores a history field.
func TestHistoryHostile(t *testing.T) {
	now := t0.Add(time.Hour)
	enc := func(rels ...*release.Release) string {
		var parts []string
		for _, r := range rels {
			b, err := release.Marshal(r)
			if err != nil {
				t.Fatal(err)
			}
			parts = append(parts, string(b))
		}
		return "[" + strings.Join(parts, ",") + "]"
	}
	v2, v1 := datedRel("v2.0.0", 2), datedRel("v1.0.0", 1)
	foreign := datedRel("v3.0.0", 3)
	foreign.Assets = []release.Asset{{Name: "a.msi", DownloadURL: "https://github.com/attacker/photocraft/releases/download/v3.0.0/a.msi",
		Platform: release.ParseAsset("a.msi")}}
	many := make([]*release.Release, 0, release.MaxHistory+1)
	for i := range release.MaxHistory + 1 {
		many = append(many, datedRel("v1.0."+string(rune('a'+i)), 20-i))
	}
	good := enc(v2, v1)
	hash := func(hist string) map[string]string {
		return map[string]string{"v": "1", "fetched_ms": ms(t0), "etag": `"l"`, "release": "null", "history": hist}
	}
	for _, tc := range []struct {
		name, hist string
	}{
		{"not json", "[{"},
		{"an object", `{"tag":"v1.0.0"}`},
		{"null", "null"},
		{"a null release", "[null]"},
		{"out of order", enc(v1, v2)},
		{"a repeated tag", enc(v2, v2)},
		{"undated", enc(rel("v2.0.0"))},
		{"a foreign download url", enc(foreign, v2)},
		{"over MaxHistory", enc(many...)},
		{"spaced", strings.Replace(good, ",", ", ", 1)},
		{"over its bound", "[" + strings.Repeat(" ", maxHistoryField) + "]"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e, err := DecodeApp(history, hash(tc.hist), now)
			if e.Fetched() || e.History != nil {
				t.Errorf("read a fetch: %v", e.History.Tags())
			}
			if err == nil || !strings.HasPrefix(err.Error(), "history: ") {
				t.Errorf("err = %v, want a refusal of the history field", err)
			}
		})
	}

	if e, err := DecodeApp(history, map[string]string{"v": "1", "fetched_ms": ms(t0), "etag": `"l"`, "release": "null"}, now); e.Fetched() || err != nil {
		t.Errorf("no history field: fetched %v, %v; want no fetch, no refusal", e.Fetched(), err)
	}
	if e, err := DecodeApp(history, hash("[]"), now); !e.Fetched() || e.History == nil || len(e.History.Releases) != 0 || err != nil {
		t.Errorf("an empty history: %+v, %v; want a fetch of no releases", e, err)
	}
	if e, err := DecodeApp(photocraft, hash("[1]"), now); !e.Fetched() || e.History != nil || err != nil {
		t.Errorf("photocraft's own entry with a history field: %+v, %v; want a fetch, the field ignored", e, err)
	}

	_, sigs := signed(t, "v1.0.0", "App_1.0.0_amd64.AppImage")
	for _, tc := range []struct {
		name, sigs string
	}{
		{"not an object", `["x"]`},
		{"a tag not in the history", `{"v9.0.0":{}}`},
		{"a companion not the release's", `{"v2.0.0":{"App_1.0.0_amd64.AppImage.sig":` + quote(t, sigs["App_1.0.0_amd64.AppImage.sig"]) + `}}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := hash(good)
			h["history_companions"] = tc.sigs
			e, err := DecodeApp(history, h, now)
			if !reflect.DeepEqual(e.History.Tags(), []string{"v2.0.0", "v1.0.0"}) || e.History.Companions != nil {
				t.Errorf("history %q with companions %v; want it kept without", e.History.Tags(), e.History.Companions)
			}
			if err == nil || !strings.HasPrefix(err.Error(), "history_companions: ") {
				t.Errorf("err = %v, want a refusal of the history_companions field", err)
			}
		})
	}
}

func quote(t testing.TB, s string) string {
	t.Helper()
	b, err := release.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
