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

	"github.com/storytold/craft-releases/pkg/daemon"
	"github.com/storytold/craft-releases/pkg/routes"
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

// TestObserver: each request is observed once, under its route, with the
// status sent. The health handler observes as the router does
// (TestHealthAnswersAsTheRouter).
func TestObserver(t *testing.T) {
	t.Parallel()
	metrics := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "m 1\n") })
	cur := rendering(t, true)
	apiServer := func(obs daemon.Observer) http.Handler {
		s := New(fixed{cur}, new(daemon.Gate), zap.NewNop(), Options{Metrics: metrics, Observer: obs})
		// Routes that fail the ways a handler can, to see what is recorded.
		s.echo.GET("/fail/error", s.observe("/fail/error")(func(echo.Context) error { return errors.New("broken") }))
		s.echo.GET("/fail/teapot", s.observe("/fail/teapot")(func(echo.Context) error {
			return echo.NewHTTPError(http.StatusTeapot)
		}))
		return s
	}
	panicking := func(obs daemon.Observer) http.Handler {
		return New(panicking{}, new(daemon.Gate), zap.NewNop(), Options{Observer: obs})
	}
	tests := []struct {
		name   string
		server func(daemon.Observer) http.Handler
		method string
		path   string
		header http.Header
		want   string
	}{
		{"release_info", apiServer, "GET", routes.ReleaseInfoPath, nil, routes.ReleaseInfoPath + " 200"},
		{"release_info HEAD", apiServer, "HEAD", routes.ReleaseInfoPath, nil, routes.ReleaseInfoPath + " 200"},
		{"release_info not modified", apiServer, "GET", routes.ReleaseInfoPath, http.Header{"If-None-Match": {cur.ETag}}, routes.ReleaseInfoPath + " 304"},
		{"release_info POST", apiServer, "POST", routes.ReleaseInfoPath, nil, routes.ReleaseInfoPath + " 405"},
		{"healthz DELETE", apiServer, "DELETE", "/healthz", nil, "/healthz 405"},
		{"readyz while not ready", apiServer, "GET", "/readyz", nil, "/readyz 503"},
		{"metrics", apiServer, "GET", "/metrics", nil, "/metrics 200"},
		{"unknown path", apiServer, "GET", "/wp-login.php", nil, daemon.UnmatchedRoute + " 404"},
		{"one app", apiServer, "GET", routes.ReleaseInfoPath + "/photocraft", nil, routes.ReleaseInfoAppPath + " 200"},
		{"an unknown app", apiServer, "GET", routes.ReleaseInfoPath + "/x", nil, routes.ReleaseInfoAppPath + " 404"},
		{"below an app: the rest is the key", apiServer, "GET", routes.ReleaseInfoPath + "/photocraft/x", nil, routes.ReleaseInfoAppPath + " 404"},
		{"a download", apiServer, "GET", "/v1/craft_apps/download/photocraft?os=linux&arch=x64", nil, routes.DownloadPath + " 404"},
		{"the page", apiServer, "GET", "/", nil, "/ 200"},
		{"trailing slash", apiServer, "GET", routes.ReleaseInfoPath + "/", nil, daemon.UnmatchedRoute + " 404"},
		{"unknown path POST", apiServer, "POST", "/v1/craft_apps", nil, daemon.UnmatchedRoute + " 404"},
		{"a handler's error", apiServer, "GET", "/fail/error", nil, "/fail/error 500"},
		{"a handler's HTTP error", apiServer, "GET", "/fail/teapot", nil, "/fail/teapot 418"},
		{"a handler's panic", panicking, "GET", routes.ReleaseInfoPath, nil, routes.ReleaseInfoPath + " 500"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			obs := &recorder{}
			req := httptest.NewRequest(tt.method, tt.path, nil)
			req.Header = tt.header
			rec := httptest.NewRecorder()
			tt.server(obs).ServeHTTP(rec, req)
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
	t.Parallel()
	metrics := http.NotFoundHandler()
	api := []string{daemon.UnmatchedRoute, routes.ReleaseInfoPath, routes.ReleaseInfoAppPath, routes.DownloadPath,
		routes.TauriPath, routes.TauriAnyPath, routes.TauriManifestPath, routes.AppImagePath,
		routes.SquirrelMacPath, routes.SquirrelWindowsPath, routes.SquirrelWindowsArchPath, routes.VelopackPath, routes.ElectronPath,
		"/", routes.OpenAPIPath, "/healthz", "/readyz"}
	tests := []struct {
		name  string
		build func(daemon.Observer)
		want  []string
	}{
		{"api", func(o daemon.Observer) {
			New(fixed{rendering(t, true)}, new(daemon.Gate), zap.NewNop(), Options{Observer: o})
		}, api},
		{"api with metrics", func(o daemon.Observer) {
			New(fixed{rendering(t, true)}, new(daemon.Gate), zap.NewNop(), Options{Observer: o, Metrics: metrics})
		}, append(slices.Clone(api), "/metrics")},
		{"health with metrics", func(o daemon.Observer) {
			daemon.NewHealth(new(daemon.Gate), metrics, zap.NewNop(), o)
		}, []string{daemon.UnmatchedRoute, "/healthz", "/readyz", "/metrics"}},
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
