package webhook

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"

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
