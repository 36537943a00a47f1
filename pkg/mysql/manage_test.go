package mysql_test

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/storytold/craft-releases/pkg/mysql"
)

// TestAddRefusesBadInput: Add checks the row (one case of each kind: the
// rules are TestNoticeValidate's and TestRenameValidate's) and refuses an end
// that is not in the future; nothing refused is stored.
func TestAddRefusesBadInput(t *testing.T) {
	db := migrated(t, nil)
	ctx := context.Background()
	tests := []struct {
		name string
		n    *mysql.Notice // or
		r    *mysql.Rename
		want string
	}{
		{"a notice without a title", &mysql.Notice{Kind: mysql.KindAlert}, nil, "title is missing"},
		{"a notice that ended already", &mysql.Notice{Kind: mysql.KindAlert, Title: "x", EndsAt: noon.Add(-time.Second)}, nil, "end 2026-10-10T11:59:59Z is not in the future (now is 2026-10-10T12:00:00Z)"},
		{"a notice ending now", &mysql.Notice{Kind: mysql.KindAlert, Title: "x", EndsAt: noon}, nil, "is not in the future"},
		{"a rename without a new name", nil, &mysql.Rename{Kind: mysql.KindAppRename, OldName: "a"}, "new name is missing"},
		{"a rename that ended already", nil, &mysql.Rename{Kind: mysql.KindRepoRename, OldName: "o/a", NewName: "o/b", EndsAt: noon.Add(-time.Hour)}, "is not in the future"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var err error
			if tt.n != nil {
				_, err = db.AddNotice(ctx, *tt.n, noon)
			} else {
				_, err = db.AddRename(ctx, *tt.r, noon)
			}
			checkProblems(t, err, []string{tt.want})
		})
	}
	notices, err := db.Notices(ctx)
	must(t, err)
	renames, err := db.Renames(ctx)
	must(t, err)
	if len(notices)+len(renames) != 0 {
		t.Errorf("refused input was stored: %+v %+v", notices, renames)
	}
}

func TestAddAndList(t *testing.T) {
	db := migrated(t, nil)
	ctx := context.Background()
	// Times are kept to the millisecond, in UTC, whatever the caller's zone.
	paris := time.FixedZone("CEST", 2*3600)
	now := time.Date(2026, 10, 10, 14, 0, 0, 123456789, paris)
	n := addNotice(t, db, mysql.Notice{Kind: mysql.KindAlert, Title: "T", Body: "B", Link: "https://a.example/x",
		StartsAt: now.Add(time.Hour), EndsAt: now.Add(2 * time.Hour)}, now)
	r := addRename(t, db, mysql.Rename{Kind: mysql.KindAppRename, OldName: "PdfCraft", NewName: "DocuCraft",
		Description: "D", RenamedAt: now.Add(-time.Hour)}, now)
	want := mysql.Notice{ID: 1, Kind: mysql.KindAlert, Title: "T", Body: "B", Link: "https://a.example/x",
		StartsAt: time.Date(2026, 10, 10, 13, 0, 0, 123e6, time.UTC), EndsAt: time.Date(2026, 10, 10, 14, 0, 0, 123e6, time.UTC),
		CreatedAt: time.Date(2026, 10, 10, 12, 0, 0, 123e6, time.UTC)}
	if n != want {
		t.Errorf("AddNotice returned %+v, want %+v", n, want)
	}
	notices, err := db.Notices(ctx)
	must(t, err)
	if len(notices) != 1 || notices[0] != want {
		t.Errorf("Notices() = %+v, want [%+v]", notices, want)
	}
	renames, err := db.Renames(ctx)
	must(t, err)
	if len(renames) != 1 || renames[0] != r || r.Ref() != "app/1" {
		t.Errorf("Renames() = %+v, want [%+v] (app/1)", renames, r)
	}
}

func TestEnd(t *testing.T) {
	db := migrated(t, nil)
	ctx := context.Background()
	h := time.Hour
	liveOne := addNotice(t, db, mysql.Notice{Kind: mysql.KindAlert, Title: "live"}, noon.Add(-h))
	scheduled := addNotice(t, db, mysql.Notice{Kind: mysql.KindAnnouncement, Title: "scheduled", StartsAt: noon.Add(h)}, noon.Add(-h))
	ended := addNotice(t, db, mysql.Notice{Kind: mysql.KindAlert, Title: "ended", EndsAt: noon.Add(-h / 2)}, noon.Add(-h))
	rename := addRename(t, db, mysql.Rename{Kind: mysql.KindRepoRename, OldName: "o/a", NewName: "o/b"}, noon.Add(-h))

	tests := []struct {
		name    string
		end     func() (bool, error)
		want    bool
		wantErr error
	}{
		{"a live notice", func() (bool, error) { return db.EndNotice(ctx, mysql.KindAlert, liveOne.ID, noon) }, true, nil},
		{"the same notice again", func() (bool, error) { return db.EndNotice(ctx, mysql.KindAlert, liveOne.ID, noon) }, false, nil},
		{"a notice that had ended", func() (bool, error) { return db.EndNotice(ctx, mysql.KindAlert, ended.ID, noon) }, false, nil},
		{"a scheduled notice", func() (bool, error) { return db.EndNotice(ctx, mysql.KindAnnouncement, scheduled.ID, noon) }, true, nil},
		{"a notice of the other kind", func() (bool, error) { return db.EndNotice(ctx, mysql.KindAnnouncement, 99, noon) }, false, mysql.ErrNotFound},
		{"a rename", func() (bool, error) { return db.EndRename(ctx, mysql.KindRepoRename, rename.ID, noon) }, true, nil},
		{"no such rename", func() (bool, error) { return db.EndRename(ctx, mysql.KindAppRename, rename.ID, noon) }, false, mysql.ErrNotFound},
	}
	for _, tt := range tests {
		got, err := tt.end()
		if got != tt.want || !errors.Is(err, tt.wantErr) {
			t.Errorf("%s: got %v, %v; want %v, %v", tt.name, got, err, tt.want, tt.wantErr)
		}
	}

	// Nothing that was ended is live, now or later.
	for _, at := range []time.Time{noon, noon.Add(2 * h)} {
		m, _, err := db.Live(ctx, at)
		must(t, err)
		if got := titles(m); len(got) != 0 {
			t.Errorf("live at %v after ending everything: %q", at, got)
		}
	}
	notices, err := db.Notices(ctx)
	must(t, err)
	var states []string
	for _, n := range notices {
		states = append(states, n.Ref()+" "+n.State(noon)+" "+n.EndsAt.Format("15:04"))
	}
	want := []string{"announcement/1 ended 13:00", "alert/1 ended 12:00", "alert/2 ended 11:30"}
	if !slices.Equal(states, want) {
		t.Errorf("notices after ending: %q, want %q", states, want)
	}
}
