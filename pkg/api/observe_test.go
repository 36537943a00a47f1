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

func TestObserver(t *testing.T) {
	t.Parallel()
	metrics := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "m 1\n") })
	cur := rendering(t, true)
	apiServer := func(obs daemon.Observer) *Server {
		s := New(fixed{cur}, new(daemon.Gate), zap.NewNop(), Options{Metrics: metrics, Observer: obs})
		// Routes that fail the ways a handler can, to see what is recorded.
		s.echo.GET("/fail/error", s.observe("/fail/error")(func(echo.Context) error { return errors.New("broken") }))
		s.echo.GET("/fail/teapot", s.observe("/fail/teapot")(func(echo.Context) error {
			return echo.NewHTTPError(http.StatusTeapot)
		}))
		return s
	}
	panicking := func(obs daemon.Observer) *Server {
		return New(panicking{}, new(daemon.Gate), zap.NewNop(), Options{Observer: obs})
	}
	health := func(obs daemon.Observer) http.Handler {
		g := new(daemon.Gate)
		g.Open()
		return daemon.NewHealth(g, metrics, zap.NewNop(), obs)
	}
	asHandler := func(f func(daemon.Observer) *Server) func(daemon.Observer) http.Handler {
		return func(o daemon.Observer) http.Handler { return f(o) }
	}
	tests := []struct {
		name   string
		server func(daemon.Observer) http.Handler
		method string
		path   string
		header http.Header
		want   string
	}{
		{"release_info", asHandler(apiServer), "GET", routes.ReleaseInfoPath, nil, routes.ReleaseInfoPath + " 200"},
		{"release_info HEAD", asHandler(apiServer), "HEAD", routes.ReleaseInfoPath, nil, routes.ReleaseInfoPath + " 200"},
		{"release_info not modified", asHandler(apiServer), "GET", routes.ReleaseInfoPath, http.Header{"If-None-Match": {cur.ETag}}, routes.ReleaseInfoPath + " 304"},
		{"release_info POST", asHandler(apiServer), "POST", routes.ReleaseInfoPath, nil, routes.ReleaseInfoPath + " 405"},
		{"healthz DELETE", asHandler(apiServer), "DELETE", "/healthz", nil, "/healthz 405"},
		{"readyz while not ready", asHandler(apiServer), "GET", "/readyz", nil, "/readyz 503"},
		{"metrics", asHandler(apiServer), "GET", "/metrics", nil, "/metrics 200"},
		{"unknown path", asHandler(apiServer), "GET", "/wp-login.php", nil, daemon.UnmatchedRoute + " 404"},
		{"one app", asHandler(apiServer), "GET", routes.ReleaseInfoPath + "/photocraft", nil, routes.ReleaseInfoAppPath + " 200"},
		{"an unknown app", asHandler(apiServer), "GET", routes.ReleaseInfoPath + "/x", nil, routes.ReleaseInfoAppPath + " 404"},
		{"below an app: the rest is the key", asHandler(apiServer), "GET", routes.ReleaseInfoPath + "/photocraft/x", nil, routes.ReleaseInfoAppPath + " 404"},
		{"a download", asHandler(apiServer), "GET", "/v1/craft_apps/download/photocraft?os=linux&arch=x64", nil, routes.DownloadPath + " 404"},
		{"the page", asHandler(apiServer), "GET", "/", nil, "/ 200"},
		{"trailing slash", asHandler(apiServer), "GET", routes.ReleaseInfoPath + "/", nil, daemon.UnmatchedRoute + " 404"},
		{"unknown path POST", asHandler(apiServer), "POST", "/v1/craft_apps", nil, daemon.UnmatchedRoute + " 404"},
		{"a handler's error", asHandler(apiServer), "GET", "/fail/error", nil, "/fail/error 500"},
		{"a handler's HTTP error", asHandler(apiServer), "GET", "/fail/teapot", nil, "/fail/teapot 418"},
		{"a handler's panic", asHandler(panicking), "GET", routes.ReleaseInfoPath, nil, routes.ReleaseInfoPath + " 500"},
		{"health healthz", health, "GET", "/healthz", nil, "/healthz 200"},
		{"health readyz", health, "HEAD", "/readyz", nil, "/readyz 200"},
		{"health has no endpoint", health, "GET", routes.ReleaseInfoPath, nil, daemon.UnmatchedRoute + " 404"},
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
	t.Parallel()
	metrics := http.NotFoundHandler()
	tests := []struct {
		name  string
		build func(daemon.Observer)
		want  []string
	}{
		{"api", func(o daemon.Observer) {
			New(fixed{rendering(t, true)}, new(daemon.Gate), zap.NewNop(), Options{Observer: o})
		},
			[]string{daemon.UnmatchedRoute, routes.ReleaseInfoPath, routes.ReleaseInfoAppPath, routes.DownloadPath,
				routes.TauriPath, routes.TauriAnyPath, routes.TauriManifestPath, routes.AppImagePath,
				routes.SquirrelMacPath, routes.SquirrelWindowsPath, routes.SquirrelWindowsArchPath, routes.VelopackPath, routes.ElectronPath, "/", routes.OpenAPIPath, "/healthz", "/readyz"}},
		{"api with metrics", func(o daemon.Observer) {
			New(fixed{rendering(t, true)}, new(daemon.Gate), zap.NewNop(), Options{Observer: o, Metrics: metrics})
		}, []string{daemon.UnmatchedRoute, routes.ReleaseInfoPath, routes.ReleaseInfoAppPath, routes.DownloadPath,
			routes.TauriPath, routes.TauriAnyPath, routes.TauriManifestPath, routes.AppImagePath,
			routes.SquirrelMacPath, routes.SquirrelWindowsPath, routes.SquirrelWindowsArchPath, routes.VelopackPath, routes.ElectronPath, "/", routes.OpenAPIPath, "/healthz", "/readyz", "/metrics"}},
		{"health with metrics", func(o daemon.Observer) {
			daemon.NewHealth(new(daemon.Gate), metrics, zap.NewNop(), o)
		},
			[]string{daemon.UnmatchedRoute, "/healthz", "/readyz", "/metrics"}},
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
