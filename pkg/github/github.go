// Package github is the service's GitHub source: it asks GitHub's REST API for
// the latest release of one app with go-github, classifies the answer
// (docs/github.md) and turns the untrusted release into a bounded, filtered
// release.Release.
package github

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	gogithub "github.com/google/go-github/v66/github"

	"github.com/storytold/craft-releases/pkg/clock"
	"github.com/storytold/craft-releases/pkg/release"
)

// Defaults and bounds of the request (docs/github.md, "The request").
const (
	DefaultBaseURL        = "https://api.github.com/"
	DefaultUserAgent      = "craft-releases"
	DefaultConnectTimeout = 10 * time.Second
	DefaultHeaderTimeout  = 10 * time.Second
	DefaultRequestTimeout = 15 * time.Second

	// MaxBody is the largest body read from GitHub, in bytes; an answer with
	// a bigger one fails, and no more than MaxBody+1 bytes of it are read.
	MaxBody = 4 << 20

	// MaxHeaderBytes bounds an answer's status line and headers; a longer
	// one fails, read no further. GitHub's are a few KiB.
	MaxHeaderBytes = 64 << 10

	// MaxETag is the longest ETag kept and sent back as If-None-Match;
	// GitHub's are under 100 bytes. A longer one, or one that is not an
	// entity tag, is dropped: the release is kept and the next request is
	// unconditional.
	MaxETag = 256

	// MaxRetryAfter is the longest Retry-After honoured; a longer one is
	// clamped to it.
	MaxRetryAfter = 86400 * time.Second

	// ListSize is how many releases a pre-release channel's request asks
	// for (per_page): its newest pre-release is among them unless more
	// than ListSize releases were made since.
	ListSize = 10
)

const (
	mediaType  = "application/vnd.github+json"
	apiVersion = "2022-11-28"
)

// Options configures a Client. Zero fields take the defaults.
type Options struct {
	// BaseURL is CRAFT_APPS_RELEASE_GITHUB_API_URL: GitHub's own API, a
	// GitHub Enterprise API ("https://host/api/v3/") or a test fake. Paths
	// are resolved under it as given; a missing trailing "/" is added. It
	// must have passed pkg/config's check (an absolute http or https URL;
	// http:// with a Token only to a loopback address): New checks nothing
	// of it but that it parses.
	BaseURL string

	// Token is sent as "Authorization: Bearer <token>" after trimming
	// surrounding space; when nothing is left no Authorization header is
	// sent. It never appears in an Answer.
	Token string

	UserAgent      string        // names the service to GitHub
	ConnectTimeout time.Duration // for a TCP connection (and TLS handshake)
	HeaderTimeout  time.Duration // from the request sent to the answer's headers
	RequestTimeout time.Duration // the budget of a whole request, body included

	Clock clock.Clock // the clock that Retry-After counts from; nil: clock.System

	// AssetHosts are the hosts besides the API's own that an asset request
	// (Companion) may be redirected to, over https; nil: DefaultAssetHosts.
	AssetHosts []string
}

// withDefaults returns o with its zero fields set to the defaults.
func (o Options) withDefaults() Options {
	if o.BaseURL == "" {
		o.BaseURL = DefaultBaseURL
	}
	if o.UserAgent == "" {
		o.UserAgent = DefaultUserAgent
	}
	if o.ConnectTimeout <= 0 {
		o.ConnectTimeout = DefaultConnectTimeout
	}
	if o.HeaderTimeout <= 0 {
		o.HeaderTimeout = DefaultHeaderTimeout
	}
	if o.RequestTimeout <= 0 {
		o.RequestTimeout = DefaultRequestTimeout
	}
	o.Clock = clock.Or(o.Clock)
	if o.AssetHosts == nil {
		o.AssetHosts = DefaultAssetHosts
	}
	o.Token = strings.TrimSpace(o.Token)
	return o
}

// Client asks GitHub for the latest release of an app. It is safe for
// concurrent use, though the service asks for one app at a time.
type Client struct {
	hc      *http.Client
	base    *url.URL
	agent   string
	token   string // trimmed; "" for none
	timeout time.Duration
	clock   clock.Clock

	assetHosts []string // lowercase
}

