package store

import (
	"context"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/storytold/craft-releases/pkg/release"
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
	g := must(encodeMeta(got))(t)
	w := must(encodeMeta(want))(t)
	return reflect.DeepEqual(g, w)
}

func TestDecodeMeta(t *testing.T) {
	t.Parallel()
	noon := at("12:00")
	full := must(New(nil, "poller-a", testApps).metaWrite(testMeta(), noon))(t)
	lists := func(kv ...string) map[string]string {
		return with(map[string]string{"v": "1", "read_ms": ms(noon), "app_renames": "[]", "repo_renames": "[]", "announcements": "[]", "alerts": "[]"}, kv...)
	}
	empty := release.Bulletin{AppRenames: []release.AppRename{}, RepoRenames: []release.RepoRename{},
		Notices: release.Notices{Announcements: []release.Announcement{}, Alerts: []release.Alert{}}, Decisions: map[string]release.Decisions{}}
	nullAlert, decided := empty, func(percent int) release.Bulletin {
		b := empty
		b.Decisions = map[string]release.Decisions{"photocraft": {Rollout: &release.Rollout{Tag: "v0.6.0", Percent: percent}}}
		return b
	}
	nullAlert.Notices.Alerts = []release.Alert{{}}
	readable := []struct {
		name string
		h    map[string]string
		want release.Bulletin
	}{
		{"as PutMeta writes it", hashOf(full), testMeta()},
		{"empty lists", lists(), empty},
		{"whitespace before a list", lists("alerts", " \n[]"), empty},
		{"a tab before a list", lists("alerts", "\t[]"), empty},
		{"null entries read as zero entries", lists("alerts", "[null]"), nullAlert},
		{"no decisions, as an older poller writes it", lists("decisions", "<del>"), empty},
		{"no decision", lists("decisions", "{}"), empty},
		{"a rollout", lists("decisions", `{"photocraft":{"rollout":{"tag":"v0.6.0","percent":10}}}`), decided(10)},
		{"a halted rollout", lists("decisions", `{"photocraft":{"rollout":{"tag":"v0.6.0","percent":0}}}`), decided(0)},
		{"a complete rollout", lists("decisions", `{"photocraft":{"rollout":{"tag":"v0.6.0","percent":100}}}`), decided(100)},
	}
	for _, tt := range readable {
		if got, gotAt := DecodeMeta(tt.h); !gotAt.Equal(noon) || !reflect.DeepEqual(got, tt.want) {
			t.Errorf("%s: read at %v: %+v; want %v: %+v", tt.name, gotAt, got, noon, tt.want)
		}
	}
	// A hash with one field a poller does not write (decisions that
	// Decisions.Verify refuses too) reads as absent: a pod keeps what it
	// had and the next poller's write replaces it.
	rollout := func(r string) string { return `{"photocraft":{"rollout":` + r + `}}` }
	unreadable := map[string]map[string]string{
		"decisions that are null":                lists("decisions", "null"),
		"decisions that are an array":            lists("decisions", "[]"),
		"decisions that are empty":               lists("decisions", ""),
		"decisions cut short":                    lists("decisions", `{"photocraft":{"rollout":{"tag":"v0.6.0"`),
		"a percent over 100":                     lists("decisions", rollout(`{"tag":"v0.6.0","percent":101}`)),
		"a negative percent":                     lists("decisions", rollout(`{"tag":"v0.6.0","percent":-1}`)),
		"a fractional percent":                   lists("decisions", rollout(`{"tag":"v0.6.0","percent":10.5}`)),
		"a percent as text":                      lists("decisions", rollout(`{"tag":"v0.6.0","percent":"10"}`)),
		"a rollout without a tag":                lists("decisions", rollout(`{"tag":"","percent":10}`)),
		"a tag that is no git ref":               lists("decisions", rollout(`{"tag":"v1..2","percent":10}`)),
		"an unknown key":                         lists("decisions", rollout(`{"tag":"v0.6.0","percent":10,"by":"x"}`)),
		"an app key in capitals":                 lists("decisions", `{"PhotoCraft":{"rollout":{"tag":"v0.6.0","percent":10}}}`),
		"an empty app key":                       lists("decisions", `{"":{"rollout":{"tag":"v0.6.0","percent":10}}}`),
		"an app deciding nothing":                lists("decisions", `{"photocraft":{}}`),
		"a key in another case":                  lists("decisions", `{"photocraft":{"Rollout":{"tag":"v0.6.0","percent":10}}}`),
		"a repeated app":                         lists("decisions", `{"photocraft":{"rollout":{"tag":"v0.6.0","percent":100}},"photocraft":{"rollout":{"tag":"v0.6.0","percent":1}}}`),
		"white space":                            lists("decisions", `{ "photocraft":{"rollout":{"tag":"v0.6.0","percent":10}}}`),
		"a withdrawal without a reason":          lists("decisions", `{"photocraft":{"withdrawn":[{"tag":"v0.5.1","reason":""}]}}`),
		"a tag withdrawn twice":                  lists("decisions", `{"photocraft":{"withdrawn":[{"tag":"v0.5.1","reason":"x"},{"tag":"v0.5.1","reason":"y"}]}}`),
		"an empty withdrawn list":                lists("decisions", `{"photocraft":{"withdrawn":[]}}`),
		"a reason with a right-to-left override": lists("decisions", `{"photocraft":{"withdrawn":[{"tag":"v0.5.1","reason":"`+"\u202e"+`x"}]}}`),
		"a minimum that is not SemVer":           lists("decisions", `{"photocraft":{"minimum":{"version":"v1.2","reason":"x"}}}`),
		"a minimum without a reason":             lists("decisions", `{"photocraft":{"minimum":{"version":"1.2.0","reason":" "}}}`),
		"no key":                                 nil,
		"another format":                         lists("v", "2"),
		"no read_ms":                             lists("read_ms", "<del>"),
		"read_ms not a number":                   lists("read_ms", "soon"),
		"read_ms zero":                           lists("read_ms", "0"),
		"a list missing":                         lists("repo_renames", "<del>"),
		"a list that is null":                    lists("app_renames", "null"),
		"a list that is an object":               lists("announcements", "{}"),
		"a list cut short":                       lists("alerts", `[{"title":"x"`),
		"an entry of the wrong type":             lists("alerts", `[{"title":1}]`),
		"a field of the wrong type":              lists("announcements", `[{"title":true}]`),
		"a list of numbers":                      lists("alerts", "[1]"),
		"a list that does not parse":             lists("app_renames", "[{"),
		"another list that is an object":         lists("repo_renames", "{}"),
		"an entry with a bad time":               lists("announcements", `[{"title":"x","created_at":"yesterday"}]`),
	}
	for name, h := range unreadable {
		if got, gotAt := DecodeMeta(h); !gotAt.IsZero() || !reflect.DeepEqual(got, release.Bulletin{}) {
			t.Errorf("%s: read at %v: %+v; want absent", name, gotAt, got)
		}
	}
}

