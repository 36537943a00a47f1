package github_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/storytold/craft-releases/pkg/github"
	"github.com/storytold/craft-releases/pkg/release"
	"github.com/storytold/craft-releases/test/fakegithub"
)

const sigLimit = 4 << 10

// publishAsset publishes a release of repo whose asset id 7 holds content
// and announces digest ("" for none), and returns the asset's ref.
func publishAsset(gh *fakegithub.Server, content []byte, digest string) release.AssetRef {
	r := fakegithub.NewRelease(repo, "v1.0.0")
	r.Assets = append(r.Assets, fakegithub.Asset{ID: 7, Name: "app.AppImage.sig", Size: int64(len(content)),
		Digest: digest, Content: content, BrowserDownloadURL: release.DownloadURL(repo, "v1.0.0", "app.AppImage.sig")})
	gh.Publish(repo, r)
	ref := release.AssetRef{ID: 7, Size: int64(len(content))}
	if d, ok := strings.CutPrefix(digest, "sha256:"); ok {
		ref.SHA256 = d
	}
	return ref
}

func digestOf(b []byte) string {
	sum := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(sum[:])
}

func TestCompanion(t *testing.T) {
	content := []byte("dW50cnVzdGVkIGNvbW1lbnQ6IHNpZ25hdHVyZQo=\n")
	reset := time.Unix(1_900_000_000, 0).UTC()
	foreign := fakegithub.New(t)
	tests := []struct {
		name, digest, wantErr string // digest announced; "good" is content's
		content               []byte
		redirect, cancel      bool              // the fake redirects to its objects stand-in; the context is cancelled before the call
		fault                 *fakegithub.Fault // queued for the asset
		opts                  github.Options
		want                  release.Outcome
		requests              int // the fake's requests, redirect included
	}{
		{name: "bytes at once", content: content, digest: "good", want: release.Fetched, requests: 1},
		{name: "no digest announced", content: content, want: release.Fetched, requests: 1},
		{name: "302 to the api's own host", content: content, digest: "good", redirect: true, want: release.Fetched, requests: 2},
		{name: "302 to a foreign host", content: content, fault: ptr(fakegithub.Redirect(foreign.URL() + "repos/x/y/releases/assets/7")), want: release.Failed, wantErr: "not an asset host", requests: 1},
		{name: "302 to an asset host over http", content: content, fault: ptr(fakegithub.Redirect("http://objects.githubusercontent.com/x")), want: release.Failed, wantErr: "not an asset host", requests: 1},
		{name: "oversized", content: []byte(strings.Repeat("a", sigLimit+1)), want: release.Failed, wantErr: "over 4096", requests: 1},
		{name: "oversized without a length", fault: ptr(fakegithub.Fault{Status: 200, Body: []byte(strings.Repeat("a", sigLimit+1)), Header: map[string][]string{"Content-Length": nil}}), content: content, want: release.Failed, wantErr: "over 4096", requests: 1},
		{name: "digest mismatch", content: content, digest: digestOf([]byte("other")), want: release.Failed, wantErr: "sha256", requests: 1},
		{name: "slow", content: content, fault: ptr(fakegithub.Slow(time.Hour)), opts: github.Options{RequestTimeout: 200 * time.Millisecond}, want: release.Failed, wantErr: "deadline exceeded", requests: 1},
		{name: "rate limited", content: content, fault: ptr(fakegithub.RateLimit(now.Add(time.Hour))), want: release.RateLimited, wantErr: "rate limited", requests: 1},
		{name: "not found", want: release.NotFound, wantErr: "HTTP 404", requests: 1},
		{name: "server error", content: content, fault: ptr(fakegithub.ServerError()), want: release.Failed, wantErr: "HTTP 500", requests: 1},
		{name: "cancelled", content: content, cancel: true, want: release.Failed, wantErr: context.Canceled.Error()},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			gh := fakegithub.New(t)
			gh.SetQuota(fakegithub.Quota{Limit: 60, Remaining: 17, Reset: reset})
			gh.RedirectAssets(tc.redirect)
			digest := tc.digest
			if digest == "good" {
				digest = digestOf(tc.content)
			}
			ref := release.AssetRef{ID: 7}
			if tc.content != nil {
				ref = publishAsset(gh, tc.content, digest)
			}
			if tc.fault != nil {
				gh.Queue(fakegithub.AssetOf(repo, 7), *tc.fault)
			}
			tc.opts.Token = "s3cret"
			c := newClient(t, gh, tc.opts)

			ctx, cancel := context.WithCancel(context.Background())
			if tc.cancel {
				cancel()
			}
			defer cancel()
			body, a := c.Companion(ctx, app, ref, sigLimit)
			if a.Outcome != tc.want {
				t.Errorf("outcome: got %v, want %v (err %v)", a.Outcome, tc.want, a.Err)
			}
			if got := errText(a.Err); !strings.Contains(got, tc.wantErr) || (tc.wantErr == "") != (a.Err == nil) {
				t.Errorf("err: got %q, want one containing %q", got, tc.wantErr)
			}
			if want := []byte(nil); tc.want == release.Fetched {
				want = tc.content
				if string(body) != string(want) {
					t.Errorf("body: got %q, want %q", body, want)
				}
			} else if body != nil {
				t.Errorf("body: got %q, want none", body)
			}
			if tc.want == release.RateLimited && !a.RetryAt.Equal(now.Add(time.Hour).Truncate(time.Second)) {
				t.Errorf("retry at: got %v, want %v", a.RetryAt, now.Add(time.Hour))
			}
			if tc.want == release.Fetched && (a.Remaining != 17 || !a.Reset.Equal(reset)) {
				t.Errorf("quota: got %d until %v, want 17 until %v", a.Remaining, a.Reset, reset)
			}
			if tc.cancel && !errors.Is(a.Err, context.Canceled) {
				t.Errorf("err: got %v, want context.Canceled", a.Err)
			}
			reqs := gh.Requests()
			if len(reqs) != tc.requests {
				t.Fatalf("requests: got %d, want %d: %+v", len(reqs), tc.requests, reqs)
			}
			if len(reqs) == 0 {
				return
			}
			if got, want := reqs[0].Authorization, "Bearer s3cret"; got != want {
				t.Errorf("first request's Authorization: got %q, want %q", got, want)
			}
			if got, want := reqs[0].Accept, "application/octet-stream"; got != want {
				t.Errorf("Accept: got %q, want %q", got, want)
			}
			for _, r := range reqs[1:] {
				if r.Authorization != "" || r.Header.Get("Authorization") != "" {
					t.Errorf("redirected request %s carries Authorization %q, want none", r.Path, r.Authorization)
				}
			}
			if n := len(foreign.Requests()); n != 0 {
				t.Errorf("the foreign host got %d requests, want none", n)
			}
		})
	}
}

func ptr[T any](v T) *T { return &v }

// TestLatestAssetRefs checks that a fetched release carries what fetching
// each kept asset needs: its id, size and digest.
func TestLatestAssetRefs(t *testing.T) {
	gh := fakegithub.New(t)
	content := []byte("sig")
	want := publishAsset(gh, content, digestOf(content))
	a := newClient(t, gh, github.Options{}).Latest(context.Background(), app, "")
	if a.Outcome != release.Fetched {
		t.Fatalf("outcome: got %v (%v), want fetched", a.Outcome, a.Err)
	}
	if got := a.Assets["app.AppImage.sig"]; got != want {
		t.Errorf("ref: got %+v, want %+v", got, want)
	}
	if got, want := len(a.Assets), len(a.Release.Assets); got != want {
		t.Errorf("refs: got %d, want one per kept asset (%d)", got, want)
	}
}
