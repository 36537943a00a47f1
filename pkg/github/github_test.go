package github_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/storytold/craft-releases/pkg/github"
	"github.com/storytold/craft-releases/pkg/release"
	"github.com/storytold/craft-releases/test/fakeclock"
	"github.com/storytold/craft-releases/test/fakegithub"
)

// now is the clients' injected clock.
var now = time.Date(2026, 10, 10, 12, 0, 0, 0, time.UTC)

var app = release.App{Key: "photocraft", Name: "PhotoCraft", Repo: repo}

// newClient returns a client of gh with the test clock; o's zero fields take
// the defaults.
func newClient(t testing.TB, gh *fakegithub.Server, o github.Options) *github.Client {
	t.Helper()
	if o.BaseURL == "" {
		o.BaseURL = gh.URL()
	}
	if o.Clock == nil {
		o.Clock = fakeclock.New(now)
	}
	c, err := github.New(o)
	if err != nil {
		t.Fatalf("github.New(BaseURL %q): %v", o.BaseURL, err)
	}
	return c
}

func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

func TestLatestClassification(t *testing.T) {
	reset := time.Unix(1_900_000_000, 0).UTC()
	quota := &fakegithub.Quota{Limit: 60, Remaining: 59, Reset: reset}
	noQuota := &fakegithub.Quota{}
	date := now.Add(time.Hour).Format(http.TimeFormat)
	header := func(kv ...string) http.Header {
		h := http.Header{}
		for i := 0; i < len(kv); i += 2 {
			h.Set(kv[i], kv[i+1])
		}
		return h
	}
	status := func(code int, kv ...string) *fakegithub.Fault {
		f := fakegithub.Status(code)
		f.Header = header(kv...)
		return &f
	}
	fault := func(f fakegithub.Fault) *fakegithub.Fault { return &f }
	withHeader := func(f fakegithub.Fault, kv ...string) *fakegithub.Fault {
		f.Header = header(kv...)
		return &f
	}
	big := fakegithub.Oversized(5 << 20)
	big.Header = header("Content-Length", strconv.Itoa(5<<20))

	tests := []struct {
		name      string
		publish   bool
		fault     *fakegithub.Fault // stuck for the repo
		quota     *fakegithub.Quota // nil: the fake's default
		etag      string            // sent; "current" is the fake's ETag
		opts      github.Options
		want      release.Outcome
		wantRel   bool
		wantETag  string // "current" is the fake's ETag
		wantRetry time.Time
		wantErr   string // a substring of Err; "" wants no Err
		wantIs    error
	}{
		{name: "200", publish: true, want: release.Fetched, wantRel: true, wantETag: "current"},
		{name: "200 revalidated with an old etag", publish: true, etag: `"old"`, want: release.Fetched, wantRel: true, wantETag: "current"},
		{name: "304", publish: true, etag: "current", want: release.NotModified},
		{name: "304 to an unconditional request", fault: status(304), want: release.Failed, wantErr: "HTTP 304"},
		{name: "404 no release", want: release.NotFound, wantErr: "HTTP 404"},
		{name: "404 clears the etag", etag: `"old"`, want: release.NotFound, wantErr: "HTTP 404"},

		{name: "429 retry-after seconds", fault: fault(fakegithub.TooManyRequests("120")), quota: quota,
			want: release.RateLimited, wantRetry: now.Add(120 * time.Second), wantErr: "rate limited (HTTP 429)"},
		{name: "429 retry-after 0", fault: fault(fakegithub.TooManyRequests("0")), quota: quota,
			want: release.RateLimited, wantRetry: now, wantErr: "rate limited"},
		{name: "429 retry-after a day", fault: fault(fakegithub.TooManyRequests("86400")),
			want: release.RateLimited, wantRetry: now.Add(24 * time.Hour), wantErr: "rate limited"},
		{name: "429 retry-after over a day is clamped", fault: fault(fakegithub.TooManyRequests("86401")),
			want: release.RateLimited, wantRetry: now.Add(24 * time.Hour), wantErr: "rate limited"},
		{name: "429 retry-after past uint64 is clamped", fault: fault(fakegithub.TooManyRequests("99999999999999999999999")),
			want: release.RateLimited, wantRetry: now.Add(24 * time.Hour), wantErr: "rate limited"},
		{name: "429 http-date retry-after falls back to the reset", fault: fault(fakegithub.TooManyRequests(date)), quota: quota,
			want: release.RateLimited, wantRetry: reset, wantErr: "rate limited"},
		{name: "429 without retry-after uses the reset", fault: fault(fakegithub.TooManyRequests("")), quota: quota,
			want: release.RateLimited, wantRetry: reset, wantErr: "rate limited"},
		{name: "429 with nothing known", fault: fault(fakegithub.TooManyRequests("")), quota: noQuota,
			want: release.RateLimited, wantErr: "rate limited"},
		{name: "429 with only an http-date", fault: fault(fakegithub.TooManyRequests(date)), quota: noQuota,
			want: release.RateLimited, wantErr: "rate limited"},

		{name: "403 remaining 0 with reset", fault: fault(fakegithub.RateLimit(reset)),
			want: release.RateLimited, wantRetry: reset, wantErr: "rate limited (HTTP 403)"},
		{name: "403 remaining 0 without reset", fault: fault(fakegithub.RateLimit(time.Time{})),
			want: release.RateLimited, wantErr: "rate limited (HTTP 403)"},
		{name: "403 retry-after seconds", fault: status(403, "Retry-After", "30"), quota: quota,
			want: release.RateLimited, wantRetry: now.Add(30 * time.Second), wantErr: "rate limited"},
		{name: "403 retry-after before the reset", fault: withHeader(fakegithub.RateLimit(reset), "X-Ratelimit-Remaining", "0", "X-Ratelimit-Reset", "1900000000", "Retry-After", "30"),
			want: release.RateLimited, wantRetry: now.Add(30 * time.Second), wantErr: "rate limited"},
		{name: "403 secondary rate limit", fault: fault(fakegithub.SecondaryRateLimit("")), quota: noQuota,
			want: release.RateLimited, wantErr: "rate limited"},
		{name: "403 secondary rate limit with retry-after", fault: fault(fakegithub.SecondaryRateLimit("60")),
			want: release.RateLimited, wantRetry: now.Add(time.Minute), wantErr: "rate limited"},
		{name: "403 without a signal", fault: status(403), quota: quota, want: release.Failed, wantErr: "HTTP 403"},
		{name: "403 http-date retry-after is no signal", fault: status(403, "Retry-After", date), quota: quota,
			want: release.Failed, wantErr: "HTTP 403"},
		{name: "403 negative retry-after is no signal", fault: status(403, "Retry-After", "-5"), quota: quota,
			want: release.Failed, wantErr: "HTTP 403"},
		{name: "403 remaining 1 is no signal", fault: status(403, "X-Ratelimit-Remaining", "1"),
			want: release.Failed, wantErr: "HTTP 403"},
		{name: "503 with retry-after is no rate limit", fault: status(503, "Retry-After", "30"),
			want: release.Failed, wantErr: "HTTP 503"},

		{name: "500", fault: fault(fakegithub.ServerError()), want: release.Failed, wantErr: "HTTP 500"},
		{name: "502", fault: status(502), want: release.Failed, wantErr: "HTTP 502"},
		{name: "401", fault: status(401), want: release.Failed, wantErr: "HTTP 401"},
		{name: "410", fault: status(410), want: release.Failed, wantErr: "HTTP 410"},
		{name: "202", fault: status(202), want: release.Failed, wantErr: "HTTP 202"},
		{name: "204", fault: &fakegithub.Fault{Status: 204}, want: release.Failed, wantErr: "HTTP 204"},
		{name: "301 is not followed", publish: true,
			fault: status(301, "Location", "/repos/storytold/photocraft/releases/latest?moved=1"),
			want:  release.Failed, wantErr: "HTTP 301"},

		{name: "malformed json", fault: fault(fakegithub.Malformed()), want: release.Failed, wantErr: "decode release"},
		{name: "not json", fault: fault(fakegithub.Raw("<html>unicorn</html>")), want: release.Failed, wantErr: "decode release"},
		{name: "wrong type", fault: fault(fakegithub.Raw(`{"tag_name":"v1","prerelease":"yes"}`)), want: release.Failed, wantErr: "decode release"},
		{name: "draft", fault: fault(fakegithub.Raw(`{"tag_name":"v1","draft":true}`)), want: release.Failed, wantErr: "draft"},
		{name: "no tag", fault: fault(fakegithub.Raw(`{"name":"v1"}`)), want: release.Failed, wantErr: "tag_name"},
		{name: "raw good release", fault: fault(fakegithub.Raw(`{"tag_name":"v1"}`)),
			want: release.Fetched, wantRel: true, wantETag: `"` /* some strong etag */},
		{name: "body of exactly 4 MiB", fault: fault(fakegithub.Oversized(github.MaxBody)),
			want: release.Fetched, wantRel: true, wantETag: `"`},
		{name: "body one byte over 4 MiB", fault: fault(fakegithub.Oversized(github.MaxBody + 1)),
			want: release.Failed, wantErr: "body is over 4194304 bytes"},
		{name: "5 MiB body", fault: fault(fakegithub.Oversized(5 << 20)),
			want: release.Failed, wantErr: "body is over 4194304 bytes"},
		{name: "5 MiB body announced", fault: &big,
			want: release.Failed, wantErr: "body of 5242880 bytes is over 4194304"},
		{name: "5 MiB error body", fault: &fakegithub.Fault{Status: 500, Body: fakegithub.Oversized(5 << 20).Body},
			want: release.Failed, wantErr: "HTTP 500"},

		{name: "slow answer hits the request timeout", publish: true, fault: fault(fakegithub.Slow(time.Hour)),
			opts: github.Options{RequestTimeout: 200 * time.Millisecond},
			want: release.Failed, wantErr: "deadline exceeded", wantIs: context.DeadlineExceeded},
		{name: "connection closed", publish: true, fault: fault(fakegithub.CloseConn()), want: release.Failed, wantErr: "EOF"},
		{name: "connection reset", publish: true, fault: fault(fakegithub.ResetConn()), want: release.Failed, wantErr: "reset"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			gh := fakegithub.New(t)
			if tt.publish {
				gh.Publish(repo, fakegithub.NewRelease(repo, "v0.5.0"))
			}
			if tt.fault != nil {
				gh.Stick(repo, *tt.fault)
			}
			if tt.quota != nil {
				gh.SetQuota(*tt.quota)
			}
			etag := tt.etag
			if etag == "current" {
				etag = gh.ETag(repo)
			}
			wantETag := tt.wantETag
			if wantETag == "current" {
				wantETag = gh.ETag(repo)
			}

			a := newClient(t, gh, tt.opts).Latest(context.Background(), app, etag)

			if a.Outcome != tt.want {
				t.Errorf("outcome = %v (err %v), want %v", a.Outcome, a.Err, tt.want)
			}
			if got := a.Release != nil; got != tt.wantRel {
				t.Errorf("release present = %v, want %v", got, tt.wantRel)
			}
			if wantETag == `"` {
				if !strings.HasPrefix(a.ETag, `"`) {
					t.Errorf("ETag = %q, want a strong ETag", a.ETag)
				}
			} else if a.ETag != wantETag {
				t.Errorf("ETag = %q, want %q", a.ETag, wantETag)
			}
			if !a.RetryAt.Equal(tt.wantRetry) {
				t.Errorf("RetryAt = %v, want %v", a.RetryAt, tt.wantRetry)
			}
			if got := errText(a.Err); (tt.wantErr == "") != (got == "") || !strings.Contains(got, tt.wantErr) {
				t.Errorf("Err = %q, want one containing %q", got, tt.wantErr)
			}
			if tt.wantIs != nil && !errors.Is(a.Err, tt.wantIs) {
				t.Errorf("Err = %v, want it to wrap %v", a.Err, tt.wantIs)
			}
			if n := gh.Count(repo); n != 1 {
				t.Errorf("the fake got %d requests, want 1", n)
			}
		})
	}
}

