package github

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"

	gogithub "github.com/google/go-github/v66/github"

	"github.com/storytold/craft-releases/pkg/release"
)

// DefaultAssetHosts are the hosts, besides the API's own, that an asset
// request may be redirected to (over https): where GitHub serves asset
// bytes from.
var DefaultAssetHosts = []string{"objects.githubusercontent.com", "release-assets.githubusercontent.com"}

// Companion fetches the bytes of the asset ref of app's repository through
// the API's asset endpoint (GET …/releases/assets/{id} with Accept:
// application/octet-stream), as docs/github.md, "Companion assets", says:
// GitHub answers the bytes, or redirects once, only to the API's own host or
// to one of Options.AssetHosts over https, and the redirected request
// carries no Authorization. A body over limit bytes, or whose SHA-256 is not
// ref's when ref has one, fails. The answer is classified as Latest's (its
// Outcome Fetched with the bytes, RateLimited, NotFound or Failed; its
// Release and ETag are unset), reports the quota the answers announced, and
// no error contains the token. The request, redirect included, is bounded by
// the request timeout. Companion is safe for concurrent use.
func (c *Client) Companion(ctx context.Context, app release.App, ref release.AssetRef, limit int64) ([]byte, release.Answer) {
	body, a := c.companion(ctx, app, ref, limit)
	if a.Err != nil {
		a.Err = c.redact(a.Err)
		body = nil
	}
	return body, a
}

func (c *Client) companion(ctx context.Context, app release.App, ref release.AssetRef, limit int64) ([]byte, release.Answer) {
	what := "asset " + strconv.FormatInt(ref.ID, 10)
	org, project, ok := strings.Cut(app.Repo, "/")
	if !ok || org == "" || project == "" || strings.Contains(project, "/") || ref.ID <= 0 {
		return nil, failed(fmt.Errorf("%s of %q: not an asset of org/project", what, app.Repo))
	}
	u := c.base.JoinPath("repos", org, project, "releases", "assets", strconv.FormatInt(ref.ID, 10))
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()

	resp, err := c.get(ctx, u, true)
	if err != nil {
		return nil, failed(fmt.Errorf("%s %s: %w", what, app.Repo, err))
	}
	defer resp.Body.Close()
	a := quota(resp.Header)
	fail := func(err error) ([]byte, release.Answer) {
		a.Outcome, a.Err = release.Failed, fmt.Errorf("%s %s: %w", what, app.Repo, err)
		return nil, a
	}
	switch code := resp.StatusCode; code {
	case http.StatusOK:
	case http.StatusMovedPermanently, http.StatusFound, http.StatusSeeOther, http.StatusTemporaryRedirect, http.StatusPermanentRedirect:
		to, err := c.redirect(u, resp.Header.Get("Location"))
		if err != nil {
			return fail(err)
		}
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
		resp.Body.Close()
		if resp, err = c.get(ctx, to, false); err != nil {
			return fail(fmt.Errorf("redirected to %s: %w", to.Host, err))
		}
		defer resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return fail(fmt.Errorf("redirected to %s: HTTP %d", to.Host, resp.StatusCode))
		}
	case http.StatusNotFound:
		a.Outcome, a.Err = release.NotFound, fmt.Errorf("%s %s: HTTP 404", what, app.Repo)
		return nil, a
	case http.StatusForbidden, http.StatusTooManyRequests:
		if !rateLimitSignal(code, resp.Header) && !secondaryLimit(resp) {
			return fail(fmt.Errorf("HTTP %d", code))
		}
		a.Outcome = release.RateLimited
		a.RetryAt = retryAt(resp.Header, c.clock.Now())
		a.Err = fmt.Errorf("%s %s: rate limited (HTTP %d)", what, app.Repo, code)
		return nil, a
	default:
		return fail(fmt.Errorf("HTTP %d", code))
	}
	body, err := readLimited(resp, limit)
	if err != nil {
		return fail(err)
	}
	if ref.SHA256 != "" {
		sum := sha256.Sum256(body)
		if got := hex.EncodeToString(sum[:]); got != ref.SHA256 {
			return fail(fmt.Errorf("sha256 %s, want %s", got, ref.SHA256))
		}
	}
	a.Outcome = release.Fetched
	return body, a
}

// get sends a GET of u for an asset's bytes; with auth, with the token.
func (c *Client) get(ctx context.Context, u *url.URL, auth bool) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", "application/octet-stream")
	req.Header.Set("User-Agent", c.agent)
	if auth {
		req.Header.Set("X-GitHub-Api-Version", apiVersion)
		if c.token != "" {
			req.Header.Set("Authorization", "Bearer "+c.token)
		}
	}
	return c.hc.Do(req)
}

// redirect returns where a redirect from u to location may go: the API's
// own scheme and host, or https to one of the asset hosts.
func (c *Client) redirect(u *url.URL, location string) (*url.URL, error) {
	if location == "" {
		return nil, errors.New("redirect without a location")
	}
	to, err := u.Parse(location)
	if err != nil {
		return nil, fmt.Errorf("redirect location: %w", err)
	}
	to.Fragment = ""
	switch {
	case to.User != nil:
		return nil, errors.New("redirect to a url with credentials")
	case to.Scheme == c.base.Scheme && to.Host == c.base.Host:
	case to.Scheme == "https" && to.Port() == "" && slices.Contains(c.assetHosts, strings.ToLower(to.Hostname())):
	default:
		return nil, fmt.Errorf("redirect to %s://%s, not an asset host", to.Scheme, to.Host)
	}
	return to, nil
}

// readLimited reads a 200's body of at most limit bytes.
func readLimited(resp *http.Response, limit int64) ([]byte, error) {
	if resp.ContentLength > limit {
		return nil, fmt.Errorf("body of %d bytes is over %d", resp.ContentLength, limit)
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, limit+1))
	if err != nil {
		return nil, fmt.Errorf("read body: %w", err)
	}
	if int64(len(body)) > limit {
		return nil, fmt.Errorf("body is over %d bytes", limit)
	}
	return body, nil
}

// secondaryLimit reports whether a 403 is GitHub's secondary rate limit, as
// go-github recognises it from the body.
func secondaryLimit(resp *http.Response) bool {
	err := gogithub.CheckResponse(resp)
	var abuse *gogithub.AbuseRateLimitError
	return errors.As(err, &abuse)
}
