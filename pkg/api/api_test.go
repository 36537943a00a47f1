package api

import (
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/labstack/echo/v4"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/storytold/craft-releases/pkg/daemon"
	"github.com/storytold/craft-releases/pkg/routes"
	"github.com/storytold/craft-releases/pkg/snapshot"
)

// TestRoutes: what the router answers per path and method, and under which
// route it observes the request, with the status sent; every answer is
// nosniff, every error no-store. A request with a body on any route but the
// webhook's is answered with Connection: close, which daemon.Serve takes as
// leave the body unread. The health paths answer as pkg/daemon's
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
	cur := rendering(t, true)
	const (
		ri, app, dl, unmatched = routes.ReleaseInfoPath, routes.ReleaseInfoAppPath, routes.DownloadPath, daemon.UnmatchedRoute
	)
	options := func(vary string) map[string]string {
		return map[string]string{"Allow": "GET, HEAD, OPTIONS", "Vary": vary}
	}
	for _, tt := range []struct {
		name                string
		opts                Options
		panics              bool // the Renderer panics
		method, path, body  string
		header              http.Header
		wantClose           bool // Connection: close
		wantStatus          int
		wantBody, wantRoute string // "" to skip; as observed, "" for none
		wantHeader          map[string]string
	}{
		{name: "release_info while not ready", method: "GET", path: ri, wantStatus: 200, wantRoute: ri},
		{name: "release_info HEAD", method: "HEAD", path: ri, wantStatus: 200, wantRoute: ri},
		{name: "release_info not modified", method: "GET", path: ri, header: http.Header{"If-None-Match": {cur.ETag}}, wantStatus: 304, wantRoute: ri},
		{name: "POST release_info", opts: Options{Webhook: hook}, method: "POST", path: ri, body: "{}", wantStatus: 405, wantRoute: ri, wantClose: true},
		{name: "POST release_info without a body", method: "POST", path: ri, wantStatus: 405, wantRoute: ri},
		{name: "POST an app", method: "POST", path: ri + "/photocraft", body: "{}", wantStatus: 405, wantRoute: app, wantClose: true},
		{name: "PUT a download", method: "PUT", path: "/v1/craft_apps/download/photocraft", wantStatus: 405, wantRoute: dl},
		{name: "POST the page", method: "POST", path: "/", body: "{}", wantStatus: 405, wantRoute: "/", wantClose: true},
		{name: "PUT the document", method: "PUT", path: routes.OpenAPIPath, wantStatus: 405, wantRoute: routes.OpenAPIPath},
		{name: "metrics absent", method: "GET", path: "/metrics", wantStatus: 404, wantRoute: unmatched},
		{name: "metrics", opts: Options{Metrics: metrics}, method: "GET", path: "/metrics", wantStatus: 200, wantBody: "metric 1\n", wantRoute: "/metrics"},
		{name: "unknown path", method: "GET", path: "/wp-login.php", wantStatus: 404, wantRoute: unmatched},
		{name: "unknown path HEAD", method: "HEAD", path: "/nope", wantStatus: 404, wantRoute: unmatched},
		{name: "unknown path POST", opts: Options{Webhook: hook}, method: "POST", path: "/v1/craft_apps", body: "{}", wantStatus: 404, wantRoute: unmatched, wantClose: true},
		{name: "trailing slash", method: "GET", path: ri + "/", wantStatus: 404, wantRoute: unmatched},
		{name: "one app", method: "GET", path: ri + "/photocraft", wantStatus: 200, wantRoute: app},
		{name: "an unknown app", method: "GET", path: ri + "/x", wantStatus: 404, wantRoute: app},
		{name: "below an app: the rest is the key", method: "GET", path: ri + "/photocraft/x", wantStatus: 404, wantRoute: app},
		{name: "a download", method: "GET", path: "/v1/craft_apps/download/photocraft?os=linux&arch=x64", wantStatus: 404, wantRoute: dl},
		{name: "the page", method: "GET", path: "/", wantStatus: 200, wantRoute: "/"},
		{name: "webhook absent", method: "POST", path: routes.WebhookPath, body: "{}", wantStatus: 404, wantRoute: unmatched, wantClose: true},
		{name: "webhook", opts: Options{Webhook: hook}, method: "POST", path: routes.WebhookPath, body: "{}", wantStatus: 202, wantBody: "{}", wantRoute: routes.WebhookPath},
		{name: "webhook GET", opts: Options{Webhook: hook}, method: "GET", path: routes.WebhookPath, wantStatus: 405, wantRoute: routes.WebhookPath},
		{name: "webhook OPTIONS, the router's own", opts: Options{Webhook: hook}, method: "OPTIONS", path: routes.WebhookPath, wantStatus: 204},
		// OPTIONS is answered by the route itself, with the Vary of its other answers.
		{name: "OPTIONS release_info", method: "OPTIONS", path: ri, wantStatus: 204, wantRoute: ri, wantHeader: options("Accept-Encoding")},
		{name: "OPTIONS with a body", opts: Options{Webhook: hook}, method: "OPTIONS", path: ri, body: "x", wantStatus: 204, wantRoute: ri, wantClose: true},
		{name: "OPTIONS an app", method: "OPTIONS", path: ri + "/photocraft", wantStatus: 204, wantRoute: app, wantHeader: options("Accept-Encoding")},
		{name: "OPTIONS a download", method: "OPTIONS", path: "/v1/craft_apps/download/photocraft", wantStatus: 204, wantRoute: dl, wantHeader: options("User-Agent")},
		{name: "OPTIONS the page", method: "OPTIONS", path: "/", wantStatus: 204, wantRoute: "/", wantHeader: options("Accept-Encoding")},
		{name: "OPTIONS healthz", method: "OPTIONS", path: "/healthz", wantStatus: 204, wantRoute: "/healthz", wantHeader: options("")},
		{name: "OPTIONS readyz", method: "OPTIONS", path: "/readyz", wantStatus: 204, wantRoute: "/readyz", wantHeader: options("")},
		{name: "a handler's error", method: "GET", path: "/fail/error", wantStatus: 500, wantRoute: "/fail/error"},
		{name: "a handler's HTTP error", method: "GET", path: "/fail/teapot", wantStatus: 418, wantRoute: "/fail/teapot"},
		{name: "a handler's panic", panics: true, method: "GET", path: ri, wantStatus: 500, wantRoute: ri},
	} {
		t.Run(tt.name, func(t *testing.T) {
			obs := &recorder{}
			opts := tt.opts
			opts.Observer = obs
			var r Renderer = fixed{cur}
			if tt.panics {
				r = panicking{}
			}
			s := New(r, new(daemon.Gate), zap.NewNop(), opts)
			// Routes that fail the ways a handler can, to see what is recorded.
			s.echo.GET("/fail/error", s.observe("/fail/error")(func(echo.Context) error { return errors.New("broken") }))
			s.echo.GET("/fail/teapot", s.observe("/fail/teapot")(func(echo.Context) error { return echo.NewHTTPError(http.StatusTeapot) }))
			req := httptest.NewRequest(tt.method, tt.path, strings.NewReader(tt.body))
			maps.Copy(req.Header, tt.header)
			rec := httptest.NewRecorder()
			s.ServeHTTP(rec, req)
			if rec.Code != tt.wantStatus {
				t.Errorf("status: got %d, want %d", rec.Code, tt.wantStatus)
			}
			var want []string
			if tt.wantRoute != "" {
				want = []string{fmt.Sprintf("%s %d", tt.wantRoute, rec.Code)}
			}
			if got := obs.take(); !slices.Equal(got, want) {
				t.Errorf("observed %q, want %q", got, want)
			}
			if got := rec.Header().Get("Connection") == "close"; got != tt.wantClose {
				t.Errorf("Connection: close %v, want %v", got, tt.wantClose)
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
			if got := rec.Header().Get("Vary"); strings.HasPrefix(tt.path, ri) && tt.wantStatus != 404 && got != "Accept-Encoding" {
				t.Errorf("Vary: got %q, want Accept-Encoding", got)
			}
			for k, want := range tt.wantHeader {
				if got := rec.Header().Get(k); got != want {
					t.Errorf("%s: got %q, want %q", k, got, want)
				}
			}
		})
	}
}

