package mysql_test

import (
	"context"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/storytold/craft-releases/pkg/mysql"
	"github.com/storytold/craft-releases/pkg/release"
	"github.com/storytold/craft-releases/test/mariadbtest"
)

// titles lists the titles of a meta's notices and the new names of its
// renames, in order, as "kind:text".
func titles(m release.Bulletin) []string {
	var out []string
	for _, r := range m.AppRenames {
		out = append(out, "app:"+r.NewName)
	}
	for _, r := range m.RepoRenames {
		out = append(out, "repo:"+r.NewName)
	}
	for _, a := range m.Notices.Announcements {
		out = append(out, "announcement:"+a.Title)
	}
	for _, a := range m.Notices.Alerts {
		out = append(out, "alert:"+a.Title)
	}
	return out
}

func TestLiveWindows(t *testing.T) {
	db := migrated(t, nil)
	created := noon.Add(-48 * time.Hour)
	h := time.Hour
	for _, n := range []mysql.Notice{
		{Kind: mysql.KindAnnouncement, Title: "open window"},
		{Kind: mysql.KindAnnouncement, Title: "started, no end", StartsAt: noon.Add(-h)},
		{Kind: mysql.KindAnnouncement, Title: "starts exactly now", StartsAt: noon},
		{Kind: mysql.KindAnnouncement, Title: "starts in a millisecond", StartsAt: noon.Add(time.Millisecond)},
		{Kind: mysql.KindAnnouncement, Title: "scheduled", StartsAt: noon.Add(h), EndsAt: noon.Add(2 * h)},
		{Kind: mysql.KindAlert, Title: "inside its window", StartsAt: noon.Add(-h), EndsAt: noon.Add(h)},
		{Kind: mysql.KindAlert, Title: "ends in a millisecond", EndsAt: noon.Add(time.Millisecond)},
		{Kind: mysql.KindAlert, Title: "ends exactly now", EndsAt: noon},
		{Kind: mysql.KindAlert, Title: "ended", StartsAt: noon.Add(-2 * h), EndsAt: noon.Add(-h)},
	} {
		addNotice(t, db, n, created)
	}
	for _, r := range []mysql.Rename{
		{Kind: mysql.KindAppRename, OldName: "PdfCraft", NewName: "DocuCraft"},
		{Kind: mysql.KindAppRename, OldName: "Old", NewName: "Scheduled", StartsAt: noon.Add(h)},
		{Kind: mysql.KindRepoRename, OldName: "storytold/pdfcraft", NewName: "storytold/docucraft", EndsAt: noon.Add(h)},
		{Kind: mysql.KindRepoRename, OldName: "storytold/a", NewName: "storytold/ended", EndsAt: noon.Add(-time.Millisecond)},
	} {
		addRename(t, db, r, created)
	}

	m, skipped, err := db.Live(context.Background(), noon)
	must(t, err)
	want := []string{
		"app:DocuCraft",
		"repo:storytold/docucraft",
		"announcement:open window", "announcement:started, no end", "announcement:starts exactly now",
		"alert:inside its window", "alert:ends in a millisecond",
	}
	if got := titles(m); !slices.Equal(got, want) {
		t.Errorf("live at noon:\n got %q\nwant %q", got, want)
	}
	if len(skipped) != 0 {
		t.Errorf("skipped %q, want none", skipped)
	}

	// An hour and a half later the schedule has moved on.
	later, _, err := db.Live(context.Background(), noon.Add(90*time.Minute))
	must(t, err)
	want = []string{
		"app:DocuCraft", "app:Scheduled",
		"announcement:open window", "announcement:started, no end", "announcement:starts exactly now",
		"announcement:starts in a millisecond", "announcement:scheduled",
	}
	if got := titles(later); !slices.Equal(got, want) {
		t.Errorf("live at 13:30:\n got %q\nwant %q", got, want)
	}
}