func TestLatestHeaders(t *testing.T) {
	tests := []struct {
		name      string
		token     string
		userAgent string
		etag      string
		wantAuth  string // "" wants no Authorization header at all
		wantUA    string
	}{
		{name: "no token", wantUA: github.DefaultUserAgent},
		{name: "whitespace token", token: " \t\n ", wantUA: github.DefaultUserAgent},
		{name: "token", token: "ghp_abc123", wantAuth: "Bearer ghp_abc123", wantUA: github.DefaultUserAgent},
		{name: "token trimmed", token: "  ghp_abc123\n", wantAuth: "Bearer ghp_abc123", wantUA: github.DefaultUserAgent},
		{name: "user agent", userAgent: "craft-releases/1.2 (poller)", wantUA: "craft-releases/1.2 (poller)"},
		{name: "etag verbatim", etag: `"0123abc"`, wantUA: github.DefaultUserAgent},
		{name: "weak etag verbatim", etag: `W/"0123abc"`, wantUA: github.DefaultUserAgent},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			gh := fakegithub.New(t)
			c := newClient(t, gh, github.Options{Token: tt.token, UserAgent: tt.userAgent})
			c.Latest(context.Background(), app, tt.etag)
			reqs := gh.Requests()
			if len(reqs) != 1 {
				t.Fatalf("%d requests, want 1", len(reqs))
			}
			r := reqs[0]
			checks := []struct{ name, got, want string }{
				{"method", r.Method, http.MethodGet},
				{"path", r.Path, "/repos/storytold/photocraft/releases/latest"},
				{"Authorization", r.Authorization, tt.wantAuth},
				{"User-Agent", r.UserAgent, tt.wantUA},
				{"Accept", r.Accept, "application/vnd.github+json"},
				{"X-GitHub-Api-Version", r.APIVersion, "2022-11-28"},
				{"If-None-Match", r.IfNoneMatch, tt.etag},
			}
			for _, c := range checks {
				if c.got != c.want {
					t.Errorf("%s = %q, want %q", c.name, c.got, c.want)
				}
			}
			if _, ok := r.Header["Authorization"]; ok != (tt.wantAuth != "") {
				t.Errorf("Authorization header present = %v, want %v", ok, tt.wantAuth != "")
			}
			if _, ok := r.Header["If-None-Match"]; ok != (tt.etag != "") {
				t.Errorf("If-None-Match header present = %v, want %v", ok, tt.etag != "")
			}
		})
	}
}

