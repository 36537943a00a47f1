package mysql_test

import (
	"strings"
	"testing"
	"time"

	"github.com/storytold/craft-releases/pkg/mysql"
)

func TestNoticeValidate(t *testing.T) {
	alert := func(f func(*mysql.Notice)) mysql.Notice {
		n := mysql.Notice{Kind: mysql.KindAlert, Title: "Maintenance", Body: "Tonight.", Link: "https://status.example.com/1"}
		f(&n)
		return n
	}
	tests := []struct {
		name string
		n    mysql.Notice
		want []string // substrings of the error, one per problem; none: valid
	}{
		{"an alert with everything", alert(func(*mysql.Notice) {}), nil},
		{"an announcement without a link", mysql.Notice{Kind: mysql.KindAnnouncement, Title: "Hi"}, nil},
		{"a body of two paragraphs", alert(func(n *mysql.Notice) { n.Body = "One.\n\n\tTwo." }), nil},
		{"a title at the limit", alert(func(n *mysql.Notice) { n.Title = strings.Repeat("é", mysql.MaxTitle) }), nil},
		{"a body at the limit", alert(func(n *mysql.Notice) { n.Body = strings.Repeat("ü", mysql.MaxBody) }), nil},
		{"a window", alert(func(n *mysql.Notice) { n.StartsAt, n.EndsAt = noon, noon.Add(time.Millisecond) }), nil},

		{"a missing title", alert(func(n *mysql.Notice) { n.Title = "" }), []string{"title is missing"}},
		{"a blank title", alert(func(n *mysql.Notice) { n.Title = " \t " }), []string{"title is missing"}},
		{"a title over the limit", alert(func(n *mysql.Notice) { n.Title = strings.Repeat("é", mysql.MaxTitle+1) }), []string{"title is 201 characters long; the limit is 200"}},
		{"a title of two lines", alert(func(n *mysql.Notice) { n.Title = "a\nb" }), []string{"title holds the control character U+000A"}},
		{"a title that is not UTF-8", alert(func(n *mysql.Notice) { n.Title = "\xff" }), []string{"title is not valid UTF-8"}},
		{"a body over the limit", alert(func(n *mysql.Notice) { n.Body = strings.Repeat("x", mysql.MaxBody+1) }), []string{"body is 4001 characters long; the limit is 4000"}},
		{"a body with a bell", alert(func(n *mysql.Notice) { n.Body = "ding\a" }), []string{"body holds the control character U+0007"}},
		{"a title with a right-to-left override", alert(func(n *mysql.Notice) { n.Title = "Update to \u202eexe.msi" }), []string{"title holds the bidirectional formatting character U+202E"}},
		{"an http link", alert(func(n *mysql.Notice) { n.Link = "http://status.example.com" }),
			[]string{`link "http://status.example.com" is not an https:// URL`}},
		{"a link in capitals", alert(func(n *mysql.Notice) { n.Link = "HTTPS://status.example.com" }), []string{"is not an https:// URL"}},
		{"a link without a host", alert(func(n *mysql.Notice) { n.Link = "https:///path" }), []string{"with a host"}},
		{"a link with a space", alert(func(n *mysql.Notice) { n.Link = "https://a.example/b c" }), []string{"spaces or control characters"}},
		{"a link over the limit", alert(func(n *mysql.Notice) { n.Link = "https://a.example/" + strings.Repeat("x", mysql.MaxLink) }),
			[]string{"link is 2018 characters long; the limit is 2000"}},
		{"an announcement with a link", mysql.Notice{Kind: mysql.KindAnnouncement, Title: "Hi", Link: "https://a.example"},
			[]string{"announcements have no link"}},
		{"an end before the start", alert(func(n *mysql.Notice) { n.StartsAt, n.EndsAt = noon, noon.Add(-time.Hour) }), []string{"end 2026-10-10T11:00:00Z is not after the start 2026-10-10T12:00:00Z"}},
		{"an end at the start", alert(func(n *mysql.Notice) { n.StartsAt, n.EndsAt = noon, noon }), []string{"is not after the start"}},
		{"an unknown kind", mysql.Notice{Kind: "banner", Title: "x"}, []string{`kind "banner" is not announcement or alert`}},
		{"every problem at once", mysql.Notice{Kind: mysql.KindAlert, Link: "ftp://x", StartsAt: noon, EndsAt: noon},
			[]string{"title is missing", "is not an https:// URL", "is not after the start"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			checkProblems(t, tt.n.Validate(), tt.want)
		})
	}
}

