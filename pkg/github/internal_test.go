package github

import (
	"cmp"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/storytold/craft-releases/pkg/clock"
)

func TestOptionsDefaults(t *testing.T) {
	o := Options{Token: " \tsecret\n"}.withDefaults()
	checks := []struct {
		name      string
		got, want any
	}{
		{"BaseURL", o.BaseURL, "https://api.github.com/"},
		{"UserAgent", o.UserAgent, "craft-releases"},
		{"ConnectTimeout", o.ConnectTimeout, 10 * time.Second},
		{"HeaderTimeout", o.HeaderTimeout, 10 * time.Second},
		{"RequestTimeout", o.RequestTimeout, 15 * time.Second},
		{"Token", o.Token, "secret"},
		{"Clock", o.Clock, clock.System},
		{"MaxBody", MaxBody, 4_194_304},
		{"MaxRetryAfter", MaxRetryAfter, 86400 * time.Second},
	}
	for _, c := range checks {
		if c.got != c.want {
			t.Errorf("%s = %v, want %v", c.name, c.got, c.want)
		}
	}
	kept := Options{BaseURL: "http://x/", UserAgent: "ua", ConnectTimeout: time.Second, RequestTimeout: 2 * time.Second}.withDefaults()
	if kept.BaseURL != "http://x/" || kept.UserAgent != "ua" || kept.ConnectTimeout != time.Second || kept.RequestTimeout != 2*time.Second {
		t.Errorf("withDefaults replaced set fields: %+v", kept)
	}
}

// TestRequestURL checks the URL without sending: GitHub's own API is not
// mangled into an Enterprise one, an Enterprise path is kept, and the repo
// is escaped into the path.
func TestRequestURL(t *testing.T) {
	const latest = "/repos/storytold/photocraft/releases/latest"
	tests := []struct{ name, base, repo, want string }{
		{"default", "", "", "https://api.github.com" + latest},
		{"github", "https://api.github.com/", "", "https://api.github.com" + latest},
		{"github without slash", "https://api.github.com", "", "https://api.github.com" + latest},
		{"loopback", "http://127.0.0.1:8080/", "", "http://127.0.0.1:8080" + latest},
		{"enterprise", "https://ghe.example.com/api/v3/", "", "https://ghe.example.com/api/v3" + latest},
		{"enterprise without slash", "https://ghe.example.com/api/v3", "", "https://ghe.example.com/api/v3" + latest},
		{"repo with a query", "", "storytold/photocraft?x=1", "https://api.github.com/repos/storytold/photocraft%3Fx=1/releases/latest"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := New(Options{BaseURL: tt.base})
			must(t, err)
			repo := cmp.Or(tt.repo, "storytold/photocraft")
			req, err := c.newRequest(c.gh(), latestRequest, repo, "")
			must(t, err)
			if got := req.URL.String(); got != tt.want {
				t.Errorf("URL = %s, want %s", got, tt.want)
			}
			req, err = c.newRequest(c.gh(), listRequest, repo, "")
			must(t, err)
			want := strings.TrimSuffix(tt.want, "/latest") + "?per_page=10"
			if got := req.URL.String(); got != want {
				t.Errorf("list URL = %s, want %s", got, want)
			}
		})
	}
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

type roundTripperFunc func(*http.Request) (*http.Response, error)

func (f roundTripperFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// TestCappedBody checks that every body, the error bodies go-github reads
// whole included, stops one byte past MaxBody.
func TestCappedBody(t *testing.T) {
	tests := []struct {
		name       string
		size, want int
	}{
		{"small", 10, 10},
		{"at the limit", MaxBody, MaxBody},
		{"5 MiB", 5 << 20, MaxBody + 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			closed := false
			next := roundTripperFunc(func(*http.Request) (*http.Response, error) {
				body := struct {
					io.Reader
					io.Closer
				}{strings.NewReader(strings.Repeat("x", tt.size)), closerFunc(func() error { closed = true; return nil })}
				return &http.Response{StatusCode: 500, Body: body, Header: http.Header{}}, nil
			})
			req, _ := http.NewRequest(http.MethodGet, "http://127.0.0.1/", nil)
			resp, err := capped{next}.RoundTrip(req)
			must(t, err)
			b, err := io.ReadAll(resp.Body)
			must(t, err)
			if len(b) != tt.want {
				t.Errorf("read %d bytes, want %d", len(b), tt.want)
			}
			resp.Body.Close()
			if !closed {
				t.Error("closing the capped body did not close the underlying one")
			}
		})
	}
}

type closerFunc func() error

func (f closerFunc) Close() error { return f() }