// TestLatestTagPrefix: the release Latest returns has its version by the
// app's tag prefix.
func TestLatestTagPrefix(t *testing.T) {
	gh := fakegithub.New(t)
	c := newClient(t, gh, github.Options{})
	gh.Publish(repo, fakegithub.NewRelease(repo, "artcraft-v0.41.0"))
	artcraft := app
	artcraft.TagPrefix = "artcraft-v"
	a := c.Latest(context.Background(), artcraft, "")
	if a.Outcome != release.Fetched || a.Release == nil || a.Release.Version != "0.41.0" {
		t.Fatalf("Latest = %v %+v (err %v), want fetched version 0.41.0", a.Outcome, a.Release, a.Err)
	}
}

func TestLatestRevalidation(t *testing.T) {
	gh := fakegithub.New(t)
	c := newClient(t, gh, github.Options{})
	gh.Publish(repo, fakegithub.NewRelease(repo, "v0.5.0"))

	first := c.Latest(context.Background(), app, "")
	if first.Outcome != release.Fetched || first.Release == nil || first.Release.Tag != "v0.5.0" {
		t.Fatalf("first = %v %+v (err %v), want fetched v0.5.0", first.Outcome, first.Release, first.Err)
	}
	if first.ETag == "" || first.ETag != gh.ETag(repo) {
		t.Fatalf("first ETag = %q, want the fake's %q", first.ETag, gh.ETag(repo))
	}

	second := c.Latest(context.Background(), app, first.ETag)
	if second.Outcome != release.NotModified || second.Release != nil || second.Err != nil {
		t.Errorf("second = %v %+v (err %v), want not modified", second.Outcome, second.Release, second.Err)
	}

	gh.Publish(repo, fakegithub.NewRelease(repo, "v0.6.0"))
	third := c.Latest(context.Background(), app, first.ETag)
	if third.Outcome != release.Fetched || third.Release == nil || third.Release.Tag != "v0.6.0" {
		t.Errorf("third = %v %+v (err %v), want fetched v0.6.0", third.Outcome, third.Release, third.Err)
	}
	if third.ETag == first.ETag || third.ETag != gh.ETag(repo) {
		t.Errorf("third ETag = %q, want the new %q", third.ETag, gh.ETag(repo))
	}

	reqs := gh.Requests()
	wantINM := []string{"", first.ETag, first.ETag}
	if len(reqs) != len(wantINM) {
		t.Fatalf("%d requests, want %d", len(reqs), len(wantINM))
	}
	for i, r := range reqs {
		if r.IfNoneMatch != wantINM[i] {
			t.Errorf("request %d: If-None-Match = %q, want %q", i, r.IfNoneMatch, wantINM[i])
		}
	}
}

