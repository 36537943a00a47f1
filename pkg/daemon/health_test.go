package daemon

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"go.uber.org/zap"
)

// TestGate: a gate opens once and, once closed, stays closed (start-up,
// then shutdown); one health handler's /readyz follows it throughout.
func TestGate(t *testing.T) {
	var g Gate
	h := NewHealth(&g, nil, zap.NewNop(), nil)
	steps := []struct {
		name string
		do   func()
		want bool
	}{
		{"zero value", func() {}, false},
		{"open", g.Open, true},
		{"open again", g.Open, true},
		{"close", g.Close, false},
		{"open after close stays closed", g.Open, false},
		{"close again", g.Close, false},
	}
	for _, s := range steps {
		s.do()
		if got := g.Ready(); got != s.want {
			t.Errorf("%s: Ready got %v, want %v", s.name, got, s.want)
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest("GET", ReadyzPath, nil))
		if want := map[bool]int{true: 200, false: 503}[s.want]; rec.Code != want {
			t.Errorf("%s: /readyz status got %d, want %d", s.name, rec.Code, want)
		}
	}
}

// TestHealthRoutes: the health handler answers its three paths, /metrics only
// when it has a metrics handler, and nothing else.
func TestHealthRoutes(t *testing.T) {
	metrics := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("metric 1\n")) })
	tests := []struct {
		name             string
		open             bool
		metrics          http.Handler
		method, path     string
		wantStatus       int
		wantBody, wantCT string
	}{
		{"healthz", false, nil, "GET", HealthzPath, 200, "ok\n", "text/plain; charset=utf-8"},
		{"healthz HEAD", false, nil, "HEAD", HealthzPath, 200, "", "text/plain; charset=utf-8"},
		{"readyz closed", false, nil, "GET", ReadyzPath, 503, "not ready\n", "text/plain; charset=utf-8"},
		{"readyz open", true, nil, "GET", ReadyzPath, 200, "ready\n", "text/plain; charset=utf-8"},
		{"no release_info", true, nil, "GET", "/v1/craft_apps/release_info", 404, "{\"message\":\"Not Found\"}\n", "application/json"},
		{"escaped path", true, nil, "GET", "/heal%74hz", 404, "{\"message\":\"Not Found\"}\n", "application/json"},
		{"trailing slash", true, nil, "GET", HealthzPath + "/", 404, "{\"message\":\"Not Found\"}\n", "application/json"},
		{"unknown HEAD", true, nil, "HEAD", "/nope", 404, "", ""},
		{"wrong method", true, nil, "POST", HealthzPath, 405, "{\"message\":\"Method Not Allowed\"}\n", "application/json"},
		{"metrics absent", false, nil, "GET", MetricsPath, 404, "{\"message\":\"Not Found\"}\n", "application/json"},
		{"metrics", false, metrics, "GET", MetricsPath, 200, "metric 1\n", ""},
		{"options", false, nil, "OPTIONS", ReadyzPath, 204, "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := new(Gate)
			if tt.open {
				g.Open()
			}
			rec := httptest.NewRecorder()
			NewHealth(g, tt.metrics, zap.NewNop(), nil).ServeHTTP(rec, httptest.NewRequest(tt.method, tt.path, nil))
			if rec.Code != tt.wantStatus || rec.Body.String() != tt.wantBody || rec.Header().Get("Content-Type") != tt.wantCT {
				t.Errorf("got %d %q (%s), want %d %q (%s)", rec.Code, rec.Body.String(), rec.Header().Get("Content-Type"), tt.wantStatus, tt.wantBody, tt.wantCT)
			}
			if rec.Header().Get("X-Content-Type-Options") != "nosniff" {
				t.Errorf("X-Content-Type-Options %q, want nosniff", rec.Header().Get("X-Content-Type-Options"))
			}
			if tt.wantStatus >= 400 && rec.Header().Get("Cache-Control") != "no-store" {
				t.Errorf("Cache-Control %q, want no-store", rec.Header().Get("Cache-Control"))
			}
		})
	}
}
