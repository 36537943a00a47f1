package api

import (
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"slices"
	"strings"
	"testing"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/storytold/craft-releases/pkg/daemon"
	"github.com/storytold/craft-releases/pkg/routes"
	"github.com/storytold/craft-releases/pkg/snapshot"
)

// TestRoutes: what the router answers per path and method; every answer is
// nosniff, every error no-store. The health paths answer as pkg/daemon's
// handler does (TestHealthAnswersAsTheRouter).
func TestRoutes(t *testing.T) {
	t.Parallel()
	metrics := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_, _ = io.WriteString(w, "metric 1\n")
	})
	hook := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		w.WriteHeader(http.StatusAccepted)
		_, _ = w.Write(body)
	})
	tests := []struct {
		name         string
		opts         Options
		method, path string
		wantStatus   int
		wantBody     string // "" to skip
	}{
		{name: "release_info while not ready", method: "GET", path: routes.ReleaseInfoPath, wantStatus: 200},
		{name: "unknown path", method: "GET", path: "/v1/craft_apps", wantStatus: 404},
		{name: "unknown path HEAD", method: "HEAD", path: "/nope", wantStatus: 404},
		{name: "trailing slash", method: "GET", path: routes.ReleaseInfoPath + "/", wantStatus: 404},
		{name: "POST release_info", method: "POST", path: routes.ReleaseInfoPath, wantStatus: 405},
		{name: "POST an app", method: "POST", path: routes.ReleaseInfoPath + "/photocraft", wantStatus: 405},
		{name: "PUT a download", method: "PUT", path: "/v1/craft_apps/download/photocraft", wantStatus: 405},
		{name: "POST the page", method: "POST", path: "/", wantStatus: 405},
		{name: "PUT the document", method: "PUT", path: routes.OpenAPIPath, wantStatus: 405},
		{name: "DELETE healthz", method: "DELETE", path: "/healthz", wantStatus: 405},
		{name: "metrics absent", method: "GET", path: "/metrics", wantStatus: 404},
		{name: "metrics", opts: Options{Metrics: metrics}, method: "GET", path: "/metrics", wantStatus: 200, wantBody: "metric 1\n"},
		{name: "webhook absent", method: "POST", path: routes.WebhookPath, wantStatus: 404},
		{name: "webhook", opts: Options{Webhook: hook}, method: "POST", path: routes.WebhookPath, wantStatus: 202, wantBody: "{}"},
		{name: "webhook GET", opts: Options{Webhook: hook}, method: "GET", path: routes.WebhookPath, wantStatus: 405},
		{name: "webhook OPTIONS", opts: Options{Webhook: hook}, method: "OPTIONS", path: routes.WebhookPath, wantStatus: 204},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec := httptest.NewRecorder()
			var body io.Reader
			if tt.method == "POST" {
				body = strings.NewReader("{}")
			}
			New(fixed{rendering(t, true)}, new(daemon.Gate), zap.NewNop(), tt.opts).ServeHTTP(rec, httptest.NewRequest(tt.method, tt.path, body))
			if rec.Code != tt.wantStatus {
				t.Errorf("status: got %d, want %d", rec.Code, tt.wantStatus)
			}
			if tt.wantBody != "" && rec.Body.String() != tt.wantBody {
				t.Errorf("body: got %q, want %q", rec.Body.String(), tt.wantBody)
			}
			if tt.method == "HEAD" && rec.Body.Len() != 0 {
				t.Errorf("HEAD body: got %q, want none", rec.Body.String())
			}
			if got := rec.Header().Get("X-Content-Type-Options"); got != "nosniff" {
				t.Errorf("X-Content-Type-Options: got %q, want nosniff", got)
			}
			if got := rec.Header().Get("Cache-Control"); tt.wantStatus >= 400 && got != "no-store" {
				t.Errorf("Cache-Control: got %q, want no-store", got)
			}
			// docs/wire.md: Vary on every answer of the endpoint, errors included.
			if got := rec.Header().Get("Vary"); strings.HasPrefix(tt.path, routes.ReleaseInfoPath) && tt.wantStatus != 404 && got != "Accept-Encoding" {
				t.Errorf("Vary: got %q, want Accept-Encoding", got)
			}
		})
	}
}

// panicking is a Renderer that panics.
type panicking struct{}

func (panicking) Current() *snapshot.Rendering { panic("boom") }