// panicking is a Renderer that panics.
type panicking struct{}

func (panicking) Current() *snapshot.Rendering { panic("boom") }

// TestLogs: a request is logged at debug level only, with its method,
// path and status; a handler's panic is logged once with its value, and
// answered 500 (whose headers TestRoutes pins).
func TestLogs(t *testing.T) {
	t.Parallel()
	ok := fixed{rendering(t, true)}
	for _, tt := range []struct {
		name            string
		level           zapcore.Level
		r               Renderer
		status          int
		lines, panicked int
	}{
		{"debug", zapcore.DebugLevel, ok, 200, 1, 0},
		{"info", zapcore.InfoLevel, ok, 200, 0, 0},
		{"a panic", zapcore.DebugLevel, panicking{}, 500, 1, 1},
	} {
		core, logs := observer.New(tt.level)
		rec := httptest.NewRecorder()
		New(tt.r, new(daemon.Gate), zap.New(core), Options{}).ServeHTTP(rec, httptest.NewRequest("GET", routes.ReleaseInfoPath, nil))
		if rec.Code != tt.status {
			t.Errorf("%s: status %d, want %d", tt.name, rec.Code, tt.status)
		}
		lines := logs.FilterMessage("request").AllUntimed()
		if len(lines) != tt.lines {
			t.Fatalf("%s: access log lines: got %d, want %d", tt.name, len(lines), tt.lines)
		}
		if f := lines; len(f) == 1 && (f[0].ContextMap()["method"] != "GET" || f[0].ContextMap()["path"] != routes.ReleaseInfoPath || f[0].ContextMap()["status"] != int64(tt.status)) {
			t.Errorf("%s: access log fields: got %v, want method GET, path %s, status %d", tt.name, f[0].ContextMap(), routes.ReleaseInfoPath, tt.status)
		}
		panics := logs.FilterMessage("panic").AllUntimed()
		if len(panics) != tt.panicked || tt.panicked == 1 && panics[0].ContextMap()["err"] != "boom" {
			t.Errorf("%s: panic log lines %v, want %d with err boom (all: %v)", tt.name, panics, tt.panicked, logs.AllUntimed())
		}
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