// TestLiveShape checks every field of what Live returns against docs/wire.md.
func TestLiveShape(t *testing.T) {
	db := migrated(t, nil)
	created := noon.Add(-time.Hour)
	renamed := time.Date(2026, 9, 1, 8, 30, 0, 123e6, time.UTC)
	addRename(t, db, mysql.Rename{Kind: mysql.KindAppRename, OldName: "PdfCraft", NewName: "DocuCraft",
		Description: "PdfCraft is now DocuCraft.", RenamedAt: renamed}, created)
	addRename(t, db, mysql.Rename{Kind: mysql.KindRepoRename, OldName: "storytold/pdfcraft", NewName: "storytold/docucraft"}, created)
	addNotice(t, db, mysql.Notice{Kind: mysql.KindAnnouncement, Title: "Hello", Body: "Two\nlines"}, created)
	addNotice(t, db, mysql.Notice{Kind: mysql.KindAlert, Title: "Update now", Body: "Security fix.",
		Link: "https://craft.example.com/security?id=1&x=é"}, created)
	addNotice(t, db, mysql.Notice{Kind: mysql.KindAlert, Title: "No link"}, created)

	m, _, err := db.Live(context.Background(), noon)
	must(t, err)
	got, err := release.Marshal(release.Info{Success: true, ReleaseInfo: release.Catalog{Apps: map[string]release.AppInfo{}},
		AppRenames: m.AppRenames, RepoRenames: m.RepoRenames, ImportantNotices: m.Notices})
	must(t, err)
	want := `{"success":true,"release_info":{"apps":{},"last_fetched":null},` +
		`"app_renames":[{"old_name":"PdfCraft","old_name_lower":"pdfcraft","new_name":"DocuCraft","new_name_lower":"docucraft","description":"PdfCraft is now DocuCraft.","renamed_at":"2026-09-01T08:30:00.123Z"}],` +
		`"repo_renames":[{"old_name":"storytold/pdfcraft","new_name":"storytold/docucraft","renamed_at":null}],` +
		`"important_notices":{"announcements":[{"title":"Hello","body":"Two\nlines","created_at":"2026-10-10T11:00:00Z"}],` +
		`"alerts":[{"title":"Update now","body":"Security fix.","maybe_web_link":"https://craft.example.com/security?id=1&x=é","created_at":"2026-10-10T11:00:00Z"},` +
		`{"title":"No link","body":"","maybe_web_link":null,"created_at":"2026-10-10T11:00:00Z"}]}}`
	if string(got) != want {
		t.Errorf("wire body:\n got %s\nwant %s", got, want)
	}
}

// TestLiveKeepsTheNewest caps each list at MaxLive, keeping the newest rows.
func TestLiveKeepsTheNewest(t *testing.T) {
	db, d := migratedDB(t, nil)
	var values []string
	for i := range mysql.MaxLive + 5 {
		values = append(values, fmt.Sprintf("('n%03d', '2026-10-01')", i))
	}
	mariadbtest.Shared(t).Exec(t, "INSERT INTO "+d.Name+".craft_announcements (title, created_at) VALUES "+strings.Join(values, ", "))
	addNotice(t, db, mysql.Notice{Kind: mysql.KindAlert, Title: "alert"}, noon)

	m, _, err := db.Live(context.Background(), noon)
	must(t, err)
	a := m.Notices.Announcements
	if len(a) != mysql.MaxLive || a[0].Title != "n005" || a[len(a)-1].Title != fmt.Sprintf("n%03d", mysql.MaxLive+4) {
		t.Errorf("announcements: %q; want the %d newest, n005 to n%03d", titles(m), mysql.MaxLive, mysql.MaxLive+4)
	}
	if len(m.Notices.Alerts) != 1 {
		t.Errorf("alerts: %d, want 1 (the cap is per list)", len(m.Notices.Alerts))
	}
}

