package github_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/storytold/craft-releases/pkg/github"
	"github.com/storytold/craft-releases/test/fakegithub"
)

// TestRelease: a tag is found among the published releases, wherever it is
// listed; a draft, an unknown tag or a failed answer is not. Draft finds a
// draft of the tag in the list, and no published or unknown release.
func TestRelease(t *testing.T) {
	gh := fakegithub.New(t)
	gh.Publish(repo, fakegithub.NewRelease(repo, "v0.6.0"))
	draft := fakegithub.NewRelease(repo, "v0.7.0")
	draft.Draft = true
	slashed := fakegithub.NewRelease(repo, "release/v0.4.0")
	slashed.Assets = nil
	gh.SetList(repo, draft, fakegithub.NewRelease(repo, "v0.6.0"), fakegithub.NewRelease(repo, "v0.5.0"), slashed)
	c := newClient(t, gh, github.Options{Token: "ghp_secret"})
	ctx := context.Background()
	tests := []struct {
		name, tag string
		fault     *fakegithub.Fault
		wantErr   string // "" for found
	}{
		{"the latest", "v0.6.0", nil, ""},
		{"an older one", "v0.5.0", nil, ""},
		{"a tag with a slash", "release/v0.4.0", nil, ""},
		{"a draft", "v0.7.0", nil, "release v0.7.0 of storytold/photocraft: no published release"},
		{"a tag never made", "v9.9.9", nil, "no published release"},
		{"a tag that is no git ref", "v1..2", nil, `release "v1..2" of storytold/photocraft: not a git tag`},
		{"a server error", "v0.5.0", &fakegithub.Fault{Status: 502}, "release v0.5.0 of storytold/photocraft: HTTP 502"},
		{"a rate limit", "v0.5.0", ptr(fakegithub.RateLimit(time.Now().Add(time.Hour))), "rate limited (HTTP 403)"},
		{"another release", "v0.5.0", ptr(fakegithub.Raw(string(fakegithub.NewRelease(repo, "v0.6.0").JSON()))), `GitHub answered the release "v0.6.0"`},
		{"garbage", "v0.5.0", ptr(fakegithub.Malformed()), "decode release"},
		{"the token in the answer", "v0.5.0", ptr(fakegithub.Raw(`{"tag_name":"v0.5.0","name":"ghp_secret"}`)), "the release contains the token"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.fault != nil {
				gh.Queue(fakegithub.TagOf(repo, tt.tag), *tt.fault)
			}
			got, err := c.Release(ctx, app, tt.tag)
			switch {
			case tt.wantErr == "" && (err != nil || got == nil || got.Tag != tt.tag):
				t.Errorf("Release(%s) = %+v, %v; want it", tt.tag, got, err)
			case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
				t.Errorf("Release(%s) = %+v, %v; want an error with %q", tt.tag, got, err, tt.wantErr)
			case err != nil && strings.Contains(err.Error(), "ghp_secret"):
				t.Errorf("error %q holds the token", err)
			}
			if tt.wantErr == "no published release" && !errors.Is(err, github.ErrNoRelease) {
				t.Errorf("error %v, want ErrNoRelease", err)
			}
		})
	}
	if n := gh.Count(fakegithub.TagOf(repo, "release/v0.4.0")); n != 1 {
		t.Errorf("requests for release/v0.4.0: %d, want 1", n)
	}
	for tag, want := range map[string]bool{"v0.7.0": true, "v0.6.0": false, "v9.9.9": false} {
		if got, err := c.Draft(ctx, app, tag); err != nil || got != want {
			t.Errorf("Draft(%s) = %v, %v; want %v", tag, got, err, want)
		}
	}
	gh.Queue(fakegithub.List(repo), fakegithub.Fault{Status: 502})
	if _, err := c.Draft(ctx, app, "v0.7.0"); err == nil || !strings.Contains(err.Error(), "HTTP 502") {
		t.Errorf("Draft on a 502: %v, want the error", err)
	}
}