func TestLatestQuota(t *testing.T) {
	reset := time.Unix(1_900_000_000, 0).UTC()
	tests := []struct {
		name          string
		quota         fakegithub.Quota
		fault         *fakegithub.Fault
		wantRemaining int
		wantReset     time.Time
	}{
		{"announced", fakegithub.Quota{Limit: 60, Remaining: 42, Reset: reset}, nil, 42, reset},
		{"on a failure", fakegithub.Quota{Limit: 60, Remaining: 41, Reset: reset}, &fakegithub.Fault{Status: 500}, 41, reset},
		{"on a rate limit", fakegithub.Quota{Limit: 60, Remaining: 40, Reset: reset}, &fakegithub.Fault{Status: 429}, 40, reset},
		{"not announced", fakegithub.Quota{}, nil, -1, time.Time{}},
		{"garbage", fakegithub.Quota{}, &fakegithub.Fault{Header: http.Header{
			"X-Ratelimit-Remaining": {"many"}, "X-Ratelimit-Reset": {"soon"},
		}}, -1, time.Time{}},
		{"negative", fakegithub.Quota{}, &fakegithub.Fault{Header: http.Header{
			"X-Ratelimit-Remaining": {"-1"}, "X-Ratelimit-Reset": {"-5"},
		}}, -1, time.Time{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			gh := fakegithub.New(t)
			gh.Publish(repo, fakegithub.NewRelease(repo, "v1.0.0"))
			gh.SetQuota(tt.quota)
			if tt.fault != nil {
				gh.Stick(repo, *tt.fault)
			}
			a := newClient(t, gh, github.Options{}).Latest(context.Background(), app, "")
			if a.Remaining != tt.wantRemaining {
				t.Errorf("Remaining = %d, want %d", a.Remaining, tt.wantRemaining)
			}
			if !a.Reset.Equal(tt.wantReset) {
				t.Errorf("Reset = %v, want %v", a.Reset, tt.wantReset)
			}
		})
	}
}

