package store

import (
	"context"
	"fmt"
	"reflect"
	"strings"
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
		Decisions: map[string]release.Decisions{
			"photocraft": {Rollout: &release.Rollout{Tag: "v0.6.0", Percent: 10},
				Withdrawn: []release.Withdrawal{{Tag: "v0.5.1", Reason: "crashes at start\non macOS"}}},
			"vectorcraft": {Minimum: &release.Minimum{Version: "1.2.0", Reason: "the old format is gone"}},
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
	lists := func(kv ...string) map[string]string {
		return with(map[string]string{"v": "1", "read_ms": ms(noon), "app_renames": "[]", "repo_renames": "[]",
			"announcements": "[]", "alerts": "[]"}, kv...)
	}
	none := map[string]release.Decisions{}
	empty := release.Bulletin{AppRenames: []release.AppRename{}, RepoRenames: []release.RepoRename{},
		Notices: release.Notices{Announcements: []release.Announcement{}, Alerts: []release.Alert{}}, Decisions: none}
	decided := func(d map[string]release.Decisions) release.Bulletin {
		b := empty
		b.Decisions = d
		return b
	}
	rollout := func(percent int) map[string]release.Decisions {
		return map[string]release.Decisions{"photocraft": {Rollout: &release.Rollout{Tag: "v0.6.0", Percent: percent}}}
	}
	tests := []struct {
		name   string
		h      map[string]string
		want   release.Bulletin
		wantAt time.Time // zero: reads as absent
	}{
		{"as PutMeta writes it", written, testMeta(), noon},
		{"empty lists", lists(), empty, noon},
		{"whitespace before a list", lists("alerts", " \n[]"), empty, noon},
		{"a tab before a list", lists("alerts", "\t[]"), empty, noon},
		{"null entries read as zero entries", lists("alerts", "[null]"),
			release.Bulletin{AppRenames: empty.AppRenames, RepoRenames: empty.RepoRenames,
				Notices: release.Notices{Announcements: empty.Notices.Announcements, Alerts: []release.Alert{{}}}, Decisions: none}, noon},
		{"no decisions, as an older poller writes it", lists("decisions", "<del>"), empty, noon},
		{"no decision", lists("decisions", "{}"), empty, noon},
		{"a rollout", lists("decisions", `{"photocraft":{"rollout":{"tag":"v0.6.0","percent":10}}}`), decided(rollout(10)), noon},
		{"a halted rollout", lists("decisions", `{"photocraft":{"rollout":{"tag":"v0.6.0","percent":0}}}`), decided(rollout(0)), noon},
		{"a complete rollout", lists("decisions", `{"photocraft":{"rollout":{"tag":"v0.6.0","percent":100}}}`), decided(rollout(100)), noon},
		// Hostile decisions: the whole hash reads as unreadable, so a pod
		// keeps what it had and the next poller's write replaces it.
		{"decisions that are null", lists("decisions", "null"), release.Bulletin{}, time.Time{}},
		{"decisions that are an array", lists("decisions", "[]"), release.Bulletin{}, time.Time{}},
		{"decisions that are empty", lists("decisions", ""), release.Bulletin{}, time.Time{}},
		{"decisions cut short", lists("decisions", `{"photocraft":{"rollout":{"tag":"v0.6.0"`), release.Bulletin{}, time.Time{}},
		{"a percent over 100", lists("decisions", `{"photocraft":{"rollout":{"tag":"v0.6.0","percent":101}}}`), release.Bulletin{}, time.Time{}},
		{"a negative percent", lists("decisions", `{"photocraft":{"rollout":{"tag":"v0.6.0","percent":-1}}}`), release.Bulletin{}, time.Time{}},
		{"a fractional percent", lists("decisions", `{"photocraft":{"rollout":{"tag":"v0.6.0","percent":10.5}}}`), release.Bulletin{}, time.Time{}},
		{"a percent as text", lists("decisions", `{"photocraft":{"rollout":{"tag":"v0.6.0","percent":"10"}}}`), release.Bulletin{}, time.Time{}},
		{"a rollout without a tag", lists("decisions", `{"photocraft":{"rollout":{"tag":"","percent":10}}}`), release.Bulletin{}, time.Time{}},
		{"a tag that is no git ref", lists("decisions", `{"photocraft":{"rollout":{"tag":"v1..2","percent":10}}}`), release.Bulletin{}, time.Time{}},
		{"an app key in capitals", lists("decisions", `{"PhotoCraft":{"rollout":{"tag":"v0.6.0","percent":10}}}`), release.Bulletin{}, time.Time{}},
		{"an empty app key", lists("decisions", `{"":{"rollout":{"tag":"v0.6.0","percent":10}}}`), release.Bulletin{}, time.Time{}},
		{"an app deciding nothing", lists("decisions", `{"photocraft":{}}`), release.Bulletin{}, time.Time{}},
		{"an unknown key", lists("decisions", `{"photocraft":{"rollout":{"tag":"v0.6.0","percent":10,"by":"x"}}}`), release.Bulletin{}, time.Time{}},
		{"a key in another case", lists("decisions", `{"photocraft":{"Rollout":{"tag":"v0.6.0","percent":10}}}`), release.Bulletin{}, time.Time{}},
		{"a repeated app", lists("decisions", `{"photocraft":{"rollout":{"tag":"v0.6.0","percent":100}},"photocraft":{"rollout":{"tag":"v0.6.0","percent":1}}}`),
			release.Bulletin{}, time.Time{}},
		{"white space", lists("decisions", `{ "photocraft":{"rollout":{"tag":"v0.6.0","percent":10}}}`), release.Bulletin{}, time.Time{}},
		{"a withdrawal without a reason", lists("decisions", `{"photocraft":{"withdrawn":[{"tag":"v0.5.1","reason":""}]}}`), release.Bulletin{}, time.Time{}},
		{"a tag withdrawn twice", lists("decisions", `{"photocraft":{"withdrawn":[{"tag":"v0.5.1","reason":"x"},{"tag":"v0.5.1","reason":"y"}]}}`),
			release.Bulletin{}, time.Time{}},
		{"an empty withdrawn list", lists("decisions", `{"photocraft":{"withdrawn":[]}}`), release.Bulletin{}, time.Time{}},
		{"a reason with a right-to-left override", lists("decisions", `{"photocraft":{"withdrawn":[{"tag":"v0.5.1","reason":"`+"\u202e"+`x"}]}}`),
			release.Bulletin{}, time.Time{}},
		{"a minimum that is not SemVer", lists("decisions", `{"photocraft":{"minimum":{"version":"v1.2","reason":"x"}}}`), release.Bulletin{}, time.Time{}},
		{"a minimum without a reason", lists("decisions", `{"photocraft":{"minimum":{"version":"1.2.0","reason":" "}}}`), release.Bulletin{}, time.Time{}},
		{"no key", nil, release.Bulletin{}, time.Time{}},
		{"another format", lists("v", "2"), release.Bulletin{}, time.Time{}},
		{"no read_ms", lists("read_ms", "<del>"), release.Bulletin{}, time.Time{}},
		{"read_ms not a number", lists("read_ms", "soon"), release.Bulletin{}, time.Time{}},
		{"read_ms zero", lists("read_ms", "0"), release.Bulletin{}, time.Time{}},
		{"a list missing", lists("repo_renames", "<del>"), release.Bulletin{}, time.Time{}},
		{"a list that is null", lists("app_renames", "null"), release.Bulletin{}, time.Time{}},
		{"a list that is an object", lists("announcements", "{}"), release.Bulletin{}, time.Time{}},
		{"a list cut short", lists("alerts", `[{"title":"x"`), release.Bulletin{}, time.Time{}},
		{"an entry of the wrong type", lists("alerts", `[{"title":1}]`), release.Bulletin{}, time.Time{}},
		{"a field of the wrong type", lists("announcements", `[{"title":true}]`), release.Bulletin{}, time.Time{}},
		{"a list of numbers", lists("alerts", "[1]"), release.Bulletin{}, time.Time{}},
		{"a list that does not parse", lists("app_renames", "[{"), release.Bulletin{}, time.Time{}},
		{"a list that is an object", lists("repo_renames", "{}"), release.Bulletin{}, time.Time{}},
		{"an entry with a bad time", lists("announcements", `[{"title":"x","created_at":"yesterday"}]`), release.Bulletin{}, time.Time{}},
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
	eachPath(t, func(t *testing.T, o on) {
		for _, st := range steps {
			if got, err := o.s.PutMeta(context.Background(), st.meta, st.at); err != nil || got != st.want {
				t.Errorf("%s: written = %v, %v; want %v", st.name, got, err, st.want)
			}
			raw := o.a.hgetall(MetaKey)
			if m, readAt := DecodeMeta(raw); !readAt.Equal(st.afterT) || !sameMeta(t, m, st.after) {
				t.Errorf("%s: hash reads %v %+v, want %v %+v", st.name, readAt, m, st.afterT, st.after)
			}
			if raw["by"] != "poller-a" {
				t.Errorf("%s: by = %q, want poller-a", st.name, raw["by"])
			}
			if ttl := o.a.pttl(MetaKey); ttl < 6*24*time.Hour {
				t.Errorf("%s: TTL = %v, want over 6 days", st.name, ttl)
			}
		}
	})
}

// TestPutMetaDecisionsOverBound: decisions that no reader would read (over
// release.MaxEncoded) are not written; what Redis holds stays.
func TestPutMetaDecisionsOverBound(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	a := newAdmin(t, srv)
	s := newStore(t, srv.URL())
	ctx := context.Background()
	if _, err := s.PutMeta(ctx, testMeta(), at("12:00")); err != nil {
		t.Fatal(err)
	}
	big := testMeta()
	big.Decisions = map[string]release.Decisions{}
	for i := range 200 {
		var d release.Decisions
		for j := range release.MaxWithdrawn {
			d.Withdrawn = append(d.Withdrawn, release.Withdrawal{Tag: fmt.Sprintf("v1.0.%d", j), Reason: strings.Repeat("x", release.MaxReason)})
		}
		big.Decisions[fmt.Sprintf("app%d", i)] = d
	}
	if got, err := s.PutMeta(ctx, big, at("12:01")); err == nil || got || !strings.Contains(err.Error(), "over 1048576") {
		t.Errorf("PutMeta of decisions over the bound = %v, %v; want false and an error saying so", got, err)
	}
	if m, readAt := DecodeMeta(a.hgetall(MetaKey)); !readAt.Equal(at("12:00")) || !sameMeta(t, m, testMeta()) {
		t.Errorf("after the refused write, read at %v: %+v; want the meta of 12:00", readAt, m)
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
	f.Add(h["v"], h["read_ms"], h["app_renames"], h["repo_renames"], h["announcements"], h["alerts"], h["decisions"])
	f.Add("1", "1", "[]", "[]", "[]", "[]", "{}")
	f.Add("1", "soon", "null", "{}", "[null]", `[{"title":1}]`, `{"a":{"rollout":{"tag":"v1","percent":101}}}`)

	s := New(nil, "fuzz", testApps)
	f.Fuzz(func(t *testing.T, v, readMS, apps, repos, announcements, alerts, decisions string) {
		m, readAt := DecodeMeta(map[string]string{"v": v, "read_ms": readMS, "app_renames": apps,
			"repo_renames": repos, "announcements": announcements, "alerts": alerts, "decisions": decisions})
		if readAt.IsZero() {
			if !reflect.DeepEqual(m, release.Bulletin{}) {
				t.Fatalf("absent, yet %+v", m)
			}
			return
		}
		if v != "1" || readAt.UnixMilli() <= 0 || readAt.Location() != time.UTC {
			t.Fatalf("version %q read at %v", v, readAt)
		}
		if m.AppRenames == nil || m.RepoRenames == nil || m.Notices.Announcements == nil || m.Notices.Alerts == nil || m.Decisions == nil {
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
