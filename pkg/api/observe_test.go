package api

import (
	"fmt"
	"net/http"
	"slices"
	"sync"
	"testing"
	"time"

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

// TestObserverRoutes checks that an Observer is asked for every registered
// route path and the unmatched one, once each, when the server is built.
func TestObserverRoutes(t *testing.T) {
	t.Parallel()
	metrics := http.NotFoundHandler()
	api := []string{daemon.UnmatchedRoute, routes.ReleaseInfoPath, routes.ReleaseInfoAppPath, routes.DownloadPath,
		routes.TauriPath, routes.TauriAnyPath, routes.TauriManifestPath, routes.AppImagePath,
		routes.SquirrelMacPath, routes.SquirrelWindowsPath, routes.SquirrelWindowsArchPath, routes.VelopackPath, routes.ElectronPath,
		"/", routes.OpenAPIPath, "/healthz", "/readyz"}
	for _, tt := range []struct {
		name    string
		health  bool // pkg/daemon's handler, not the API's
		metrics http.Handler
		want    []string
	}{
		{"api", false, nil, api},
		{"api with metrics", false, metrics, append(slices.Clone(api), "/metrics")},
		{"health with metrics", true, metrics, []string{daemon.UnmatchedRoute, "/healthz", "/readyz", "/metrics"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			obs := &recorder{}
			if tt.health {
				daemon.NewHealth(new(daemon.Gate), tt.metrics, zap.NewNop(), obs)
			} else {
				New(fixed{rendering(t, true)}, new(daemon.Gate), zap.NewNop(), Options{Observer: obs, Metrics: tt.metrics})
			}
			if !slices.Equal(obs.routes, tt.want) {
				t.Errorf("routes asked %q, want %q", obs.routes, tt.want)
			}
		})
	}
}