// TestLatestKeepsNoRateLimitMemory checks that every request is sent and
// classified by its own answer: go-github's habit of refusing to send until a
// remembered reset would turn an answer with only x-ratelimit-reset into a
// stop for every app, and would stretch a short Retry-After to the reset. The
// fleet backoff is what remembers a rate limit.
func TestLatestKeepsNoRateLimitMemory(t *testing.T) {
	// go-github compares with the real clock, so the reset is a real future time.
	reset := time.Now().Add(time.Hour).Truncate(time.Second).UTC()
	resetOnly := http.Header{
		"X-Ratelimit-Reset":     {strconv.FormatInt(reset.Unix(), 10)},
		"X-Ratelimit-Remaining": nil,
		"X-Ratelimit-Limit":     nil,
	}
	tests := []struct {
		name  string
		setup func(gh *fakegithub.Server)
		first release.Outcome
	}{
		{"after a 403 rate limit", func(gh *fakegithub.Server) {
			gh.Queue(repo, fakegithub.RateLimit(reset))
		}, release.RateLimited},
		{"after a 429 with a short Retry-After and a far reset", func(gh *fakegithub.Server) {
			f := fakegithub.TooManyRequests("1")
			f.Header.Set("X-Ratelimit-Remaining", "0")
			f.Header.Set("X-Ratelimit-Reset", strconv.FormatInt(reset.Unix(), 10))
			gh.Queue(repo, f)
		}, release.RateLimited},
		{"after a 200 that spent the last request", func(gh *fakegithub.Server) {
			gh.Queue(repo, fakegithub.Fault{Header: http.Header{"X-Ratelimit-Remaining": {"0"},
				"X-Ratelimit-Reset": {strconv.FormatInt(reset.Unix(), 10)}}})
		}, release.Fetched},
		{"after a 500 with only x-ratelimit-reset", func(gh *fakegithub.Server) {
			gh.Queue(repo, fakegithub.Fault{Status: http.StatusInternalServerError, Header: resetOnly})
		}, release.Failed},
		{"after a 403 with only x-ratelimit-reset", func(gh *fakegithub.Server) {
			gh.Queue(repo, fakegithub.Fault{Status: http.StatusForbidden, Header: resetOnly})
		}, release.Failed},
		{"after a secondary rate limit", func(gh *fakegithub.Server) {
			gh.Queue(repo, fakegithub.SecondaryRateLimit("3600"))
		}, release.RateLimited},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			gh := fakegithub.New(t)
			gh.Publish(repo, fakegithub.NewRelease(repo, "v1.0.0"))
			tt.setup(gh)
			c := newClient(t, gh, github.Options{})

			if a := c.Latest(context.Background(), app, ""); a.Outcome != tt.first {
				t.Fatalf("first outcome = %v (err %v), want %v", a.Outcome, a.Err, tt.first)
			}
			if a := c.Latest(context.Background(), app, ""); a.Outcome != release.Fetched {
				t.Errorf("second outcome = %v (err %v), want fetched", a.Outcome, a.Err)
			}
			if n := gh.Count(repo); n != 2 {
				t.Errorf("the fake got %d requests, want 2: the second must be sent", n)
			}
		})
	}
}

