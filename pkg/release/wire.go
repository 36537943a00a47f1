package release

import (
	"bytes"
	"encoding/json"
)

// Info is the whole body of GET /v1/craft_apps/release_info (docs/wire.md).
// Field order is the wire's key order; every key is always present.
type Info struct {
	Success          bool         `json:"success"`
	ReleaseInfo      Catalog      `json:"release_info"`
	AppRenames       []AppRename  `json:"app_renames"`
	RepoRenames      []RepoRename `json:"repo_renames"`
	ImportantNotices Notices      `json:"important_notices"`
}

// Catalog holds every configured app and the oldest fetch time among them.
type Catalog struct {
	Apps        map[string]AppInfo `json:"apps"` // encoding/json sorts keys bytewise
	LastFetched *Time              `json:"last_fetched"`
}

// AppInfo is one app on the wire.
type AppInfo struct {
	Name          string   `json:"name"`
	Repo          string   `json:"repo"`
	LatestRelease *Release `json:"latest_release"`
	// LatestPrerelease is present only for an app with a pre-release
	// channel: nil leaves the key out.
	LatestPrerelease *OptionalRelease `json:"latest_prerelease,omitempty"`
	// Rollout is the release being rolled out to a share of installs, nil
	// when none is (docs/wire.md, "Staged rollouts").
	Rollout *RolloutInfo `json:"rollout"`
	// MinimumVersion is the lowest version an install may run, nil for
	// none: one below it should update whatever the rollout says.
	MinimumVersion *string `json:"minimum_version"`
	AppLastFetched *Time   `json:"app_last_fetched"`
}

// RolloutInfo is a staged release on the wire: an install whose
// Bucket(app, tag, install id) is below Percent should take Release; the
// others stay on latest_release.
type RolloutInfo struct {
	Tag     string   `json:"tag"`
	Percent int      `json:"percent"`
	Release *Release `json:"release"`
}

// OptionalRelease is a release in a key that is left out when it does not
// apply, and null when it applies but there is none: latest_prerelease.
type OptionalRelease struct{ Release *Release }

// MarshalJSON writes the release, or null.
func (o OptionalRelease) MarshalJSON() ([]byte, error) { return Marshal(o.Release) }

// UnmarshalJSON reads a release, or null.
func (o *OptionalRelease) UnmarshalJSON(b []byte) error { return json.Unmarshal(b, &o.Release) }

// AppRename tells launchers that an app changed its name.
type AppRename struct {
	OldName      string `json:"old_name"`
	OldNameLower string `json:"old_name_lower"`
	NewName      string `json:"new_name"`
	NewNameLower string `json:"new_name_lower"`
	Description  string `json:"description"`
	RenamedAt    *Time  `json:"renamed_at"`
}

// RepoRename tells launchers that a repository moved.
type RepoRename struct {
	OldName   string `json:"old_name"`
	NewName   string `json:"new_name"`
	RenamedAt *Time  `json:"renamed_at"`
}

// Notices are the announcements (inline) and alerts (popups) launchers show.
type Notices struct {
	Announcements []Announcement `json:"announcements"`
	Alerts        []Alert        `json:"alerts"`
}

// Announcement is an inline, dismissible notice.
type Announcement struct {
	Title     string `json:"title"`
	Body      string `json:"body"`
	CreatedAt *Time  `json:"created_at"`
}

// Alert is a popup notice the user acknowledges.
type Alert struct {
	Title        string  `json:"title"`
	Body         string  `json:"body"`
	MaybeWebLink *string `json:"maybe_web_link"`
	CreatedAt    *Time   `json:"created_at"`
}

// Marshal encodes v as compact JSON without HTML escaping and without a
// trailing newline: the exact bytes the service serves and stores.
func Marshal(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}
