package snapshot_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/storytold/craft-releases/pkg/release"
	"github.com/storytold/craft-releases/pkg/snapshot"
	"github.com/storytold/craft-releases/test/fakeclock"
)

// TestDecisions: under each decision, the app's wire object, its
// downloads, its Tauri feeds and its staged files serve what docs/wire.md,
// "Release control", says, from the latest release and the history (the
// companions of a history release included); a change of decisions alone
// renders the app again, and no decision leaves the bytes as they were.
func TestDecisions(t *testing.T) {
	t.Parallel()
	staged := func(version string, hours int) *release.Release {
		return tauriRelease(version, hours, "RELEASES", "A-"+version+"-full.nupkg")
	}
	v1, v2, v3 := tauriRelease("1.0.0", 1), staged("2.0.0", 2), staged("3.0.0", 3)
	sigs := func(r *release.Release) map[string]string {
		m := signed(r, ".sig").Map()
		m["RELEASES"] = strings.Repeat("a", 40) + " A-" + r.Version + "-full.nupkg 5\n"
		return m
	}
	history := release.NewHistory([]*release.Release{v3, v2, v1}).WithCompanions(map[string]*release.Companions{
		v2.Tag: release.NewCompanions(sigs(v2)),
	})
	s := snapshot.New([]release.App{launcher}, fakeclock.New(t0.Add(24*time.Hour)))
	s.SetAll(map[string]release.Entry{
		launcher.Key:                      {FetchedAt: t0, Release: v3, Companions: release.NewCompanions(sigs(v3))},
		launcher.PrereleaseEntry().Key:    {FetchedAt: t0},
		launcher.HistoryEntry().Key:       {FetchedAt: t0, History: history},
		launcher.HistoryEntry().Key + "x": {FetchedAt: t0}, // not an entry: ignored
	}, t0)
	plain := string(s.Current().Apps[launcher.Key].Body())
	const releasesLine = "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa https://github.com/storytold/craft-launcher/releases/download/v3.0.0/A-3.0.0-full.nupkg 5 # "

	type want struct {
		latest, rollout, minimum string // the wire's tags and version; "" for null
		percent                  int
		tauri, staged, critical  string // versions the feeds offer ("" for no feed)
		releasesLine             string // the staged RELEASES' share ("" for no rollout)
		withdrawn                bool
		unfound                  string // comma-separated
	}
	rollout := func(percent int) *release.Rollout { return &release.Rollout{Tag: "v3.0.0", Percent: percent} }
	minimum := &release.Minimum{Version: "2.5.0", Reason: "r"}
	for _, tt := range []struct {
		name string
		d    release.Decisions
		want want
	}{
		{"no decision", release.Decisions{}, want{latest: "v3.0.0", tauri: "3.0.0"}},
		{"the latest withdrawn", release.Decisions{Withdrawn: []release.Withdrawal{{Tag: "v3.0.0", Reason: "crashes"}}}, want{latest: "v2.0.0", tauri: "2.0.0", withdrawn: true}},
		{"staged at 10 %", release.Decisions{Rollout: rollout(10)}, want{latest: "v2.0.0", rollout: "v3.0.0", percent: 10, tauri: "2.0.0", staged: "3.0.0", releasesLine: "10%\n"}},
		{"halted, with a minimum: offered to nobody", release.Decisions{Rollout: rollout(0), Minimum: minimum}, want{latest: "v2.0.0", rollout: "v3.0.0", minimum: "2.5.0", tauri: "2.0.0", staged: "3.0.0", critical: "2.0.0", releasesLine: "0%\n"}},
		{"staged at 10 %, with a minimum", release.Decisions{Rollout: rollout(10), Minimum: minimum}, want{latest: "v2.0.0", rollout: "v3.0.0", minimum: "2.5.0", percent: 10, tauri: "2.0.0", staged: "3.0.0", critical: "3.0.0", releasesLine: "10%\n"}},
		{"a tag nobody has", release.Decisions{Rollout: &release.Rollout{Tag: "v9.0.0", Percent: 10}}, want{latest: "v3.0.0", tauri: "3.0.0", unfound: "v9.0.0"}},
	} {
		s.SetMeta(release.Bulletin{Decisions: map[string]release.Decisions{launcher.Key: tt.d}})
		app := s.Current().Apps[launcher.Key]
		var obj struct {
			App struct {
				Latest  *release.Release     `json:"latest_release"`
				Rollout *release.RolloutInfo `json:"rollout"`
				Minimum *string              `json:"minimum_version"`
			} `json:"app"`
		}
		if err := json.Unmarshal(app.Body(), &obj); err != nil {
			t.Fatalf("%s: %v", tt.name, err)
		}
		got := want{tauri: offered(t, app.Tauri.Offer(windows)), withdrawn: app.Withdrawn, unfound: strings.Join(app.Unfound, ",")}
		if obj.App.Latest != nil {
			got.latest = obj.App.Latest.Tag
		}
		if r := obj.App.Rollout; r != nil {
			got.rollout, got.percent = r.Tag, r.Percent
			if r.Release == nil || r.Release.Tag != r.Tag {
				t.Errorf("%s: rollout.release %v, want the release %s", tt.name, r.Release, r.Tag)
			}
		}
		if obj.App.Minimum != nil {
			got.minimum = *obj.App.Minimum
		}
		if app.Rollout != nil {
			got.staged = offered(t, app.Rollout.Tauri.Offer(windows))
			got.releasesLine = strings.TrimPrefix(string(app.Rollout.Updates.Releases("").Body())+app.Rollout.Updates.Releases("").Err, releasesLine)
			if app.Rollout.Track.Release != v3 {
				t.Errorf("%s: the rollout's downloads are of %v", tt.name, app.Rollout.Track.Release)
			}
		}
		if app.Critical != nil {
			got.critical = offered(t, app.Critical.Offer(windows))
			if !strings.Contains(string(app.Critical.Offer(windows).Body()), `"critical":true`) {
				t.Errorf("%s: the critical update %s does not say so", tt.name, app.Critical.Offer(windows).Body())
			}
		}
		if got.latest != "" && app.Track.Release.Tag != got.latest {
			t.Errorf("%s: downloads of %s, want of latest_release %s", tt.name, app.Track.Release.Tag, got.latest)
		}
		if got != tt.want {
			t.Errorf("%s:\n got %+v\nwant %+v", tt.name, got, tt.want)
		}
	}
	s.SetMeta(release.Bulletin{})
	if got := string(s.Current().Apps[launcher.Key].Body()); got != plain {
		t.Errorf("without decisions again:\n got %s\nwant %s", got, plain)
	}
}

