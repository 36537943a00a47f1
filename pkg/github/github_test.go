package github_test

import (
	"cmp"
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

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func TestLatestClassification(t *testing.T) {
	reset := time.Unix(1_900_000_000, 0).UTC()
	quota := &fakegithub.Quota{Limit: 60, Remaining: 59, Reset: reset}
	noQuota := &fakegithub.Quota{}
	date := now.Add(time.Hour).Format(http.TimeFormat)
	withHeader := func(f fakegithub.Fault, kv ...string) *fakegithub.Fault {
		f.Header = http.Header{}
		for i := 0; i < len(kv); i += 2 {
			f.Header.Set(kv[i], kv[i+1])
		}
		return &f
	}
	status := func(code int, kv ...string) *fakegithub.Fault { return withHeader(fakegithub.Status(code), kv...) }
	hdr := func(kv ...string) *fakegithub.Fault { return withHeader(fakegithub.Fault{}, kv...) }
	fetched, failed, limited := release.Fetched, release.Failed, release.RateLimited
	big := withHeader(fakegithub.Oversized(5<<20), "Content-Length", strconv.Itoa(5<<20))
	boundETag := `W/"` + strings.Repeat("e", github.MaxETag-4) + `"`

	tests := []struct {
		name           string
		publish        bool
		fault          *fakegithub.Fault // stuck for the repo
		quota          *fakegithub.Quota // nil: the fake's default
		etag, wantETag string            // sent and wanted; "current" is the fake's ETag
		opts           github.Options
		want           release.Outcome
		wantRel        bool
		wantRetry      time.Time
		wantErr        string // a substring of Err; "" wants no Err
		wantIs         error
	}{
		{name: "200", publish: true, want: fetched, wantRel: true, wantETag: "current"},
		{name: "200 revalidated with an old etag", publish: true, etag: `"old"`, want: fetched, wantRel: true, wantETag: "current"},
		{name: "304", publish: true, etag: "current", want: release.NotModified},
		{name: "304 to an unconditional request", fault: status(304), want: failed, wantErr: "HTTP 304"},
		{name: "404 no release", want: release.NotFound, wantErr: "HTTP 404"},
		{name: "404 clears the etag", etag: `"old"`, want: release.NotFound, wantErr: "HTTP 404"},

		{name: "429 retry-after seconds", fault: ptr(fakegithub.TooManyRequests("120")), quota: quota, want: limited, wantRetry: now.Add(120 * time.Second), wantErr: "rate limited (HTTP 429)"},
		{name: "429 retry-after 0", fault: ptr(fakegithub.TooManyRequests("0")), quota: quota, want: limited, wantRetry: now, wantErr: "rate limited"},
		{name: "429 retry-after a day", fault: ptr(fakegithub.TooManyRequests("86400")), want: limited, wantRetry: now.Add(24 * time.Hour), wantErr: "rate limited"},
		{name: "429 retry-after over a day is clamped", fault: ptr(fakegithub.TooManyRequests("86401")), want: limited, wantRetry: now.Add(24 * time.Hour), wantErr: "rate limited"},
		{name: "429 retry-after past uint64 is clamped", fault: ptr(fakegithub.TooManyRequests("99999999999999999999999")), want: limited, wantRetry: now.Add(24 * time.Hour), wantErr: "rate limited"},
		{name: "429 http-date retry-after falls back to the reset", fault: ptr(fakegithub.TooManyRequests(date)), quota: quota, want: limited, wantRetry: reset, wantErr: "rate limited"},
		{name: "429 without retry-after uses the reset", fault: ptr(fakegithub.TooManyRequests("")), quota: quota, want: limited, wantRetry: reset, wantErr: "rate limited"},
		{name: "429 with nothing known", fault: ptr(fakegithub.TooManyRequests("")), quota: noQuota, want: limited, wantErr: "rate limited"},
		{name: "429 with only an http-date", fault: ptr(fakegithub.TooManyRequests(date)), quota: noQuota, want: limited, wantErr: "rate limited"},

		{name: "403 remaining 0 with reset", fault: ptr(fakegithub.RateLimit(reset)), want: limited, wantRetry: reset, wantErr: "rate limited (HTTP 403)"},
		{name: "403 remaining 0 without reset", fault: ptr(fakegithub.RateLimit(time.Time{})), want: limited, wantErr: "rate limited (HTTP 403)"},
		{name: "403 retry-after seconds", fault: status(403, "Retry-After", "30"), quota: quota, want: limited, wantRetry: now.Add(30 * time.Second), wantErr: "rate limited"},
		{name: "403 retry-after before the reset", fault: withHeader(fakegithub.RateLimit(reset), "X-Ratelimit-Remaining", "0", "X-Ratelimit-Reset", "1900000000", "Retry-After", "30"), want: limited, wantRetry: now.Add(30 * time.Second), wantErr: "rate limited"},
		{name: "403 secondary rate limit", fault: ptr(fakegithub.SecondaryRateLimit("")), quota: noQuota, want: limited, wantErr: "rate limited"},
		{name: "403 secondary rate limit with retry-after", fault: ptr(fakegithub.SecondaryRateLimit("60")), want: limited, wantRetry: now.Add(time.Minute), wantErr: "rate limited"},
		{name: "403 without a signal", fault: status(403), quota: quota, want: failed, wantErr: "HTTP 403"},
		{name: "403 http-date retry-after is no signal", fault: status(403, "Retry-After", date), quota: quota, want: failed, wantErr: "HTTP 403"},
		{name: "403 negative retry-after is no signal", fault: status(403, "Retry-After", "-5"), quota: quota, want: failed, wantErr: "HTTP 403"},
		{name: "403 remaining 1 is no signal", fault: status(403, "X-Ratelimit-Remaining", "1"), want: failed, wantErr: "HTTP 403"},
		{name: "503 with retry-after is no rate limit", fault: status(503, "Retry-After", "30"), want: failed, wantErr: "HTTP 503"},

		{name: "500", fault: ptr(fakegithub.ServerError()), want: failed, wantErr: "HTTP 500"},
		{name: "502", fault: status(502), want: failed, wantErr: "HTTP 502"},
		{name: "401", fault: status(401), want: failed, wantErr: "HTTP 401"},
		{name: "410", fault: status(410), want: failed, wantErr: "HTTP 410"},
		{name: "202", fault: status(202), want: failed, wantErr: "HTTP 202"},
		{name: "204", fault: &fakegithub.Fault{Status: 204}, want: failed, wantErr: "HTTP 204"},
		{name: "301 is not followed", publish: true, fault: status(301, "Location", "/repos/storytold/photocraft/releases/latest?moved=1"), want: failed, wantErr: "HTTP 301"},

		{name: "malformed json", fault: ptr(fakegithub.Malformed()), want: failed, wantErr: "decode release"},
		{name: "draft", fault: ptr(fakegithub.Raw(`{"tag_name":"v1","draft":true}`)), want: failed, wantErr: "draft"},
		{name: "no tag", fault: ptr(fakegithub.Raw(`{"name":"v1"}`)), want: failed, wantErr: "tag_name"},
		{name: "raw good release", fault: ptr(fakegithub.Raw(`{"tag_name":"v1"}`)), want: fetched, wantRel: true, wantETag: `"` /* some strong etag */},
		{name: "body of exactly 4 MiB", fault: ptr(fakegithub.Oversized(github.MaxBody)), want: fetched, wantRel: true, wantETag: `"`},
		{name: "body one byte over 4 MiB", fault: ptr(fakegithub.Oversized(github.MaxBody + 1)), want: failed, wantErr: "body is over 4194304 bytes"},
		{name: "5 MiB body announced", fault: big, want: failed, wantErr: "body of 5242880 bytes is over 4194304"},
		{name: "5 MiB error body", fault: &fakegithub.Fault{Status: 500, Body: fakegithub.Oversized(5 << 20).Body}, want: failed, wantErr: "HTTP 500"},

		{name: "8 MB of headers", publish: true, fault: hdr("X-Junk", strings.Repeat("a", 8<<20)), want: failed, wantErr: "exceeded"},
		{name: "headers at the bound", publish: true, fault: hdr("X-Junk", strings.Repeat("a", github.MaxHeaderBytes/2)), want: fetched, wantRel: true, wantETag: "current"},
		{name: "2 MB etag fails with the headers", publish: true, fault: hdr("Etag", `"`+strings.Repeat("e", 2<<20)+`"`), want: failed, wantErr: "exceeded"},
		{name: "etag at the bound kept", publish: true, fault: hdr("Etag", boundETag), want: fetched, wantRel: true, wantETag: boundETag},
		{name: "etag of 4096 bytes dropped", publish: true, fault: hdr("Etag", `"`+strings.Repeat("e", 4096)+`"`), want: fetched, wantRel: true},
		{name: "etag one byte over the bound dropped", publish: true, fault: hdr("Etag", `"`+strings.Repeat("e", github.MaxETag-1)+`"`), want: fetched, wantRel: true},
		{name: "etag without quotes dropped", publish: true, fault: hdr("Etag", "no-quotes"), want: fetched, wantRel: true},
		{name: "etag with a space dropped", publish: true, fault: hdr("Etag", `"a b"`), want: fetched, wantRel: true},
		{name: "weak etag unclosed dropped", publish: true, fault: hdr("Etag", `W/"x`), want: fetched, wantRel: true},
		{name: "slow headers hit the header timeout", publish: true, fault: ptr(fakegithub.Slow(time.Minute)), opts: github.Options{HeaderTimeout: 50 * time.Millisecond, RequestTimeout: time.Hour}, want: failed, wantErr: "awaiting response headers"},
		{name: "slow answer hits the request timeout", publish: true, fault: ptr(fakegithub.Slow(time.Hour)), opts: github.Options{RequestTimeout: 200 * time.Millisecond}, want: failed, wantErr: "deadline exceeded", wantIs: context.DeadlineExceeded},
		{name: "connection closed", publish: true, fault: ptr(fakegithub.CloseConn()), want: failed, wantErr: "EOF"},
		{name: "connection reset", publish: true, fault: ptr(fakegithub.ResetConn()), want: failed, wantErr: "reset"},
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
			current := func(s string) string { return strings.ReplaceAll(s, "current", gh.ETag(repo)) }
			etag, wantETag := current(tt.etag), current(tt.wantETag)

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
		name, token, userAgent, etag string
		dropped                      bool   // etag is no entity tag to send back
		wantAuth                     string // "" wants no Authorization header at all
		wantUA                       string // "" wants github.DefaultUserAgent
	}{
		{name: "no token"},
		{name: "whitespace token", token: " \t\n "},
		{name: "token", token: "ghp_abc123", wantAuth: "Bearer ghp_abc123"},
		{name: "token trimmed", token: "  ghp_abc123\n", wantAuth: "Bearer ghp_abc123"},
		{name: "user agent", userAgent: "craft-releases/1.2 (poller)", wantUA: "craft-releases/1.2 (poller)"},
		{name: "etag verbatim", etag: `"0123abc"`},
		{name: "weak etag verbatim", etag: `W/"0123abc"`},
		{name: "etag without quotes dropped", etag: "no-quotes", dropped: true}, // the rule's cases: TestLatestClassification
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
			r, wantUA, wantINM := reqs[0], cmp.Or(tt.wantUA, github.DefaultUserAgent), tt.etag
			if tt.dropped {
				wantINM = ""
			}
			checks := []struct{ name, got, want string }{
				{"method", r.Method, http.MethodGet},
				{"path", r.Path, "/repos/storytold/photocraft/releases/latest"},
				{"Authorization", r.Authorization, tt.wantAuth},
				{"User-Agent", r.UserAgent, wantUA},
				{"Accept", r.Accept, "application/vnd.github+json"},
				{"X-GitHub-Api-Version", r.APIVersion, "2022-11-28"},
				{"If-None-Match", r.IfNoneMatch, wantINM},
			}
			for _, c := range checks {
				if c.got != c.want {
					t.Errorf("%s = %q, want %q", c.name, c.got, c.want)
				}
			}
			if _, ok := r.Header["Authorization"]; ok != (tt.wantAuth != "") {
				t.Errorf("Authorization header present = %v, want %v", ok, tt.wantAuth != "")
			}
			if _, ok := r.Header["If-None-Match"]; ok != (wantINM != "") {
				t.Errorf("If-None-Match header present = %v, want %v", ok, wantINM != "")
			}
		})
	}
}