// TestMetaSequence is the guarded write of the meta hash on both paths: an
// older read never overwrites a newer one, and decisions no reader would
// read (over release.MaxEncoded) are not written.
func TestMetaSequence(t *testing.T) {
	t.Parallel()
	older := testMeta()
	older.Notices.Alerts = nil
	big := testMeta()
	big.Decisions = map[string]release.Decisions{}
	for i := range 200 {
		var d release.Decisions
		for j := range release.MaxWithdrawn {
			d.Withdrawn = append(d.Withdrawn, release.Withdrawal{Tag: fmt.Sprintf("v1.0.%d", j), Reason: strings.Repeat("x", release.MaxReason)})
		}
		big.Decisions[fmt.Sprintf("app%d", i)] = d
	}
	steps := []struct {
		name   string
		meta   release.Bulletin
		at     time.Time
		want   bool
		after  release.Bulletin
		afterT time.Time
		err    string // in the error; "" for none
	}{
		{"read at 12:02 written", testMeta(), at("12:02"), true, testMeta(), at("12:02"), ""},
		{"read at 12:01 refused", older, at("12:01"), false, testMeta(), at("12:02"), ""},
		{"read at 12:02 again written", older, at("12:02"), true, older, at("12:02"), ""},
		{"read at 12:03 written", testMeta(), at("12:03"), true, testMeta(), at("12:03"), ""},
		{"decisions over the bound refused", big, at("12:04"), false, testMeta(), at("12:03"), "over 1048576"},
		{"empty read at 12:04 clears the lists", release.Bulletin{}, at("12:04"), true, release.Bulletin{}, at("12:04"), ""},
	}
	eachPath(t, func(t *testing.T, o on) {
		for _, st := range steps {
			if got, err := o.s.PutMeta(context.Background(), st.meta, st.at); got != st.want || (err == nil) != (st.err == "") || err != nil && !strings.Contains(err.Error(), st.err) {
				t.Errorf("%s: written = %v, %v; want %v, error %q", st.name, got, err, st.want, st.err)
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

// FuzzDecodeMeta feeds DecodeMeta hashes from anyone: it must not panic, a
// hash it reads has lists, and writing it back reads the same.
func FuzzDecodeMeta(f *testing.F) {
	full, err := New(nil, "fuzz", testApps).metaWrite(testMeta(), at("12:00"))
	if err != nil {
		f.Fatal(err)
	}
	h := hashOf(full)
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
		again, againAt := DecodeMeta(hashOf(w))
		if !againAt.Equal(readAt) || !sameMeta(t, again, m) {
			t.Fatalf("written back and read again: got %v %+v, want %v %+v", againAt, again, readAt, m)
		}
	})
}