// New returns a Client for the API at o.BaseURL, which pkg/config checked
// (CRAFT_APPS_RELEASE_GITHUB_API_URL: an absolute http or https URL, and
// http:// with a token only to a loopback address). It fails only when the
// URL does not parse. It sends nothing.
func New(o Options) (*Client, error) {
	o = o.withDefaults()
	base, err := url.Parse(o.BaseURL)
	if err != nil {
		return nil, fmt.Errorf("github api url: %w", err)
	}
	// go-github resolves "repos/…" against the base URL, which must end in
	// "/". Its WithEnterpriseURLs is not used: it appends "api/v3/" to any
	// host not named "api.*", which would break a fake on 127.0.0.1.
	if !strings.HasSuffix(base.Path, "/") {
		base.Path += "/"
	}

	dialer := &net.Dialer{Timeout: o.ConnectTimeout, KeepAlive: 30 * time.Second}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.DialContext = dialer.DialContext
	tr.TLSHandshakeTimeout = o.ConnectTimeout
	tr.ResponseHeaderTimeout = o.HeaderTimeout
	tr.MaxResponseHeaderBytes = MaxHeaderBytes
	hc := &http.Client{
		Transport: capped{tr},
		// A renamed repository answers 301: it is reported as a failure, so
		// that the configured repository is fixed, rather than followed to a
		// release whose URLs would all fail the repository filter.
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
	hosts := make([]string, len(o.AssetHosts))
	for i, h := range o.AssetHosts {
		hosts[i] = strings.ToLower(h)
	}
	return &Client{hc: hc, base: base, agent: o.UserAgent, token: o.Token, timeout: o.RequestTimeout, clock: o.Clock,
		assetHosts: hosts}, nil
}

// gh returns a go-github client for one request. A fresh one each time,
// because a shared one remembers the last answer's rate headers and refuses
// to send until their reset: an answer with only x-ratelimit-reset would then
// stop every app, and a Retry-After shorter than the reset would be ignored.
// The fleet backoff is what remembers a rate limit.
func (c *Client) gh() *gogithub.Client {
	gh := gogithub.NewClient(c.hc)
	gh.BaseURL = c.base
	gh.UserAgent = c.agent
	return gh
}

// Latest asks GitHub for the latest release of app.Repo, revalidating etag
// (sent as If-None-Match when it is an entity tag of at most MaxETag bytes),
// or, for an entry of the pre-release channel, for the release list and its
// newest pre-release (ParsePrereleases), or, for a history entry, for the
// same list and its releases (ParseHistory, in Answer.History). It classifies the answer as
// docs/github.md, "Classifying the answer" says: a Fetched release is
// filtered by ParseRelease, a failure never carries a release, and no error,
// ETag or release returned contains the token. Remaining and Reset report
// the quota the answer announced (Remaining -1 when unknown). The request is
// bounded by the request timeout; when ctx ends first the answer is Failed
// and its Err wraps ctx's error. Latest is safe for concurrent use.
func (c *Client) Latest(ctx context.Context, app release.App, etag string) release.Answer {
	a := c.latest(ctx, app, etag)
	if a.Err != nil {
		a.Err = c.redact(a.Err)
	}
	return a
}

// request is one of the GETs: its path under the repository and the parser
// of its 200's body into the fields of a Fetched answer (Release and Assets,
// or History and HistoryAssets).
type request struct {
	what  string // in errors: "latest release" or "releases"
	path  string // after repos/org/project/
	parse func(app release.App, body []byte) (release.Answer, error)
}

var (
	latestRequest  = request{"latest release", "releases/latest", one(parseRelease)}
	listRequest    = request{"releases", listPath, one(parsePrereleases)}
	historyRequest = request{"releases", listPath, parseHistoryAnswer}
)

// listPath is the release list's first page, ListSize releases long.
var listPath = "releases?per_page=" + strconv.Itoa(ListSize)

// one is a parser of one release as a request's parser.
func one(parse func(release.App, []byte) (*release.Release, map[string]release.AssetRef, error)) func(release.App, []byte) (release.Answer, error) {
	return func(app release.App, body []byte) (release.Answer, error) {
		rel, refs, err := parse(app, body)
		return release.Answer{Release: rel, Assets: refs}, err
	}
}

func parseHistoryAnswer(app release.App, body []byte) (release.Answer, error) {
	h, refs, err := parseHistory(app, body)
	return release.Answer{History: h, HistoryAssets: refs}, err
}

func (c *Client) latest(ctx context.Context, app release.App, etag string) release.Answer {
	gh, repo := c.gh(), app.Repo
	rq := latestRequest
	switch app.Channel {
	case release.Prerelease:
		rq = listRequest
	case release.HistoryChannel:
		rq = historyRequest
	}
	req, err := c.newRequest(gh, rq, repo, etag)
	if err != nil {
		return failed(err)
	}
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()

	resp, err := gh.BareDo(ctx, req)
	if resp == nil || resp.Response == nil {
		return unsent(rq, repo, err)
	}
	defer resp.Body.Close()

	// Every answer, failed ones included, reports the quota it announced.
	a := quota(resp.Header)
	fail := func(err error) release.Answer {
		a.Outcome, a.Err = release.Failed, err
		return a
	}
	switch code := resp.StatusCode; code {
	case http.StatusOK:
		got, err := c.readRelease(rq, app, resp.Response)
		if err != nil {
			return fail(fmt.Errorf("%s %s: %w", rq.what, repo, err))
		}
		etag := resp.Header.Get("ETag")
		if c.token != "" && strings.Contains(etag, c.token) {
			return fail(fmt.Errorf("%s %s: the etag contains the token", rq.what, repo))
		}
		if !validETag(etag) {
			etag = ""
		}
		a.Outcome, a.ETag = release.Fetched, etag
		a.Release, a.Assets, a.History, a.HistoryAssets = got.Release, got.Assets, got.History, got.HistoryAssets
	case http.StatusNotModified:
		if !validETag(etag) {
			return fail(fmt.Errorf("%s %s: HTTP 304 to a request without If-None-Match", rq.what, repo))
		}
		a.Outcome = release.NotModified
	case http.StatusNotFound:
		a.Outcome, a.Err = release.NotFound, fmt.Errorf("%s %s: HTTP 404", rq.what, repo)
	case http.StatusForbidden, http.StatusTooManyRequests:
		var abuse *gogithub.AbuseRateLimitError
		if !rateLimitSignal(code, resp.Header) && !errors.As(err, &abuse) {
			return fail(fmt.Errorf("%s %s: HTTP %d", rq.what, repo, code))
		}
		a.Outcome = release.RateLimited
		a.RetryAt = retryAt(resp.Header, c.clock.Now())
		a.Err = fmt.Errorf("%s %s: rate limited (HTTP %d)", rq.what, repo, code)
	default:
		return fail(fmt.Errorf("%s %s: HTTP %d", rq.what, repo, code))
	}
	return a
}

// newRequest builds the GET rq, with every header docs/github.md asks for.
func (c *Client) newRequest(gh *gogithub.Client, rq request, repo, etag string) (*http.Request, error) {
	org, project, ok := strings.Cut(repo, "/")
	if !ok || org == "" || project == "" || strings.Contains(project, "/") {
		return nil, fmt.Errorf("%s %q: repo is not org/project", rq.what, repo)
	}
	path := "repos/" + url.PathEscape(org) + "/" + url.PathEscape(project) + "/" + rq.path
	req, err := gh.NewRequest(http.MethodGet, path, nil)
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", rq.what, repo, err)
	}
	// go-github's NewRequest asks for the v3 media type; GitHub documents this one.
	req.Header.Set("Accept", mediaType)
	req.Header.Set("X-GitHub-Api-Version", apiVersion)
	if validETag(etag) {
		req.Header["If-None-Match"] = []string{etag}
	}
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	return req, nil
}

