package fakegithub

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/storytold/craft-releases/test/testkit"
)

const repo = "storytold/photocraft"

// get asks s for repo's latest release with the given headers and returns the
// answer with its body read.
func get(t testing.TB, s *Server, repo string, header http.Header) (*http.Response, []byte) {
	t.Helper()
	resp, err := try(context.Background(), s, "repos/"+repo+"/releases/latest", header)
	if err != nil {
		t.Fatalf("GET %s: %v", repo, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("read body of %s: %v", repo, err)
	}
	return resp, body
}

// try sends one GET on a fresh connection, so that Go's client never retries
// it on another.
func try(ctx context.Context, s *Server, path string, header http.Header) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.URL()+path, nil)
	if err != nil {
		return nil, err
	}
	for k, v := range header {
		req.Header[k] = v
	}
	tr := &http.Transport{DisableKeepAlives: true}
	defer tr.CloseIdleConnections()
	return (&http.Client{Transport: tr}).Do(req)
}

// checkHeader checks h against want: "" means absent, "set" any value.
func checkHeader(t testing.TB, repo string, h http.Header, want map[string]string) {
	t.Helper()
	for k, w := range want {
		if got := h.Get(k); (w == "set" && got == "") || (w != "set" && got != w) {
			t.Errorf("%s: %s = %q, want %q", repo, k, got, w)
		}
	}
}

// TestNotModified: If-None-Match as GitHub reads it beyond the one ETag the
// client sends (whose 304 and 200 are github's TestLatestClassification,
// "304" and "200 revalidated with an old etag"): a list, "*", and the weak
// form of a strong ETag, which does not match; and republishing the same
// release keeps its ETag.
func TestNotModified(t *testing.T) {
	s := New(t)
	s.Publish(repo, NewRelease(repo, "v0.5.0"))
	etag := s.ETag(repo)
	tests := []struct {
		name, ifNoneMatch string
		want              int
	}{
		{"in a list", `"other", ` + etag, http.StatusNotModified},
		{"star", "*", http.StatusNotModified},
		{"weak form of current", "W/" + etag, http.StatusOK},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if resp, _ := get(t, s, repo, http.Header{"If-None-Match": {tt.ifNoneMatch}}); resp.StatusCode != tt.want {
				t.Fatalf("status = %d, want %d", resp.StatusCode, tt.want)
			}
		})
	}

	t.Run("same release same etag", func(t *testing.T) {
		s.Publish(repo, NewRelease(repo, "v0.5.0"))
		if got := s.ETag(repo); got != etag {
			t.Errorf("ETag after republishing the same release = %q, want %q", got, etag)
		}
	})
}

func TestNotFound(t *testing.T) {
	s := New(t)
	s.Publish(repo, NewRelease(repo, "v1.0.0"))
	s.Publish("storytold/gone", NewRelease("storytold/gone", "v1.0.0"))
	s.Unpublish("storytold/gone")

	for _, tt := range []struct{ name, path string }{
		{"unknown repo", "repos/storytold/unknown/releases/latest"},
		{"unpublished repo", "repos/storytold/gone/releases/latest"},
		{"other route", "repos/" + repo + "/releases/42"},
		{"missing project", "repos/storytold//releases/latest"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			resp, err := try(context.Background(), s, tt.path, nil)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			if resp.StatusCode != http.StatusNotFound {
				t.Fatalf("status = %d, want 404", resp.StatusCode)
			}
			var msg struct {
				Message string `json:"message"`
			}
			if err := json.NewDecoder(resp.Body).Decode(&msg); err != nil || msg.Message != "Not Found" {
				t.Errorf("body message = %q (%v), want %q", msg.Message, err, "Not Found")
			}
			if resp.Header.Get("ETag") != "" {
				t.Errorf("404 has ETag %q, want none", resp.Header.Get("ETag"))
			}
		})
	}
}

