package release_test

import (
	"bytes"
	"encoding/json"
	"testing"
	"time"

	"github.com/storytold/craft-releases/pkg/release"
	"github.com/storytold/craft-releases/test/testkit"
)

// TestWireExample: the docs/wire.md example built as values (the apps in
// the reverse of their wire order, so the keys come out sorted) marshals to
// its bytes, and read back into the wire types writes the same bytes again:
// what the service stores in Redis and reads back is stable.
func TestWireExample(t *testing.T) {
	sum := "8a5edab282632443219e051e4ade2d1d5bbc671c781051bf1437897cbdfea0f1"
	const download = "https://github.com/storytold/photocraft/releases/download/v0.5.0/"
	msi := "photocraft-0.5.0-windows-x64.msi"
	apps := make(map[string]release.AppInfo)
	apps["photocraft"] = release.AppInfo{
		Name: "PhotoCraft", Repo: "storytold/photocraft",
		LatestRelease: &release.Release{
			Tag: "v0.5.0", Version: "0.5.0", Name: "PhotoCraft v0.5.0", NotesMarkdown: "Notes",
			PublishedAt: release.NewTime(time.Date(2026, 10, 8, 14, 52, 50, 0, time.UTC)),
			HTMLURL:     "https://github.com/storytold/photocraft/releases/tag/v0.5.0",
			Assets: []release.Asset{
				{Name: msi, SizeBytes: 7, DownloadURL: download + msi, SHA256: &sum, Platform: release.ParseAsset(msi)},
				{Name: "SHA256SUMS.txt", SizeBytes: 2048, DownloadURL: download + "SHA256SUMS.txt", Platform: release.ParseAsset("SHA256SUMS.txt")},
			},
		},
		AppLastFetched: release.NewTime(time.Date(2026, 10, 10, 12, 0, 0, 123e6, time.UTC)),
	}
	apps["artcraft-launcher"] = release.AppInfo{Name: "ArtCraft Launcher", Repo: "storytold/craft-launcher"}
	built := release.Info{
		Success: true, ReleaseInfo: release.Catalog{Apps: apps}, AppRenames: []release.AppRename{}, RepoRenames: []release.RepoRename{},
		ImportantNotices: release.Notices{Announcements: []release.Announcement{}, Alerts: []release.Alert{}},
	}
	want := testkit.WireExample(t)
	var read release.Info
	if err := json.Unmarshal(want, &read); err != nil {
		t.Fatalf("json.Unmarshal(example): %v", err)
	}
	for name, info := range map[string]release.Info{"built": built, "read back": read} {
		if got, err := release.Marshal(info); err != nil || !bytes.Equal(got, want) {
			t.Errorf("Marshal(%s example) = %s, %v\nwant %s", name, got, err, want)
		}
	}
}

func TestMarshal(t *testing.T) {
	link := "https://example.com/?a=1&b=2"
	tests := []struct {
		name string
		in   any
		want string
	}{
		{"no HTML escaping", release.Announcement{Title: "<b>&", Body: "a > b"}, `{"title":"<b>&","body":"a > b","created_at":null}`},
		{"optional link", release.Alert{Title: "t", MaybeWebLink: &link}, `{"title":"t","body":"","maybe_web_link":"https://example.com/?a=1&b=2","created_at":null}`},
		{"nil release", (*release.Release)(nil), `null`},
		{"nil lists stay null", release.Notices{}, `{"announcements":null,"alerts":null}`},
		{"empty lists", release.Notices{Announcements: []release.Announcement{}, Alerts: []release.Alert{}}, `{"announcements":[],"alerts":[]}`},
		{"quote and control character", "\"\n", `"\"\n"`},
		{"non-ASCII kept", "PhotoCraft … ünïcode", `"PhotoCraft … ünïcode"`},
		{"repo rename key order", release.RepoRename{OldName: "org/old", NewName: "org/new"}, `{"old_name":"org/old","new_name":"org/new","renamed_at":null}`},
		{"app rename key order", release.AppRename{OldName: "A", OldNameLower: "a", NewName: "B", NewNameLower: "b", Description: "d"}, `{"old_name":"A","old_name_lower":"a","new_name":"B","new_name_lower":"b","description":"d","renamed_at":null}`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := release.Marshal(tc.in)
			if err != nil {
				t.Fatalf("Marshal(%#v): %v", tc.in, err)
			}
			if string(got) != tc.want {
				t.Errorf("Marshal(%#v) = %s, want %s", tc.in, got, tc.want)
			}
		})
	}
	if got, err := release.Marshal(make(chan int)); err == nil {
		t.Errorf("Marshal(chan) = %s, want an error", got)
	}
}