func TestLatestTransportFailures(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	refused := "http://" + l.Addr().String() + "/"
	l.Close()

	gh := fakegithub.New(t)
	gh.Publish(repo, fakegithub.NewRelease(repo, "v1.0.0"))
	tests := []struct {
		name    string
		opts    github.Options
		app     release.App
		wantErr string
		sent    bool
	}{
		{"connection refused", github.Options{BaseURL: refused}, app, "refused", false},
		{"connect timeout", github.Options{ConnectTimeout: time.Nanosecond}, app, "i/o timeout", false},
		{"repo without a slash", github.Options{}, release.App{Repo: "photocraft"}, "not org/project", false},
		{"repo with two slashes", github.Options{}, release.App{Repo: "storytold/photo/craft"}, "not org/project", false},
		{"repo without org", github.Options{}, release.App{Repo: "/photocraft"}, "not org/project", false},
		{"repo without project", github.Options{}, release.App{Repo: "storytold/"}, "not org/project", false},
		{"repo empty", github.Options{}, release.App{}, "not org/project", false},
		{"repo with a query", github.Options{}, release.App{Repo: "storytold/photocraft?x=1"}, "", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			gh.Reset()
			a := newClient(t, gh, tt.opts).Latest(context.Background(), tt.app, "")
			if tt.sent {
				if n := gh.Count(fakegithub.AnyRepo); n != 1 {
					t.Fatalf("%d requests, want 1", n)
				}
				if got := gh.Requests()[0].Path; got != "/repos/storytold/photocraft?x=1/releases/latest" {
					t.Errorf("path = %q, want the query escaped into the path", got)
				}
				return
			}
			if a.Outcome != release.Failed {
				t.Errorf("outcome = %v, want failed", a.Outcome)
			}
			if !strings.Contains(errText(a.Err), tt.wantErr) {
				t.Errorf("Err = %v, want one containing %q", a.Err, tt.wantErr)
			}
			if a.Remaining != -1 {
				t.Errorf("Remaining = %d, want -1", a.Remaining)
			}
			if n := gh.Count(fakegithub.AnyRepo); n != 0 {
				t.Errorf("the fake got %d requests, want none", n)
			}
		})
	}
}

func TestLatestCancelled(t *testing.T) {
	gh := fakegithub.New(t)
	gh.Publish(repo, fakegithub.NewRelease(repo, "v1.0.0"))
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	a := newClient(t, gh, github.Options{}).Latest(ctx, app, "")
	if a.Outcome != release.Failed || !errors.Is(a.Err, context.Canceled) {
		t.Errorf("outcome = %v, Err = %v; want failed wrapping context.Canceled", a.Outcome, a.Err)
	}
}

func TestLatestBaseURL(t *testing.T) {
	gh := fakegithub.New(t)
	tests := []struct {
		name, base, wantPath string
	}{
		{"with slash", gh.URL(), "/repos/storytold/photocraft/releases/latest"},
		{"without slash", strings.TrimSuffix(gh.URL(), "/"), "/repos/storytold/photocraft/releases/latest"},
		{"enterprise path", gh.URL() + "api/v3/", "/api/v3/repos/storytold/photocraft/releases/latest"},
		{"enterprise path without slash", gh.URL() + "api/v3", "/api/v3/repos/storytold/photocraft/releases/latest"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			gh.Reset()
			newClient(t, gh, github.Options{BaseURL: tt.base}).Latest(context.Background(), app, "")
			reqs := gh.Requests()
			if len(reqs) != 1 || reqs[0].Path != tt.wantPath {
				t.Errorf("requests = %+v, want one to %s", reqs, tt.wantPath)
			}
		})
	}
}