// TestDecisionsBeforeTheHistory: a withdrawn or staged latest release whose
// history was not read yet serves no latest_release rather than it; and a
// history entry never fetched keeps no app from being complete.
func TestDecisionsBeforeTheHistory(t *testing.T) {
	t.Parallel()
	s := snapshot.New([]release.App{launcher}, fakeclock.New(t0.Add(24*time.Hour)))
	v3 := tauriRelease("3.0.0", 3)
	s.SetAll(map[string]release.Entry{launcher.Key: {FetchedAt: t0, Release: v3}, launcher.PrereleaseEntry().Key: {FetchedAt: t0}}, t0)
	if !s.Current().Complete {
		t.Fatal("an app with a history entry never fetched is not complete")
	}
	for _, d := range []release.Decisions{
		{Withdrawn: []release.Withdrawal{{Tag: "v3.0.0", Reason: "r"}}},
		{Rollout: &release.Rollout{Tag: "v3.0.0", Percent: 50}},
	} {
		s.SetMeta(release.Bulletin{Decisions: map[string]release.Decisions{launcher.Key: d}})
		if app := s.Current().Apps[launcher.Key]; app.Track.Release != nil || !strings.Contains(string(app.Body()), `"latest_release":null`) {
			t.Errorf("%+v: latest_release %s", d, app.Body())
		}
	}
}