func TestRecover(t *testing.T) {
	t.Parallel()
	core, logs := observer.New(zapcore.DebugLevel)
	s := New(panicking{}, new(daemon.Gate), zap.New(core), Options{})
	rec := httptest.NewRecorder()

	s.ServeHTTP(rec, httptest.NewRequest("GET", routes.ReleaseInfoPath, nil))

	if rec.Code != http.StatusInternalServerError || rec.Header().Get("Cache-Control") != "no-store" {
		t.Errorf("status %d, Cache-Control %q; want 500, no-store", rec.Code, rec.Header().Get("Cache-Control"))
	}
	panics := logs.FilterMessage("panic").AllUntimed()
	if len(panics) != 1 {
		t.Fatalf("panic log lines: got %d, want 1 (all: %v)", len(panics), logs.AllUntimed())
	}
	if got := panics[0].ContextMap()["err"]; got != "boom" {
		t.Errorf("panic err field: got %v, want boom", got)
	}
	if got := logs.FilterMessage("request").AllUntimed(); len(got) != 1 || got[0].ContextMap()["status"] != int64(500) {
		t.Errorf("access log: got %v, want one line with status 500", got)
	}
}

func TestAccessLog(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		level zapcore.Level
		want  int // access log lines for one request
	}{
		{"debug", zapcore.DebugLevel, 1},
		{"info", zapcore.InfoLevel, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			core, logs := observer.New(tt.level)
			s := New(fixed{rendering(t, true)}, new(daemon.Gate), zap.New(core), Options{})
			s.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest("GET", routes.ReleaseInfoPath, nil))
			lines := logs.FilterMessage("request").AllUntimed()
			if len(lines) != tt.want {
				t.Fatalf("access log lines: got %d, want %d", len(lines), tt.want)
			}
			if tt.want == 1 {
				f := lines[0].ContextMap()
				if f["method"] != "GET" || f["path"] != routes.ReleaseInfoPath || f["status"] != int64(200) {
					t.Errorf("access log fields: got %v, want method GET, path %s, status 200", f, routes.ReleaseInfoPath)
				}
			}
		})
	}
}

// TestHealthAnswersAsTheRouter: the ports that are not public (pkg/daemon's
// handler, without echo) answer the health paths, unknown paths, wrong
// methods, OPTIONS and bodies on a GET as this server does: the same status,
// headers, body and observed route.
func TestHealthAnswersAsTheRouter(t *testing.T) {
	t.Parallel()
	metrics := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "m 1\n") })
	g := new(daemon.Gate)
	apiObs, healthObs := &recorder{}, &recorder{}
	servers := []http.Handler{
		New(fixed{rendering(t, true)}, g, zap.NewNop(), Options{Metrics: metrics, Observer: apiObs}),
		daemon.NewHealth(g, metrics, zap.NewNop(), healthObs),
	}
	requests := []struct{ method, target, body string }{
		{"GET", "/healthz", ""}, {"HEAD", "/healthz", ""}, {"GET", "/readyz", ""}, {"OPTIONS", "/healthz", ""},
		{"OPTIONS", "/nope", ""}, {"POST", "/healthz", ""}, {"PUT", "/metrics", ""}, {"DELETE", "/readyz", ""},
		{"GET", "/metrics", ""}, {"HEAD", "/metrics", ""}, {"GET", "/nope", ""}, {"HEAD", "/nope", ""},
		{"GET", "/healthz/", ""}, {"GET", "//healthz", ""}, {"GET", "/heal%74hz", ""}, {"GET", "/healthz?x=1", ""},
		{"GET", "/healthz", "x"}, {"HEAD", "/nope", "x"}, {"POST", "/nope", "x"},
	}
	for _, open := range []bool{false, true} {
		if open {
			g.Open()
		}
		for _, q := range requests {
			var answers [2]*httptest.ResponseRecorder
			for i, s := range servers {
				var body io.Reader
				if q.body != "" {
					body = strings.NewReader(q.body)
				}
				answers[i] = httptest.NewRecorder()
				s.ServeHTTP(answers[i], httptest.NewRequest(q.method, q.target, body))
			}
			a, h := answers[0], answers[1]
			if a.Code != h.Code || a.Body.String() != h.Body.String() || !reflect.DeepEqual(a.Header(), h.Header()) {
				t.Errorf("%s %s (body %q): the router answers %d %v %q, the health handler %d %v %q",
					q.method, q.target, q.body, a.Code, a.Header(), a.Body, h.Code, h.Header(), h.Body)
			}
		}
	}
	if a, h := apiObs.take(), healthObs.take(); !slices.Equal(a, h) || len(a) != 2*len(requests) {
		t.Errorf("observed by the router %v, by the health handler %v", a, h)
	}
}