func TestLatestNeverLeaksToken(t *testing.T) {
	const token = "ghp_l3akCheck0123456789abcdefTOKEN"
	bearer := http.Header{"X-Echo": {"Bearer " + token}}
	tests := []struct {
		name  string
		fault fakegithub.Fault
	}{
		{"500 echoing the token", fakegithub.Fault{Status: 500, Header: bearer, Body: []byte(`{"message":"` + token + `"}`)}},
		{"403 echoing the token", fakegithub.Fault{Status: 403, Header: bearer, Body: []byte(`{"message":"bad ` + token + `"}`)}},
		{"429 with the token as retry-after", fakegithub.Fault{Status: 429, Header: http.Header{"Retry-After": {token}}}},
		{"redirect to the token", fakegithub.Fault{Status: 302, Header: http.Header{"Location": {"/" + token}}}},
		{"token in a bad published_at", fakegithub.Raw(`{"tag_name":"v1","published_at":"` + token + `"}`)},
		{"token in the tag", fakegithub.Raw(`{"tag_name":"` + token + `"}`)},
		{"token in the notes", fakegithub.Raw(`{"tag_name":"v1","body":"leaked: ` + token + `"}`)},
		{"escaped token in the notes", fakegithub.Raw(`{"tag_name":"v1","body":"leaked: \u0067` + token[1:] + `"}`)},
		{"token in the etag", fakegithub.Fault{Status: 200, Body: []byte(`{"tag_name":"v1"}`), Header: http.Header{"Etag": {`"` + token + `"`}}}},
	}
	check := func(t *testing.T, gh *fakegithub.Server, a release.Answer) {
		t.Helper()
		rel, _ := release.Marshal(a.Release)
		all := fmt.Sprintf("%v|%s|%s", a.Err, a.ETag, rel)
		if strings.Contains(all, token) {
			t.Errorf("the answer holds the token: %s", all)
		}
		if gh != nil {
			if got := gh.Requests()[0].Authorization; got != "Bearer "+token {
				t.Errorf("Authorization = %q, want the token sent", got)
			}
		}
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			gh := fakegithub.New(t)
			gh.Stick(repo, tt.fault)
			a := newClient(t, gh, github.Options{Token: token}).Latest(context.Background(), app, "")
			if a.Outcome == release.Fetched || a.Outcome == release.NotModified {
				t.Errorf("outcome = %v, want failed or rate limited", a.Outcome)
			}
			check(t, gh, a)
		})
	}
	t.Run("token in a transport error", func(t *testing.T) {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		base := "http://" + l.Addr().String() + "/" + token + "/"
		l.Close()
		c, err := github.New(github.Options{BaseURL: base, Token: token})
		if err != nil {
			t.Fatal(err)
		}
		a := c.Latest(context.Background(), app, "")
		if a.Outcome != release.Failed || !strings.Contains(errText(a.Err), "[REDACTED]") {
			t.Errorf("outcome %v, Err %v: want failed with the token redacted", a.Outcome, a.Err)
		}
		check(t, nil, a)
	})
}

// TestLiveGitHub asks the real GitHub once. It is opt-in.
func TestLiveGitHub(t *testing.T) {
	if os.Getenv("CRAFT_APPS_LIVE_GITHUB") != "1" {
		t.Skip("talks to the real GitHub: set CRAFT_APPS_LIVE_GITHUB=1 (and optionally CRAFT_APPS_RELEASE_GITHUB_TOKEN) to run it")
	}
	c, err := github.New(github.Options{Token: os.Getenv("CRAFT_APPS_RELEASE_GITHUB_TOKEN")})
	if err != nil {
		t.Fatal(err)
	}
	live := release.App{Key: "gh", Name: "GitHub CLI", Repo: "cli/cli"}
	a := c.Latest(context.Background(), live, "")
	if a.Outcome != release.Fetched || a.Release == nil {
		t.Fatalf("outcome = %v, release %v, err %v; want a fetched release", a.Outcome, a.Release != nil, a.Err)
	}
	checkRelease(t, live.Repo, a.Release)
	if a.ETag == "" || a.Remaining < 0 {
		t.Errorf("ETag = %q, Remaining = %d; want both from GitHub", a.ETag, a.Remaining)
	}
	if b := c.Latest(context.Background(), live, a.ETag); b.Outcome != release.NotModified {
		t.Errorf("revalidation outcome = %v (err %v), want not modified", b.Outcome, b.Err)
	}
}