// TestLiveSkipsBadRows leaves out rows written by hand that break the
// limits, names them, and publishes the others.
func TestLiveSkipsBadRows(t *testing.T) {
	db, d := migratedDB(t, nil)
	good := addNotice(t, db, mysql.Notice{Kind: mysql.KindAlert, Title: "good"}, noon)
	decide(t, db, rollout("photocraft", "v0.6.0", 10), noon)
	for _, q := range []string{
		"INSERT INTO craft_alerts (title, created_at) VALUES (CONCAT('bell', CHAR(7)), '2026-10-01')",
		"INSERT INTO craft_app_renames (old_name, new_name, created_at) VALUES ('Same', 'Same', '2026-10-01')",
		// A right-to-left override (U+202E) in a title.
		"INSERT INTO craft_announcements (title, created_at) VALUES (CONCAT('Update ', _utf8mb4 X'E280AE', 'exe.msi'), '2026-10-01')",
		"INSERT INTO craft_release_decisions (app, action, tag, version, reason, decided_by, created_at) VALUES " +
			"('vectorcraft', 'minimum', '', 'v1', 'x', 'bob', NOW(3)), ('artcraft', 'withdraw', 'v1', '', '', 'bob', NOW(3))",
	} {
		if _, err := raw(t, d).Exec(q); err != nil {
			t.Fatal(err)
		}
	}
	m, skipped, err := db.Live(context.Background(), noon)
	must(t, err)
	if got, want := titles(m), []string{"alert:" + good.Title}; !slices.Equal(got, want) {
		t.Errorf("live: got %q, want %q", got, want)
	}
	if want := map[string]release.Decisions{"photocraft": {Rollout: &release.Rollout{Tag: "v0.6.0", Percent: 10}}}; !reflect.DeepEqual(m.Decisions, want) {
		t.Errorf("decided %s, want %s", show(m.Decisions), show(want))
	}
	if want := []string{"app/1", "announcement/1", "alert/2", "decision/3", "decision/2"}; !slices.Equal(skipped, want) {
		t.Errorf("skipped %q, want %q", skipped, want)
	}
}

// TestSchemaRefusesBadRows: the CHECKs hold rows written by hand to the
// rules the subcommands apply.
func TestSchemaRefusesBadRows(t *testing.T) {
	_, d := migratedDB(t, nil)
	decision := func(values string) string {
		return "INSERT INTO craft_release_decisions (app, action, tag, percent, decided_by, created_at) VALUES (" + values + ", NOW(3))"
	}
	tests := []struct{ name, insert string }{
		{"an alert with an http link", "INSERT INTO craft_alerts (title, web_link, created_at) VALUES ('t', 'http://x', NOW())"},
		{"an announcement without a title", "INSERT INTO craft_announcements (title, created_at) VALUES ('', NOW())"},
		{"a window that ends before it starts", "INSERT INTO craft_alerts (title, starts_at, ends_at, created_at) VALUES ('t', '2026-10-02', '2026-10-01', NOW())"},
		{"a title over the limit", fmt.Sprintf("INSERT INTO craft_alerts (title, created_at) VALUES ('%s', NOW())", strings.Repeat("x", mysql.MaxTitle+1))},
		{"a repo that is not org/project", "INSERT INTO craft_repo_renames (old_name, new_name, created_at) VALUES ('a', 'b/c', NOW())"},
		{"an unknown action", decision("'a', 'delete', '', NULL, 'bob'")},
		{"a rollout without a percent", decision("'a', 'rollout', 'v1', NULL, 'bob'")},
		{"a rollout over 100 %", decision("'a', 'rollout', 'v1', 101, 'bob'")},
		{"a withdrawal with a percent", decision("'a', 'withdraw', 'v1', 5, 'bob'")},
		{"a decision without an app", decision("'', 'rollout_end', '', NULL, 'bob'")},
		{"a decision by nobody", decision("'a', 'rollout_end', '', NULL, ''")},
	}
	sqlDB := raw(t, d)
	for _, tt := range tests {
		if _, err := sqlDB.Exec(tt.insert); err == nil {
			t.Errorf("%s: the schema took %s", tt.name, tt.insert)
		}
	}
}
