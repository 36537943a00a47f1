package github

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"

	"github.com/storytold/craft-releases/pkg/release"
)

// ErrNoRelease is returned by Release for a tag of which the repository has
// no published release.
var ErrNoRelease = errors.New("no published release")

// Release asks GitHub for app's release tag (GET
// /repos/{org}/{project}/releases/tags/{tag}), for an operator's decision
// on it, and returns it filtered by ParseRelease. A 404 is ErrNoRelease
// (wrapped); a release GitHub answers for another tag, or one that fails
// ParseRelease's rules (which the service would never serve), is an error
// that says so, as is any other answer: a rate limit, a server error, a
// timeout. The request is bounded as Latest's is; its error never contains
// the token.
func (c *Client) Release(ctx context.Context, app release.App, tag string) (*release.Release, error) {
	rel, err := c.byTag(ctx, app, tag)
	if err != nil {
		return nil, c.redact(err)
	}
	return rel, nil
}

func (c *Client) byTag(ctx context.Context, app release.App, tag string) (*release.Release, error) {
	if tag == "" || len(tag) > MaxTag || !release.ValidTag(tag) {
		return nil, fmt.Errorf("release %q of %s: not a git tag of at most %d bytes", tag, app.Repo, MaxTag)
	}
	rq := request{what: "release " + tag, path: "releases/tags/" + url.PathEscape(tag), parse: one(parseRelease)}
	got, err := c.ask(ctx, app, rq)
	if err != nil {
		return nil, err
	}
	if rel := got.Release; rel.Tag != tag {
		return nil, fmt.Errorf("%s of %s: GitHub answered the release %q", rq.what, app.Repo, rel.Tag)
	}
	return got.Release, nil
}

// Draft reports whether app's release list (its first ListSize releases,
// drafts included, as GitHub lists them to a token that may push) holds a
// draft of tag: a release an operator may stage before publishing it. Its
// errors are Release's, ErrNoRelease for a repository without releases.
func (c *Client) Draft(ctx context.Context, app release.App, tag string) (bool, error) {
	draft := false
	rq := request{what: "releases", path: listPath, parse: func(_ release.App, body []byte) (release.Answer, error) {
		var list []taggedDraft
		if err := json.Unmarshal(body, &list); err != nil {
			return release.Answer{}, fmt.Errorf("decode release list: %w", err)
		}
		draft = slices.Contains(list[:min(len(list), ListSize)], taggedDraft{Tag: tag, Draft: true})
		return release.Answer{}, nil
	}}
	if _, err := c.ask(ctx, app, rq); err != nil {
		return false, c.redact(err)
	}
	return draft, nil
}

// taggedDraft is what Draft reads of a release of the list.
type taggedDraft struct {
	Tag   string `json:"tag_name"`
	Draft bool   `json:"draft"`
}

// ask sends rq about app, bounded as Latest's requests are, and returns
// what rq's parse makes of a 200: a 404 is ErrNoRelease (wrapped), any other
// answer an error that says what it was.
func (c *Client) ask(ctx context.Context, app release.App, rq request) (release.Answer, error) {
	gh := c.gh()
	req, err := c.newRequest(gh, rq, app.Repo, "")
	if err != nil {
		return release.Answer{}, err
	}
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	resp, err := gh.BareDo(ctx, req)
	if resp == nil || resp.Response == nil {
		return release.Answer{}, unsent(rq, app.Repo, err).Err
	}
	defer resp.Body.Close()
	switch code := resp.StatusCode; code {
	case http.StatusOK:
	case http.StatusNotFound:
		return release.Answer{}, fmt.Errorf("%s of %s: %w", rq.what, app.Repo, ErrNoRelease)
	default:
		if a := quota(resp.Header); rateLimitSignal(code, resp.Header) || a.Remaining == 0 {
			return release.Answer{}, fmt.Errorf("%s of %s: rate limited (HTTP %d)", rq.what, app.Repo, code)
		}
		return release.Answer{}, fmt.Errorf("%s of %s: HTTP %d", rq.what, app.Repo, code)
	}
	got, err := c.readRelease(rq, app, resp.Response)
	if err != nil {
		return release.Answer{}, fmt.Errorf("%s of %s: %w", rq.what, app.Repo, err)
	}
	return got, nil
}
