package store

import (
	"context"
	"reflect"
	"testing"
	"time"

	"github.com/storytold/craft-releases/pkg/release"
	"github.com/storytold/craft-releases/test/redistest"
)

// testMeta is one of each list entry, as a poller would publish them.
func testMeta() release.Bulletin {
	renamed := release.NewTime(time.Date(2026, 9, 1, 0, 0, 0, 0, time.UTC))
	link := "https://status.example.com/incidents/1"
	return release.Bulletin{
		AppRenames: []release.AppRename{{OldName: "PdfCraft", OldNameLower: "pdfcraft", NewName: "DocuCraft",
			NewNameLower: "docucraft", Description: "PdfCraft is now DocuCraft", RenamedAt: renamed}},
		RepoRenames: []release.RepoRename{{OldName: "storytold/pdfcraft", NewName: "storytold/docucraft", RenamedAt: renamed}},
		Notices: release.Notices{
			Announcements: []release.Announcement{{Title: "New: DocuCraft", Body: "Say hello.", CreatedAt: renamed}},
			Alerts:        []release.Alert{{Title: "Maintenance", Body: "Tonight 22:00 UTC.", MaybeWebLink: &link, CreatedAt: renamed}},
		},
	}
}

// sameMeta compares two metas by the lists PutMeta would write, so that a
// nil list and an empty one are the same.
func sameMeta(t testing.TB, got, want release.Bulletin) bool {
	t.Helper()
	g, err := encodeMeta(got)
	if err != nil {
		t.Fatal(err)
	}
	w, err := encodeMeta(want)
	if err != nil {
		t.Fatal(err)
	}
	return reflect.DeepEqual(g, w)
}

func TestDecodeMeta(t *testing.T) {
	t.Parallel()
	noon := at("12:00")
	full, err := New(nil, "poller-a", testApps).metaWrite(testMeta(), noon)
	if err != nil {
		t.Fatal(err)
	}
	written := map[string]string{}
	for i := 0; i+1 < len(full.pairs); i += 2 {
		written[full.pairs[i]] = full.pairs[i+1]
	}
	with := func(kv ...string) map[string]string {
		h := map[string]string{"v": "1", "read_ms": ms(noon), "app_renames": "[]", "repo_renames": "[]",
			"announcements": "[]", "alerts": "[]"}
		for i := 0; i+1 < len(kv); i += 2 {
			if kv[i+1] == "<del>" {
				delete(h, kv[i])
			} else {
				h[kv[i]] = kv[i+1]
			}
		}
		return h
	}
	empty := release.Bulletin{AppRenames: []release.AppRename{}, RepoRenames: []release.RepoRename{},
		Notices: release.Notices{Announcements: []release.Announcement{}, Alerts: []release.Alert{}}}
	tests := []struct {
		name   string
		h      map[string]string
		want   release.Bulletin
		wantAt time.Time // zero: reads as absent
	}{
		{"as PutMeta writes it", written, testMeta(), noon},
		{"empty lists", with(), empty, noon},
		{"whitespace before a list", with("alerts", " \n[]"), empty, noon},
		{"null entries read as zero entries", with("alerts", "[null]"),
			release.Bulletin{AppRenames: empty.AppRenames, RepoRenames: empty.RepoRenames,
				Notices: release.Notices{Announcements: empty.Notices.Announcements, Alerts: []release.Alert{{}}}}, noon},
		{"no key", nil, release.Bulletin{}, time.Time{}},
		{"another format", with("v", "2"), release.Bulletin{}, time.Time{}},
		{"no read_ms", with("read_ms", "<del>"), release.Bulletin{}, time.Time{}},
		{"read_ms not a number", with("read_ms", "soon"), release.Bulletin{}, time.Time{}},
		{"read_ms zero", with("read_ms", "0"), release.Bulletin{}, time.Time{}},
		{"a list missing", with("repo_renames", "<del>"), release.Bulletin{}, time.Time{}},
		{"a list that is null", with("app_renames", "null"), release.Bulletin{}, time.Time{}},
		{"a list that is an object", with("announcements", "{}"), release.Bulletin{}, time.Time{}},
		{"a list cut short", with("alerts", `[{"title":"x"`), release.Bulletin{}, time.Time{}},
		{"an entry of the wrong type", with("alerts", `[{"title":1}]`), release.Bulletin{}, time.Time{}},
		{"an entry with a bad time", with("announcements", `[{"title":"x","created_at":"yesterday"}]`), release.Bulletin{}, time.Time{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, gotAt := DecodeMeta(tt.h)
			if !gotAt.Equal(tt.wantAt) {
				t.Errorf("time = %v, want %v", gotAt, tt.wantAt)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("meta:\n got %+v\nwant %+v", got, tt.want)
			}
		})
	}
}

