package release_test

import (
	"reflect"
	"testing"
	"time"

	"github.com/storytold/craft-releases/pkg/release"
)

// TestPolled: each app is followed by its pre-release entry when it has the
// channel and by its history entry, with the app's repository and tag
// prefix, and the entry key maps back to the app.
func TestPolled(t *testing.T) {
	apps := []release.App{
		{Key: "a", Name: "A", Repo: "o/a"},
		{Key: "b", Name: "B", Repo: "o/b", Prereleases: true, TagPrefix: "b-v"},
		{Key: "c", Name: "C", Repo: "o/c"},
	}
	got := release.Entries(apps)
	hist := func(a release.App) release.App {
		return release.App{Key: a.Key + ":history", Name: a.Name, Repo: a.Repo, Channel: release.HistoryChannel, TagPrefix: a.TagPrefix}
	}
	want := []release.App{apps[0], hist(apps[0]), apps[1], {Key: "b:prerelease", Name: "B", Repo: "o/b", Channel: release.Prerelease, TagPrefix: "b-v"}, hist(apps[1]), apps[2], hist(apps[2])}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("Entries = %+v, want %+v", got, want)
	}
	if got := release.Requests(apps); got != 4 {
		t.Errorf("Requests = %d, want 4: the apps and b's pre-release channel", got)
	}
	for key, want := range map[string]struct {
		app string
		ch  release.Channel
	}{"b:prerelease": {"b", release.Prerelease}, "b:history": {"b", release.HistoryChannel}, "b": {"b", release.Stable},
		"prerelease": {"prerelease", release.Stable}, "history": {"history", release.Stable}} {
		if app, ch := release.AppOf(key); app != want.app || ch != want.ch {
			t.Errorf("AppOf(%q) = %q, %q; want %q, %q", key, app, ch, want.app, want.ch)
		}
	}
}

// TestLatestPrerelease: the pre-release shows only when it is a prerelease
// with a published_at after the stable release's.
func TestLatestPrerelease(t *testing.T) {
	at := func(h int) *release.Time { return release.NewTime(time.Date(2026, 12, 1, h, 0, 0, 0, time.UTC)) }
	rel := func(pre bool, published *release.Time) *release.Release {
		return &release.Release{Tag: "v1", Prerelease: pre, PublishedAt: published}
	}
	for _, tt := range []struct {
		name        string
		stable, pre *release.Release
		shown       bool
	}{
		{"no pre-release", rel(false, at(1)), nil, false},
		{"newer than the stable", rel(false, at(1)), rel(true, at(2)), true},
		{"older than the stable", rel(false, at(3)), rel(true, at(2)), false},
		{"as old as the stable", rel(false, at(2)), rel(true, at(2)), false},
		{"no stable release", nil, rel(true, at(2)), true},
		{"a stable release without a date", rel(false, nil), rel(true, at(2)), true},
		{"not marked prerelease", nil, rel(false, at(2)), false},
		{"no published_at", nil, rel(true, nil), false},
	} {
		got := release.LatestPrerelease(tt.stable, tt.pre)
		if (got != nil) != tt.shown || got != nil && got != tt.pre {
			t.Errorf("%s: LatestPrerelease = %v, want shown %v", tt.name, got, tt.shown)
		}
	}
}

// TestOptionalRelease: latest_prerelease is left out when nil, null when it
// holds no release, and the release otherwise, between latest_release and
// app_last_fetched.
func TestOptionalRelease(t *testing.T) {
	for _, tt := range []struct {
		pre  *release.OptionalRelease
		want string
	}{
		{nil, `{"name":"A","repo":"o/a","latest_release":null,"rollout":null,"minimum_version":null,"app_last_fetched":null}`},
		{&release.OptionalRelease{}, `{"name":"A","repo":"o/a","latest_release":null,"latest_prerelease":null,"rollout":null,"minimum_version":null,"app_last_fetched":null}`},
		{&release.OptionalRelease{Release: &release.Release{Tag: "v2<", Assets: []release.Asset{}}},
			`{"name":"A","repo":"o/a","latest_release":null,"latest_prerelease":{"tag":"v2<","version":"","name":"","published_at":null,"html_url":"","prerelease":false,"notes_markdown":"","assets":[]},"rollout":null,"minimum_version":null,"app_last_fetched":null}`},
	} {
		b, err := release.Marshal(release.AppInfo{Name: "A", Repo: "o/a", LatestPrerelease: tt.pre})
		if err != nil || string(b) != tt.want {
			t.Errorf("Marshal = %s, %v; want %s", b, err, tt.want)
		}
	}
}
