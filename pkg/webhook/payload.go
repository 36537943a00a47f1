package webhook

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/storytold/craft-releases/pkg/release"
)

// maxTag bounds the tag kept as a hint; a longer one is not a tag we serve.
const maxTag = 255

// Payload is what the service reads of a release event's body
// (https://docs.github.com/webhooks/webhook-events-and-payloads#release).
type Payload struct {
	Action string // published, released, prereleased, edited, deleted, unpublished, created
	Repo   string // repository.full_name, as GitHub spells it
	Tag    string // release.tag_name
	Draft  bool
	Pre    bool // release.prerelease
	Dated  bool // release.published_at is set
}

// Parse reads a release event's body. It fails when the body is not a JSON
// object, a field has the wrong type, or repository.full_name is missing;
// every other field is optional.
func Parse(body []byte) (Payload, error) {
	var raw struct {
		Action     string `json:"action"`
		Repository *struct {
			FullName string `json:"full_name"`
		} `json:"repository"`
		Release *struct {
			TagName     string  `json:"tag_name"`
			Draft       bool    `json:"draft"`
			Prerelease  bool    `json:"prerelease"`
			PublishedAt *string `json:"published_at"`
		} `json:"release"`
	}
	if err := json.Unmarshal(body, &raw); err != nil {
		return Payload{}, fmt.Errorf("parse release event: %w", err)
	}
	if raw.Repository == nil || raw.Repository.FullName == "" {
		return Payload{}, errors.New("parse release event: no repository.full_name")
	}
	p := Payload{Action: raw.Action, Repo: raw.Repository.FullName}
	if r := raw.Release; r != nil {
		p.Tag, p.Draft, p.Pre = r.TagName, r.Draft, r.Prerelease
		p.Dated = r.PublishedAt != nil && *r.PublishedAt != ""
	}
	return p, nil
}

// Hint returns the tag the payload names as now published and served by
// GitHub's releases/latest, or "": only for the actions published and
// released of a dated release that is neither a draft nor a prerelease.
func (p Payload) Hint() string {
	if (p.Action != "published" && p.Action != "released") || p.Draft || p.Pre || !p.Dated || len(p.Tag) > maxTag {
		return ""
	}
	return p.Tag
}

// PrereleaseHint returns the tag the payload names as a new pre-release, or
// "": only for the actions prereleased and published of a dated prerelease
// that is not a draft.
func (p Payload) PrereleaseHint() string {
	if (p.Action != "prereleased" && p.Action != "published") || p.Draft || !p.Pre || !p.Dated || len(p.Tag) > maxTag {
		return ""
	}
	return p.Tag
}

// Refreshes returns the refresh requests, by entry key (release.Entries),
// that a delivery of p received at at makes for apps, the configured apps
// (docs/operations.md, "GitHub webhook"): every app of p's repository
// (Matching) is refreshed, with Hint as the tag to wait for. An app with a
// pre-release channel refreshes its list instead, with PrereleaseHint, on
// a new pre-release (prereleased, or published of a prerelease), and both,
// the list without a tag, on anything else (a release published or
// released, edited, deleted).
func Refreshes(apps []release.App, p Payload, at time.Time) map[string]release.Refresh {
	out := make(map[string]release.Refresh)
	for _, a := range apps {
		if !strings.EqualFold(a.Repo, p.Repo) {
			continue
		}
		if !a.Prereleases {
			out[a.Key] = release.Refresh{At: at, Tag: p.Hint()}
			continue
		}
		pre := a.PrereleaseEntry().Key
		if p.Pre && (p.Action == "prereleased" || p.Action == "published") {
			out[pre] = release.Refresh{At: at, Tag: p.PrereleaseHint()}
			continue
		}
		out[a.Key], out[pre] = release.Refresh{At: at, Tag: p.Hint()}, release.Refresh{At: at}
	}
	return out
}

// Matching returns the keys of the apps whose repository is repo, compared
// case-insensitively as GitHub does, in configured order; nil for none.
func Matching(apps []release.App, repo string) []string {
	var keys []string
	for _, a := range apps {
		if strings.EqualFold(a.Repo, repo) {
			keys = append(keys, a.Key)
		}
	}
	return keys
}