// TestFaults: what a fault answers, then the normal answer again. The
// faults whose answer github's TestLatestClassification reads (its rate
// limits, 500, malformed, raw, header overrides) are pinned there.
func TestFaults(t *testing.T) {
	date := time.Unix(1_900_000_000, 0).UTC().Format(http.TimeFormat)
	tests := []struct {
		name       string
		fault      Fault
		wantStatus int
		wantHeader map[string]string // "" means absent
		wantBody   string            // a substring; "" checks nothing
	}{
		{"any status", Status(http.StatusBadGateway), 502, nil, "Bad Gateway"},
		{"429 with a date", TooManyRequests(date), 429, map[string]string{"Retry-After": date}, ""},
		{"slow then normal", Slow(time.Millisecond), 200, map[string]string{"ETag": "set"}, `"tag_name":"v1.0.0"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := New(t)
			s.Publish(repo, NewRelease(repo, "v1.0.0"))
			s.Queue(repo, tt.fault)
			resp, body := get(t, s, repo, nil)
			if resp.StatusCode != tt.wantStatus {
				t.Errorf("status = %d, want %d", resp.StatusCode, tt.wantStatus)
			}
			checkHeader(t, repo, resp.Header, tt.wantHeader)
			if !strings.Contains(string(body), tt.wantBody) {
				t.Errorf("body = %.200q, want it to contain %q", body, tt.wantBody)
			}
			if resp, _ := get(t, s, repo, nil); resp.StatusCode != http.StatusOK {
				t.Errorf("status after the queued fault = %d, want 200", resp.StatusCode)
			}
		})
	}
}

func TestFaultOrder(t *testing.T) {
	const other = "storytold/vectorcraft"
	s := New(t)
	s.Publish(repo, NewRelease(repo, "v1.0.0"))
	s.Publish(other, NewRelease(other, "v1.0.0"))
	s.Queue(repo, Status(501), Status(502))
	s.Queue(AnyRepo, Status(503))
	s.Stick(repo, Status(504))
	s.Stick(AnyRepo, Status(505))

	// The repo's own queue first, in order, then the queue of any repo, then
	// the repo's stuck fault, then the one stuck for any repo; stuck faults stay.
	for i, st := range []struct {
		repo string
		want int
	}{{repo, 501}, {repo, 502}, {other, 503}, {repo, 504}, {other, 505}, {repo, 504}} {
		if resp, _ := get(t, s, st.repo, nil); resp.StatusCode != st.want {
			t.Errorf("request %d for %s: status = %d, want %d", i, st.repo, resp.StatusCode, st.want)
		}
	}
	s.Unstick(repo)
	if resp, _ := get(t, s, repo, nil); resp.StatusCode != 505 {
		t.Errorf("after Unstick(repo): status = %d, want 505", resp.StatusCode)
	}
	s.ClearFaults()
	if resp, _ := get(t, s, repo, nil); resp.StatusCode != 200 {
		t.Errorf("after ClearFaults: status = %d, want 200", resp.StatusCode)
	}
}

func TestSlowHonoursCancellation(t *testing.T) {
	s := New(t)
	s.Publish(repo, NewRelease(repo, "v1.0.0"))
	s.Stick(repo, Slow(time.Hour))

	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() {
		resp, err := try(ctx, s, "repos/"+repo+"/releases/latest", nil)
		if err == nil {
			resp.Body.Close()
		}
		errc <- err
	}()
	testkit.Eventually(t, "the fake saw it", func() bool { return s.Count(repo) == 1 })
	cancel()
	if err := <-errc; !errors.Is(err, context.Canceled) {
		t.Errorf("error = %v, want context.Canceled", err)
	}
	idle := make(chan struct{})
	go func() { s.active.Wait(); close(idle) }()
	select {
	case <-idle:
	case <-time.After(10 * time.Second):
		t.Fatal("the delayed handler still runs 10 s after its request was cancelled")
	}
}

// TestRecording: the requests recorded, those of no route included, and
// counted by repository. The headers recorded are github's TestLatestHeaders,
// the route of each request its TestRevalidation.
func TestRecording(t *testing.T) {
	s := New(t)
	s.Publish(repo, NewRelease(repo, "v1.0.0"))
	before := time.Now()
	get(t, s, repo, nil)
	get(t, s, "storytold/other", nil)
	if _, err := try(context.Background(), s, "elsewhere", nil); err != nil {
		t.Fatal(err)
	}

	reqs := s.Requests()
	if len(reqs) != 3 {
		t.Fatalf("%d requests recorded, want 3", len(reqs))
	}
	if r := reqs[2]; r.Repo != "" || r.Path != "/elsewhere" {
		t.Errorf("third request: Repo %q, Path %q; want none and /elsewhere", r.Repo, r.Path)
	}
	if at := reqs[0].At; at.Before(before) || at.After(time.Now()) {
		t.Errorf("At = %v, want between %v and now", at, before)
	}

	for _, c := range []struct {
		repo string
		want int
	}{{repo, 1}, {"storytold/other", 1}, {"storytold/none", 0}, {AnyRepo, 3}} {
		if got := s.Count(c.repo); got != c.want {
			t.Errorf("Count(%q) = %d, want %d", c.repo, got, c.want)
		}
	}
	s.Reset()
	if got := s.Count(AnyRepo); got != 0 {
		t.Errorf("Count after Reset = %d, want 0", got)
	}
	if resp, _ := get(t, s, repo, nil); resp.StatusCode != 200 {
		t.Errorf("status after Reset = %d, want 200: Reset must keep releases", resp.StatusCode)
	}
}

// TestQuotaHeaders: the default quota, on a release and on a 404. A quota
// set, or none, is github's TestLatestQuota, "announced" and "not announced".
func TestQuotaHeaders(t *testing.T) {
	s := New(t)
	s.Publish(repo, NewRelease(repo, "v1.0.0"))
	for _, r := range []string{repo, "storytold/none"} {
		resp, _ := get(t, s, r, nil)
		checkHeader(t, r, resp.Header, map[string]string{"X-Ratelimit-Limit": "5000", "X-Ratelimit-Remaining": "4999", "X-Ratelimit-Used": "1", "X-Ratelimit-Reset": "set"})
	}
}

// TestNewRelease: the URLs, digests and names of a release; that the same
// repo and tag give the same bytes is TestNotModified's "same release same
// etag".
func TestNewRelease(t *testing.T) {
	a := NewRelease(repo, "v0.5.0")
	if a.HTMLURL != "https://github.com/"+repo+"/releases/tag/v0.5.0" {
		t.Errorf("HTMLURL = %q", a.HTMLURL)
	}
	for _, as := range a.Assets {
		wantURL := "https://github.com/" + repo + "/releases/download/v0.5.0/" + as.Name
		if as.BrowserDownloadURL != wantURL {
			t.Errorf("%s: URL = %q, want %q", as.Name, as.BrowserDownloadURL, wantURL)
		}
		if len(as.Digest) != len("sha256:")+64 || !strings.HasPrefix(as.Digest, "sha256:") {
			t.Errorf("%s: digest = %q, want sha256:<64 hex>", as.Name, as.Digest)
		}
		if as.Name != "SHA256SUMS.txt" && !strings.Contains(as.Name, "0.5.0") {
			t.Errorf("%s: name lacks the version", as.Name)
		}
	}
}

func TestConcurrentUse(t *testing.T) {
	s := New(t)
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			r := "storytold/app" + strconv.Itoa(i)
			s.Publish(r, NewRelease(r, "v1.0.0"))
			s.Queue(r, ServerError())
			for range 5 {
				// Not get: t.Fatal must not run outside the test's goroutine.
				resp, err := try(context.Background(), s, "repos/"+r+"/releases/latest", nil)
				if err != nil {
					t.Errorf("GET %s: %v", r, err)
					continue
				}
				resp.Body.Close()
				s.Count(AnyRepo)
				s.Requests()
			}
		})
	}
	wg.Wait()
	if got := s.Count(AnyRepo); got != 40 {
		t.Errorf("Count = %d, want 40", got)
	}
	for i := range 8 {
		if got := s.Count("storytold/app" + strconv.Itoa(i)); got != 5 {
			t.Errorf("Count(app%d) = %d, want 5", i, got)
		}
	}
}

// TestList: the list route serves the latest release alone until SetList,
// then the list's first per_page releases, with an ETag of each per_page;
// faults of the repository and of its list are apart. The list's own ETag
// and its 304 are pinned by github's TestRevalidation.
func TestList(t *testing.T) {
	s := New(t)
	path := "repos/" + repo + "/releases?per_page=2"
	list := func(header http.Header) (*http.Response, []Release) {
		t.Helper()
		resp, err := try(context.Background(), s, path, header)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var rs []Release
		if resp.StatusCode == http.StatusOK {
			if err := json.NewDecoder(resp.Body).Decode(&rs); err != nil {
				t.Fatalf("decode list: %v", err)
			}
		}
		return resp, rs
	}
	tags := func(rs []Release) (out []string) {
		for _, r := range rs {
			out = append(out, r.TagName)
		}
		return out
	}
	if resp, rs := list(nil); resp.StatusCode != http.StatusOK || rs == nil || len(rs) != 0 {
		t.Fatalf("no release: %d %q, want 200 []", resp.StatusCode, tags(rs))
	}
	s.Publish(repo, NewRelease(repo, "v1.0.0"))
	if _, rs := list(nil); !reflect.DeepEqual(tags(rs), []string{"v1.0.0"}) {
		t.Fatalf("published: %q, want the latest alone", tags(rs))
	}
	beta := NewRelease(repo, "v2.0.0-beta.2")
	beta.Prerelease = true
	s.SetList(repo, Release{TagName: "v3", Draft: true}, beta, NewRelease(repo, "v1.0.0"))
	resp, rs := list(nil)
	if !reflect.DeepEqual(tags(rs), []string{"v3", "v2.0.0-beta.2"}) {
		t.Fatalf("SetList: %q, want the first two", tags(rs))
	}
	if got, etag := s.ETag(List(repo)), resp.Header.Get("ETag"); got == "" || got == etag {
		t.Errorf("ETag(List) = %q: want the ETag of per_page=10, which differs from per_page=2's %q", got, etag)
	}
	s.Queue(repo, Status(http.StatusBadGateway))
	if resp, _ := list(nil); resp.StatusCode != http.StatusOK {
		t.Errorf("a fault of the repository answered the list: %d", resp.StatusCode)
	}
	s.Queue(List(repo), Status(http.StatusBadGateway))
	if resp, _ := list(nil); resp.StatusCode != http.StatusBadGateway {
		t.Errorf("a fault of the list: %d, want 502", resp.StatusCode)
	}
	if n := s.Count(List(repo)); n != 5 {
		t.Errorf("Count(List) = %d, want 5", n)
	}
}