func TestRenameValidate(t *testing.T) {
	tests := []struct {
		name string
		r    mysql.Rename
		want []string
	}{
		{"an app rename", mysql.Rename{Kind: mysql.KindAppRename, OldName: "PdfCraft", NewName: "DocuCraft", Description: "Same app.\nNew name."}, nil},
		{"a repo rename", mysql.Rename{Kind: mysql.KindRepoRename, OldName: "storytold/pdfcraft", NewName: "storytold/docu.craft_2-x"}, nil},
		{"a repo rename of case only", mysql.Rename{Kind: mysql.KindRepoRename, OldName: "storytold/pdfcraft", NewName: "storytold/PdfCraft"}, nil},

		{"a missing old name", mysql.Rename{Kind: mysql.KindAppRename, NewName: "DocuCraft"}, []string{"old name is missing"}},
		{"a missing new name", mysql.Rename{Kind: mysql.KindAppRename, OldName: "PdfCraft", NewName: " "}, []string{"new name is missing"}},
		{"the same names", mysql.Rename{Kind: mysql.KindAppRename, OldName: "PdfCraft", NewName: "PdfCraft"},
			[]string{`old and new names are both "PdfCraft"`}},
		{"an app name over the limit", mysql.Rename{Kind: mysql.KindAppRename, OldName: "a", NewName: strings.Repeat("b", mysql.MaxAppName+1)}, []string{"new name is 101 characters long; the limit is 100"}},
		{"a description over the limit", mysql.Rename{Kind: mysql.KindAppRename, OldName: "a", NewName: "b", Description: strings.Repeat("d", mysql.MaxDescription+1)}, []string{"description is 1001 characters long; the limit is 1000"}},
		{"a repo that is not org/project", mysql.Rename{Kind: mysql.KindRepoRename, OldName: "pdfcraft", NewName: "storytold/x/y"},
			[]string{`old name "pdfcraft" is not org/project`, `new name "storytold/x/y" is not org/project`}},
		{"a repo with a space", mysql.Rename{Kind: mysql.KindRepoRename, OldName: "storytold/pdf craft", NewName: "storytold/docucraft"}, []string{"is not org/project"}},
		{"a repo over the limit", mysql.Rename{Kind: mysql.KindRepoRename, OldName: "storytold/a", NewName: "storytold/" + strings.Repeat("b", mysql.MaxRepo)}, []string{"new name is 150 characters long; the limit is 140"}},
		{"a repo rename with a description", mysql.Rename{Kind: mysql.KindRepoRename, OldName: "o/a", NewName: "o/b", Description: "x"}, []string{"repository renames have no description"}},
		{"an end before the start", mysql.Rename{Kind: mysql.KindAppRename, OldName: "a", NewName: "b", StartsAt: noon, EndsAt: noon.Add(-1)}, []string{"is not after the start"}},
		{"an unknown kind", mysql.Rename{Kind: "org", OldName: "a", NewName: "b"}, []string{`kind "org" is not app or repo`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			checkProblems(t, tt.r.Validate(), tt.want)
		})
	}
}

// checkProblems checks that err holds one line per wanted problem, each
// containing its substring, or is nil when none is wanted.
func checkProblems(t testing.TB, err error, want []string) {
	t.Helper()
	if len(want) == 0 {
		if err != nil {
			t.Errorf("got %v, want no error", err)
		}
		return
	}
	if err == nil {
		t.Fatalf("got no error, want %q", want)
	}
	lines := strings.Split(err.Error(), "\n")
	if len(lines) != len(want) {
		t.Errorf("got %d problems %q, want %d", len(lines), lines, len(want))
		return
	}
	for i, w := range want {
		if !strings.Contains(lines[i], w) {
			t.Errorf("problem %d: got %q, want it to contain %q", i, lines[i], w)
		}
	}
}