// TestMetaSequence is the guarded write of the meta hash on both paths: an
// older read never overwrites a newer one.
func TestMetaSequence(t *testing.T) {
	t.Parallel()
	older := testMeta()
	older.Notices.Alerts = nil
	for _, p := range paths {
		t.Run(p.name, func(t *testing.T) {
			srv := redistest.Start(t)
			a := newAdmin(t, srv)
			s := newStore(t, p.url(t, srv))
			ctx := context.Background()
			steps := []struct {
				name   string
				meta   release.Bulletin
				at     time.Time
				want   bool
				after  release.Bulletin
				afterT time.Time
			}{
				{"read at 12:02 written", testMeta(), at("12:02"), true, testMeta(), at("12:02")},
				{"read at 12:01 refused", older, at("12:01"), false, testMeta(), at("12:02")},
				{"read at 12:02 again written", older, at("12:02"), true, older, at("12:02")},
				{"read at 12:03 written", testMeta(), at("12:03"), true, testMeta(), at("12:03")},
				{"empty read at 12:04 clears the lists", release.Bulletin{}, at("12:04"), true, release.Bulletin{}, at("12:04")},
			}
			for _, st := range steps {
				got, err := s.PutMeta(ctx, st.meta, st.at)
				if err != nil {
					t.Fatalf("%s: %v", st.name, err)
				}
				if got != st.want {
					t.Errorf("%s: written = %v, want %v", st.name, got, st.want)
				}
				raw := a.hgetall(MetaKey)
				m, readAt := DecodeMeta(raw)
				if !readAt.Equal(st.afterT) || !sameMeta(t, m, st.after) {
					t.Errorf("%s: hash reads %v %+v, want %v %+v", st.name, readAt, m, st.afterT, st.after)
				}
				if raw["by"] != "poller-a" {
					t.Errorf("%s: by = %q, want poller-a", st.name, raw["by"])
				}
				if ttl := a.pttl(MetaKey); ttl < 6*24*time.Hour {
					t.Errorf("%s: TTL = %v, want over 6 days", st.name, ttl)
				}
			}
			if got := s.Mode(); got != p.mode {
				t.Errorf("Mode() = %v, want %v", got, p.mode)
			}
		})
	}
}

func TestPutMetaWithoutTime(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	a := newAdmin(t, srv)
	s := newStore(t, srv.URL())
	if got, err := s.PutMeta(context.Background(), testMeta(), time.Time{}); err == nil || got {
		t.Errorf("PutMeta with a zero time = %v, %v; want false and an error", got, err)
	}
	if raw := a.hgetall(MetaKey); len(raw) != 0 {
		t.Errorf("hash is %v, want nothing written", raw)
	}
}

// FuzzDecodeMeta feeds DecodeMeta hashes from anyone: it must not panic, a
// hash it reads has lists, and writing it back reads the same.
func FuzzDecodeMeta(f *testing.F) {
	full, err := New(nil, "fuzz", testApps).metaWrite(testMeta(), at("12:00"))
	if err != nil {
		f.Fatal(err)
	}
	h := map[string]string{}
	for i := 0; i+1 < len(full.pairs); i += 2 {
		h[full.pairs[i]] = full.pairs[i+1]
	}
	f.Add(h["v"], h["read_ms"], h["app_renames"], h["repo_renames"], h["announcements"], h["alerts"])
	f.Add("1", "1", "[]", "[]", "[]", "[]")
	f.Add("1", "soon", "null", "{}", "[null]", `[{"title":1}]`)

	s := New(nil, "fuzz", testApps)
	f.Fuzz(func(t *testing.T, v, readMS, apps, repos, announcements, alerts string) {
		m, readAt := DecodeMeta(map[string]string{"v": v, "read_ms": readMS, "app_renames": apps,
			"repo_renames": repos, "announcements": announcements, "alerts": alerts})
		if readAt.IsZero() {
			if !reflect.DeepEqual(m, release.Bulletin{}) {
				t.Fatalf("absent, yet %+v", m)
			}
			return
		}
		if v != "1" || readAt.UnixMilli() <= 0 || readAt.Location() != time.UTC {
			t.Fatalf("version %q read at %v", v, readAt)
		}
		if m.AppRenames == nil || m.RepoRenames == nil || m.Notices.Announcements == nil || m.Notices.Alerts == nil {
			t.Fatalf("a readable meta with a nil list: %+v", m)
		}
		w, err := s.metaWrite(m, readAt)
		if err != nil {
			t.Fatalf("encode %+v: %v", m, err)
		}
		back := map[string]string{}
		for i := 0; i+1 < len(w.pairs); i += 2 {
			back[w.pairs[i]] = w.pairs[i+1]
		}
		again, againAt := DecodeMeta(back)
		if !againAt.Equal(readAt) || !sameMeta(t, again, m) {
			t.Fatalf("written back and read again: got %v %+v, want %v %+v", againAt, again, readAt, m)
		}
	})
}
