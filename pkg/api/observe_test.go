package api

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/labstack/echo/v4"
	"go.uber.org/zap"
)

// recorder is an Observer that records "route code" for every request, and
// the routes it was asked for.
type recorder struct {
	mu     sync.Mutex
	routes []string
	got    []string
}

func (r *recorder) Route(path string) func(int, time.Duration) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.routes = append(r.routes, path)
	return func(code int, took time.Duration) {
		r.mu.Lock()
		defer r.mu.Unlock()
		r.got = append(r.got, fmt.Sprintf("%s %d", path, code))
		if took < 0 {
			r.got = append(r.got, fmt.Sprintf("negative time %v", took))
		}
	}
}

func (r *recorder) take() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	got := r.got
	r.got = nil
	return got
}

func TestObserver(t *testing.T) {
	metrics := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "m 1\n") })
	cur := rendering(t, true)
	apiServer := func(obs Observer) *Server {
		s := New(fixed{cur}, new(Gate), zap.NewNop(), Options{Metrics: metrics, Observer: obs})
		// Routes that fail the ways a handler can, to see what is recorded.
		s.echo.GET("/fail/error", s.observe("/fail/error")(func(echo.Context) error { return errors.New("broken") }))
		s.echo.GET("/fail/teapot", s.observe("/fail/teapot")(func(echo.Context) error {
			return echo.NewHTTPError(http.StatusTeapot)
		}))
		return s
	}
	panicking := func(obs Observer) *Server {
		return New(panicking{}, new(Gate), zap.NewNop(), Options{Observer: obs})
	}
	health := func(obs Observer) *Server {
		g := new(Gate)
		g.Open()
		return NewHealth(g, zap.NewNop(), Options{Metrics: metrics, Observer: obs})
	}
	tests := []struct {
		name   string
		server func(Observer) *Server
		method string
		path   string
		header http.Header
		want   string
	}{
		{"release_info", apiServer, "GET", ReleaseInfoPath, nil, ReleaseInfoPath + " 200"},
		{"release_info HEAD", apiServer, "HEAD", ReleaseInfoPath, nil, ReleaseInfoPath + " 200"},
		{"release_info not modified", apiServer, "GET", ReleaseInfoPath, http.Header{"If-None-Match": {cur.ETag}}, ReleaseInfoPath + " 304"},
		{"release_info POST", apiServer, "POST", ReleaseInfoPath, nil, ReleaseInfoPath + " 405"},
		{"healthz DELETE", apiServer, "DELETE", "/healthz", nil, "/healthz 405"},
		{"readyz while not ready", apiServer, "GET", "/readyz", nil, "/readyz 503"},
		{"metrics", apiServer, "GET", "/metrics", nil, "/metrics 200"},
		{"unknown path", apiServer, "GET", "/wp-login.php", nil, UnmatchedRoute + " 404"},
		{"one app", apiServer, "GET", ReleaseInfoPath + "/photocraft", nil, ReleaseInfoAppPath + " 200"},
		{"an unknown app", apiServer, "GET", ReleaseInfoPath + "/x", nil, ReleaseInfoAppPath + " 404"},
		{"below an app: the rest is the key", apiServer, "GET", ReleaseInfoPath + "/photocraft/x", nil, ReleaseInfoAppPath + " 404"},
		{"a download", apiServer, "GET", "/v1/craft_apps/download/photocraft?os=linux&arch=x64", nil, DownloadPath + " 404"},
		{"the page", apiServer, "GET", "/", nil, "/ 200"},
		{"trailing slash", apiServer, "GET", ReleaseInfoPath + "/", nil, UnmatchedRoute + " 404"},
		{"unknown path POST", apiServer, "POST", "/v1/craft_apps", nil, UnmatchedRoute + " 404"},
		{"a handler's error", apiServer, "GET", "/fail/error", nil, "/fail/error 500"},
		{"a handler's HTTP error", apiServer, "GET", "/fail/teapot", nil, "/fail/teapot 418"},
		{"a handler's panic", panicking, "GET", ReleaseInfoPath, nil, ReleaseInfoPath + " 500"},
		{"health healthz", health, "GET", "/healthz", nil, "/healthz 200"},
		{"health readyz", health, "HEAD", "/readyz", nil, "/readyz 200"},
		{"health has no endpoint", health, "GET", ReleaseInfoPath, nil, UnmatchedRoute + " 404"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			obs := &recorder{}
			s := tt.server(obs)
			req := httptest.NewRequest(tt.method, tt.path, nil)
			req.Header = tt.header
			rec := httptest.NewRecorder()
			s.ServeHTTP(rec, req)
			if got := obs.take(); !slices.Equal(got, []string{tt.want}) {
				t.Errorf("recorded %q, want %q (status sent %d)", got, tt.want, rec.Code)
			}
			if want := fmt.Sprintf(" %d", rec.Code); tt.want[len(tt.want)-len(want):] != want {
				t.Errorf("status sent %d, want the one recorded in %q", rec.Code, tt.want)
			}
		})
	}
}

// TestObserverRoutes checks that an Observer is asked for every registered
// route path and the unmatched one, once each, when the server is built.
func TestObserverRoutes(t *testing.T) {
	metrics := http.NotFoundHandler()
	tests := []struct {
		name  string
		build func(Observer)
		want  []string
	}{
		{"api", func(o Observer) { New(fixed{rendering(t, true)}, new(Gate), zap.NewNop(), Options{Observer: o}) },
			[]string{UnmatchedRoute, ReleaseInfoPath, ReleaseInfoAppPath, DownloadPath, "/", OpenAPIPath, "/healthz", "/readyz"}},
		{"api with metrics", func(o Observer) {
			New(fixed{rendering(t, true)}, new(Gate), zap.NewNop(), Options{Observer: o, Metrics: metrics})
		}, []string{UnmatchedRoute, ReleaseInfoPath, ReleaseInfoAppPath, DownloadPath, "/", OpenAPIPath, "/healthz", "/readyz", "/metrics"}},
		{"health with metrics", func(o Observer) { NewHealth(new(Gate), zap.NewNop(), Options{Observer: o, Metrics: metrics}) },
			[]string{UnmatchedRoute, "/healthz", "/readyz", "/metrics"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			obs := &recorder{}
			tt.build(obs)
			if !slices.Equal(obs.routes, tt.want) {
				t.Errorf("routes asked %q, want %q", obs.routes, tt.want)
			}
		})
	}
}