// readRelease reads and parses a 200's body to rq about app, into the
// fields of a Fetched answer.
func (c *Client) readRelease(rq request, app release.App, resp *http.Response) (release.Answer, error) {
	if resp.ContentLength > MaxBody {
		return release.Answer{}, fmt.Errorf("body of %d bytes is over %d", resp.ContentLength, MaxBody)
	}
	// The transport caps the body at MaxBody+1 bytes: one more than allowed
	// tells a body at the limit from a longer one without reading on.
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return release.Answer{}, fmt.Errorf("read body: %w", err)
	}
	if len(body) > MaxBody {
		return release.Answer{}, fmt.Errorf("body is over %d bytes", MaxBody)
	}
	got, err := rq.parse(app, body)
	if err != nil {
		return release.Answer{}, err
	}
	if c.token != "" {
		for _, rel := range append([]*release.Release{got.Release}, got.History.List()...) {
			if rel == nil {
				continue
			}
			b, err := release.Marshal(rel)
			if err != nil {
				return release.Answer{}, fmt.Errorf("encode release: %w", err)
			}
			if bytes.Contains(b, []byte(c.token)) {
				return release.Answer{}, errors.New("the release contains the token")
			}
		}
	}
	return got, nil
}

// validETag reports whether etag is an entity tag (RFC 9110 §8.8.3: an
// optional W/, then a quoted string of visible ASCII but '"') of at most
// MaxETag bytes.
func validETag(etag string) bool {
	if len(etag) > MaxETag {
		return false
	}
	opaque := strings.TrimPrefix(etag, "W/")
	if len(opaque) < 2 || opaque[0] != '"' || opaque[len(opaque)-1] != '"' {
		return false
	}
	for _, c := range []byte(opaque[1 : len(opaque)-1]) {
		if c < 0x21 || c == '"' || c > 0x7e {
			return false
		}
	}
	return true
}

