package github

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"

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
	gh := c.gh()
	req, err := c.newRequest(gh, rq, app.Repo, "")
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	resp, err := gh.BareDo(ctx, req)
	if resp == nil || resp.Response == nil {
		return nil, unsent(rq, app.Repo, err).Err
	}
	defer resp.Body.Close()
	switch code := resp.StatusCode; code {
	case http.StatusOK:
	case http.StatusNotFound:
		return nil, fmt.Errorf("%s of %s: %w", rq.what, app.Repo, ErrNoRelease)
	default:
		if a := quota(resp.Header); rateLimitSignal(code, resp.Header) || a.Remaining == 0 {
			return nil, fmt.Errorf("%s of %s: rate limited (HTTP %d)", rq.what, app.Repo, code)
		}
		return nil, fmt.Errorf("%s of %s: HTTP %d", rq.what, app.Repo, code)
	}
	got, err := c.readRelease(rq, app, resp.Response)
	rel := got.Release
	switch {
	case err != nil:
		return nil, fmt.Errorf("%s of %s: %w", rq.what, app.Repo, err)
	case rel.Tag != tag:
		return nil, fmt.Errorf("%s of %s: GitHub answered the release %q", rq.what, app.Repo, rel.Tag)
	}
	return rel, nil
}