// TestRevalidation: each kind of entry asks its own route with the ETag of
// its last answer, gets a 304 until that route's answer changes, reads its
// versions by the app's tag prefix, and names the route when it fails.
func TestRevalidation(t *testing.T) {
	artcraft := app
	artcraft.TagPrefix = "artcraft-v"
	held := func(a release.Answer) string {
		if a.Release != nil {
			return fmt.Sprintf("%s as %s, history %v", a.Release.Tag, a.Release.Version, a.History != nil)
		}
		if a.History != nil {
			return strings.Join(a.History.Tags(), " ")
		}
		return ""
	}
	for _, tt := range []struct {
		name, route, path, first, changed string
		entry                             release.App
		fault                             fakegithub.Fault // after the change
		wantFault                         release.Outcome
		wantErr                           string
	}{
		{"latest", repo, "/repos/" + repo + "/releases/latest", "artcraft-v1.0.0 as 1.0.0, history false", "artcraft-v1.1.0 as 1.1.0, history false",
			artcraft, fakegithub.RateLimit(now.Add(time.Hour)), release.RateLimited, "latest release " + repo + ": rate limited"},
		{"prerelease", fakegithub.List(repo), "/repos/" + repo + "/releases", "artcraft-v2.0.0-beta.1 as 2.0.0-beta.1, history false", "",
			artcraft.PrereleaseEntry(), fakegithub.RateLimit(now.Add(time.Hour)), release.RateLimited, "releases " + repo + ": rate limited"},
		{"history", fakegithub.List(repo), "/repos/" + repo + "/releases", "artcraft-v2.0.0-beta.1 artcraft-v1.0.0", "artcraft-v1.1.0",
			artcraft.HistoryEntry(), fakegithub.Status(200), release.Failed, "releases " + repo + ": decode"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			gh := fakegithub.New(t)
			c := newClient(t, gh, github.Options{})
			gh.Publish(repo, stable("artcraft-v1.0.0", 0))
			gh.SetList(repo, pre("artcraft-v2.0.0-beta.1", 1), stable("artcraft-v1.0.0", 0))
			other := fakegithub.List(repo)
			if tt.route != repo {
				other = repo
			}

			first := c.Latest(context.Background(), tt.entry, "")
			if first.Outcome != release.Fetched || held(first) != tt.first {
				t.Fatalf("first = %v %q (err %v), want fetched %q", first.Outcome, held(first), first.Err, tt.first)
			}
			if first.History != nil {
				for _, r := range first.History.Releases {
					if len(first.HistoryAssets[r.Tag]) != len(r.Assets) {
						t.Errorf("%s: %d asset refs for %d assets", r.Tag, len(first.HistoryAssets[r.Tag]), len(r.Assets))
					}
				}
			}
			if first.ETag == "" || first.ETag != gh.ETag(tt.route) || first.ETag == gh.ETag(other) {
				t.Fatalf("first ETag = %q, want the route's %q", first.ETag, gh.ETag(tt.route))
			}
			if a := c.Latest(context.Background(), tt.entry, first.ETag); a.Outcome != release.NotModified || held(a) != "" || a.Err != nil {
				t.Errorf("revalidated = %v %q (err %v), want not modified", a.Outcome, held(a), a.Err)
			}
			gh.Publish(repo, stable("artcraft-v1.1.0", 2))
			gh.SetList(repo, stable("artcraft-v1.1.0", 2))
			changed := c.Latest(context.Background(), tt.entry, first.ETag)
			if changed.Outcome != release.Fetched || held(changed) != tt.changed {
				t.Errorf("changed = %v %q (err %v), want fetched %q", changed.Outcome, held(changed), changed.Err, tt.changed)
			}
			if changed.ETag == first.ETag || changed.ETag != gh.ETag(tt.route) {
				t.Errorf("changed ETag = %q, want the new %q", changed.ETag, gh.ETag(tt.route))
			}
			gh.Queue(tt.route, tt.fault)
			if a := c.Latest(context.Background(), tt.entry, changed.ETag); a.Outcome != tt.wantFault || held(a) != "" || !strings.Contains(errText(a.Err), tt.wantErr) {
				t.Errorf("after %d = %v %q (err %v), want %v with %q", tt.fault.Status, a.Outcome, held(a), a.Err, tt.wantFault, tt.wantErr)
			}
			reqs := gh.Requests()
			wantINM := []string{"", first.ETag, first.ETag, changed.ETag}
			if len(reqs) != len(wantINM) {
				t.Fatalf("%d requests, want %d", len(reqs), len(wantINM))
			}
			for i, r := range reqs {
				if r.Repo != tt.route || r.Path != tt.path || r.IfNoneMatch != wantINM[i] {
					t.Errorf("request %d: %s %s If-None-Match %q; want %s with %q", i, r.Repo, r.Path, r.IfNoneMatch, tt.path, wantINM[i])
				}
			}
		})
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
		{"garbage", fakegithub.Quota{}, &fakegithub.Fault{Header: http.Header{"X-Ratelimit-Remaining": {"many"}, "X-Ratelimit-Reset": {"soon"}}}, -1, time.Time{}},
		{"negative", fakegithub.Quota{}, &fakegithub.Fault{Header: http.Header{"X-Ratelimit-Remaining": {"-1"}, "X-Ratelimit-Reset": {"-5"}}}, -1, time.Time{}},
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

// TestLatestKeepsNoRateLimitMemory: every request is sent and classified by
// its own answer, unlike go-github, which refuses to send before a
// remembered reset; the fleet backoff is what remembers a rate limit.
func TestLatestKeepsNoRateLimitMemory(t *testing.T) {
	// go-github compares with the real clock, so the reset is a real future time.
	reset := time.Now().Add(time.Hour).Truncate(time.Second).UTC()
	resetOnly := http.Header{
		"X-Ratelimit-Reset":     {strconv.FormatInt(reset.Unix(), 10)},
		"X-Ratelimit-Remaining": nil,
		"X-Ratelimit-Limit":     nil,
	}
	spentRetryAfter1 := fakegithub.TooManyRequests("1")
	spentRetryAfter1.Header.Set("X-Ratelimit-Remaining", "0")
	spentRetryAfter1.Header.Set("X-Ratelimit-Reset", strconv.FormatInt(reset.Unix(), 10))
	tests := []struct {
		name  string
		fault fakegithub.Fault // the first answer
		first release.Outcome
	}{
		{"after a 403 rate limit", fakegithub.RateLimit(reset), release.RateLimited},
		{"after a 429 with a short Retry-After and a far reset", spentRetryAfter1, release.RateLimited},
		{"after a 200 that spent the last request", fakegithub.Fault{Header: http.Header{"X-Ratelimit-Remaining": {"0"}, "X-Ratelimit-Reset": {strconv.FormatInt(reset.Unix(), 10)}}}, release.Fetched},
		{"after a 500 with only x-ratelimit-reset", fakegithub.Fault{Status: http.StatusInternalServerError, Header: resetOnly}, release.Failed},
		{"after a 403 with only x-ratelimit-reset", fakegithub.Fault{Status: http.StatusForbidden, Header: resetOnly}, release.Failed},
		{"after a secondary rate limit", fakegithub.SecondaryRateLimit("3600"), release.RateLimited},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			gh := fakegithub.New(t)
			gh.Publish(repo, fakegithub.NewRelease(repo, "v1.0.0"))
			gh.Queue(repo, tt.fault)
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

// TestLatestUnsent: an answer that could not be asked for fails with
// nothing sent and no quota known.
func TestLatestUnsent(t *testing.T) {
	refused := "http://" + closedAddr(t) + "/"
	gh := fakegithub.New(t)
	gh.Publish(repo, fakegithub.NewRelease(repo, "v1.0.0"))
	tests := []struct {
		name, wantErr string
		cancel        bool // the context is cancelled before the call
		opts          github.Options
		app           *release.App // nil for app
		wantIs        error
	}{
		{name: "connection refused", opts: github.Options{BaseURL: refused}, wantErr: "refused"},
		{name: "connect timeout", opts: github.Options{ConnectTimeout: time.Nanosecond}, wantErr: "i/o timeout"},
		{name: "cancelled", cancel: true, wantErr: "canceled", wantIs: context.Canceled},
		{name: "repo without a slash", app: &release.App{Repo: "photocraft"}, wantErr: "not org/project"},
		{name: "repo with two slashes", app: &release.App{Repo: "storytold/photo/craft"}, wantErr: "not org/project"},
		{name: "repo without org", app: &release.App{Repo: "/photocraft"}, wantErr: "not org/project"},
		{name: "repo without project", app: &release.App{Repo: "storytold/"}, wantErr: "not org/project"},
		{name: "repo empty", app: &release.App{}, wantErr: "not org/project"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			gh.Reset()
			ctx, cancel := context.WithCancel(context.Background())
			if tt.cancel {
				cancel()
			}
			defer cancel()
			a := newClient(t, gh, tt.opts).Latest(ctx, *cmp.Or(tt.app, &app), "")
			if a.Outcome != release.Failed || !strings.Contains(errText(a.Err), tt.wantErr) {
				t.Errorf("outcome %v, Err %v; want failed, containing %q", a.Outcome, a.Err, tt.wantErr)
			}
			if tt.wantIs != nil && !errors.Is(a.Err, tt.wantIs) {
				t.Errorf("Err = %v, want it to wrap %v", a.Err, tt.wantIs)
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

// closedAddr is a loopback address that refuses connections.
func closedAddr(t testing.TB) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	must(t, err)
	defer l.Close()
	return l.Addr().String()
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
	leaks := func(a release.Answer) bool {
		rel, _ := release.Marshal(a.Release)
		return strings.Contains(fmt.Sprintf("%v|%s|%s", a.Err, a.ETag, rel), token)
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			gh := fakegithub.New(t)
			gh.Stick(repo, tt.fault)
			a := newClient(t, gh, github.Options{Token: token}).Latest(context.Background(), app, "")
			if a.Outcome == release.Fetched || a.Outcome == release.NotModified || leaks(a) {
				t.Errorf("outcome %v, Err %v, ETag %q: want failed or rate limited, without the token", a.Outcome, a.Err, a.ETag)
			}
			if got := gh.Requests()[0].Authorization; got != "Bearer "+token {
				t.Errorf("Authorization = %q, want the token sent", got)
			}
		})
	}
	t.Run("token in a transport error", func(t *testing.T) {
		base := "http://" + closedAddr(t) + "/" + token + "/"
		a := newClient(t, fakegithub.New(t), github.Options{BaseURL: base, Token: token}).Latest(context.Background(), app, "")
		if a.Outcome != release.Failed || !strings.Contains(errText(a.Err), "[REDACTED]") || leaks(a) {
			t.Errorf("outcome %v, Err %v: want failed with the token redacted", a.Outcome, a.Err)
		}
	})
}

// TestLiveGitHub asks the real GitHub once. It is opt-in.
func TestLiveGitHub(t *testing.T) {
	if os.Getenv("CRAFT_APPS_LIVE_GITHUB") != "1" {
		t.Skip("talks to the real GitHub: set CRAFT_APPS_LIVE_GITHUB=1 (and optionally CRAFT_APPS_RELEASE_GITHUB_TOKEN) to run it")
	}
	c, err := github.New(github.Options{Token: os.Getenv("CRAFT_APPS_RELEASE_GITHUB_TOKEN")})
	must(t, err)
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