// unsent classifies a request that got no answer from GitHub: a transport
// error, a timeout or a cancellation. (go-github's refusal to send while it
// remembers a spent limit cannot happen: each request has a fresh client.)
func unsent(rq request, repo string, err error) release.Answer {
	if err == nil {
		return failed(fmt.Errorf("%s %s: no answer", rq.what, repo))
	}
	return failed(fmt.Errorf("%s %s: %w", rq.what, repo, err))
}

// redact removes the token from err's message. The result does not wrap err,
// so that unwrapping cannot bring the token back.
func (c *Client) redact(err error) error {
	if c.token == "" || !strings.Contains(err.Error(), c.token) {
		return err
	}
	return errors.New(strings.ReplaceAll(err.Error(), c.token, "[REDACTED]"))
}

func failed(err error) release.Answer {
	return release.Answer{Outcome: release.Failed, Err: err, Remaining: -1}
}

// quota reads the x-ratelimit-* headers into an Answer.
func quota(h http.Header) release.Answer {
	a := release.Answer{Remaining: -1}
	if n, ok := seconds(h.Get("X-RateLimit-Remaining")); ok && n <= 1<<31 {
		a.Remaining = int(n)
	}
	if t, ok := resetAt(h); ok {
		a.Reset = t
	}
	return a
}

// rateLimitSignal reports whether a 403 or 429 says the rate limit is spent.
func rateLimitSignal(status int, h http.Header) bool {
	if status == http.StatusTooManyRequests {
		return true
	}
	if n, ok := seconds(h.Get("X-RateLimit-Remaining")); ok && n == 0 {
		return true
	}
	_, ok := retryAfter(h)
	return ok
}

// retryAt is when GitHub allows the next request: now plus Retry-After, else
// x-ratelimit-reset, else zero.
func retryAt(h http.Header, now time.Time) time.Time {
	if d, ok := retryAfter(h); ok {
		return now.Add(d).UTC()
	}
	if t, ok := resetAt(h); ok {
		return t
	}
	return time.Time{}
}

// retryAfter reads a Retry-After of whole seconds, clamped to MaxRetryAfter;
// an HTTP date or anything else is not one.
func retryAfter(h http.Header) (time.Duration, bool) {
	v := h.Get("Retry-After")
	n, ok := seconds(v)
	if !ok {
		// All digits but too big for uint64 is still a number of seconds.
		if v == "" || strings.Trim(v, "0123456789") != "" {
			return 0, false
		}
		n = ^uint64(0)
	}
	return time.Duration(min(n, uint64(MaxRetryAfter/time.Second))) * time.Second, true
}

// resetAt reads x-ratelimit-reset, Unix seconds greater than zero. A value
// tens of thousands of years ahead is garbage, not a time.
func resetAt(h http.Header) (time.Time, bool) {
	n, ok := seconds(h.Get("X-RateLimit-Reset"))
	if !ok || n == 0 || n > 1<<40 {
		return time.Time{}, false
	}
	return time.Unix(int64(n), 0).UTC(), true
}

// seconds parses a non-negative decimal integer made of digits only.
func seconds(s string) (uint64, bool) {
	if s == "" || strings.Trim(s, "0123456789") != "" {
		return 0, false
	}
	n, err := strconv.ParseUint(s, 10, 64)
	return n, err == nil
}

// capped is the transport: it caps every body at MaxBody+1 bytes, including
// the error bodies go-github reads whole.
type capped struct{ next http.RoundTripper }

func (c capped) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := c.next.RoundTrip(req)
	if err != nil {
		return nil, err
	}
	resp.Body = cappedBody{io.LimitReader(resp.Body, MaxBody+1), resp.Body}
	return resp, nil
}

type cappedBody struct {
	io.Reader
	io.Closer
}
