package api

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/storytold/craft-releases/pkg/snapshot"
)

func TestGate(t *testing.T) {
	var g Gate
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
	}
}

func TestRoutes(t *testing.T) {
	metrics := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_, _ = io.WriteString(w, "metric 1\n")
	})
	hook := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		w.WriteHeader(http.StatusAccepted)
		_, _ = w.Write(body)
	})
	api := func(open bool, opts Options) http.Handler {
		g := new(Gate)
		if open {
			g.Open()
		}
		return New(fixed{rendering(t, true)}, g, zap.NewNop(), opts)
	}
	health := func(open bool, opts Options) http.Handler {
		g := new(Gate)
		if open {
			g.Open()
		}
		return NewHealth(g, zap.NewNop(), opts)
	}
	tests := []struct {
		name       string
		server     func(open bool, opts Options) http.Handler
		open       bool
		opts       Options
		method     string
		path       string
		wantStatus int
		wantBody   string // "" to skip
	}{
		{name: "api healthz closed", server: api, method: "GET", path: "/healthz", wantStatus: 200, wantBody: "ok\n"},
		{name: "api healthz HEAD", server: api, method: "HEAD", path: "/healthz", wantStatus: 200},
		{name: "api readyz closed", server: api, method: "GET", path: "/readyz", wantStatus: 503, wantBody: "not ready\n"},
		{name: "api readyz open", server: api, open: true, method: "GET", path: "/readyz", wantStatus: 200, wantBody: "ready\n"},
		{name: "api release_info while not ready", server: api, method: "GET", path: ReleaseInfoPath, wantStatus: 200},
		{name: "api unknown path", server: api, method: "GET", path: "/v1/craft_apps", wantStatus: 404},
		{name: "api trailing slash", server: api, method: "GET", path: ReleaseInfoPath + "/", wantStatus: 404},
		{name: "api POST release_info", server: api, method: "POST", path: ReleaseInfoPath, wantStatus: 405},
		{name: "api POST an app", server: api, method: "POST", path: ReleaseInfoPath + "/photocraft", wantStatus: 405},
		{name: "api PUT a download", server: api, method: "PUT", path: "/v1/craft_apps/download/photocraft", wantStatus: 405},
		{name: "api POST the page", server: api, method: "POST", path: "/", wantStatus: 405},
		{name: "api DELETE healthz", server: api, method: "DELETE", path: "/healthz", wantStatus: 405},
		{name: "api metrics absent", server: api, method: "GET", path: "/metrics", wantStatus: 404},
		{name: "api metrics", server: api, opts: Options{Metrics: metrics}, method: "GET", path: "/metrics", wantStatus: 200, wantBody: "metric 1\n"},
		{name: "api webhook absent", server: api, method: "POST", path: WebhookPath, wantStatus: 404},
		{name: "api webhook", server: api, opts: Options{Webhook: hook}, method: "POST", path: WebhookPath, wantStatus: 202, wantBody: "{}"},
		{name: "api webhook GET", server: api, opts: Options{Webhook: hook}, method: "GET", path: WebhookPath, wantStatus: 405},
		{name: "api webhook OPTIONS", server: api, opts: Options{Webhook: hook}, method: "OPTIONS", path: WebhookPath, wantStatus: 204},
		{name: "health healthz", server: health, method: "GET", path: "/healthz", wantStatus: 200, wantBody: "ok\n"},
		{name: "health readyz closed", server: health, method: "GET", path: "/readyz", wantStatus: 503, wantBody: "not ready\n"},
		{name: "health readyz open", server: health, open: true, method: "GET", path: "/readyz", wantStatus: 200, wantBody: "ready\n"},
		{name: "health has no release_info", server: health, open: true, method: "GET", path: ReleaseInfoPath, wantStatus: 404},
		{name: "health metrics absent", server: health, method: "GET", path: "/metrics", wantStatus: 404},
		{name: "health metrics", server: health, opts: Options{Metrics: metrics}, method: "GET", path: "/metrics", wantStatus: 200, wantBody: "metric 1\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec := httptest.NewRecorder()
			var body io.Reader
			if tt.method == "POST" {
				body = strings.NewReader("{}")
			}
			tt.server(tt.open, tt.opts).ServeHTTP(rec, httptest.NewRequest(tt.method, tt.path, body))
			if rec.Code != tt.wantStatus {
				t.Errorf("status: got %d, want %d", rec.Code, tt.wantStatus)
			}
			if tt.wantBody != "" && rec.Body.String() != tt.wantBody {
				t.Errorf("body: got %q, want %q", rec.Body.String(), tt.wantBody)
			}
			if tt.method == "HEAD" && rec.Body.Len() != 0 {
				t.Errorf("HEAD body: got %q, want none", rec.Body.String())
			}
			// wire.md: Vary on every answer of the endpoint, errors included.
			if got := rec.Header().Get("Vary"); strings.HasPrefix(tt.path, ReleaseInfoPath) && tt.wantStatus != 404 && got != "Accept-Encoding" {
				t.Errorf("Vary: got %q, want Accept-Encoding", got)
			}
		})
	}
}

// TestReadyzFollowsGate checks that one server's /readyz follows its gate as
// it opens and closes (as at start-up and at shutdown).
func TestReadyzFollowsGate(t *testing.T) {
	g := new(Gate)
	s := NewHealth(g, zap.NewNop(), Options{})
	for _, step := range []struct {
		name string
		do   func()
		want int
	}{
		{"starting", func() {}, 503},
		{"loaded", g.Open, 200},
		{"shutting down", g.Close, 503},
	} {
		step.do()
		rec := httptest.NewRecorder()
		s.ServeHTTP(rec, httptest.NewRequest("GET", "/readyz", nil))
		if rec.Code != step.want {
			t.Errorf("%s: status got %d, want %d", step.name, rec.Code, step.want)
		}
	}
}

// panicking is a Renderer that panics.
type panicking struct{}

func (panicking) Current() *snapshot.Rendering { panic("boom") }

func TestRecover(t *testing.T) {
	core, logs := observer.New(zapcore.DebugLevel)
	s := New(panicking{}, new(Gate), zap.New(core), Options{})
	rec := httptest.NewRecorder()

	s.ServeHTTP(rec, httptest.NewRequest("GET", ReleaseInfoPath, nil))

	if rec.Code != http.StatusInternalServerError {
		t.Errorf("status: got %d, want 500", rec.Code)
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
			s := New(fixed{rendering(t, true)}, new(Gate), zap.New(core), Options{})
			s.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest("GET", ReleaseInfoPath, nil))
			lines := logs.FilterMessage("request").AllUntimed()
			if len(lines) != tt.want {
				t.Fatalf("access log lines: got %d, want %d", len(lines), tt.want)
			}
			if tt.want == 1 {
				f := lines[0].ContextMap()
				if f["method"] != "GET" || f["path"] != ReleaseInfoPath || f["status"] != int64(200) {
					t.Errorf("access log fields: got %v, want method GET, path %s, status 200", f, ReleaseInfoPath)
				}
			}
		})
	}
}

// blocking is a Renderer whose Current waits until release is closed,
// announcing each call on entered.
type blocking struct {
	r       *snapshot.Rendering
	entered chan struct{}
	release chan struct{}
}

func (b blocking) Current() *snapshot.Rendering {
	b.entered <- struct{}{}
	<-b.release
	return b.r
}

// closeNotifier is a listener that reports when it is closed.
type closeNotifier struct {
	net.Listener
	once   sync.Once
	closed chan struct{}
}

func (l *closeNotifier) Close() error {
	l.once.Do(func() { close(l.closed) })
	return l.Listener.Close()
}

// listen returns a loopback listener that reports when it is closed.
func listen(t testing.TB) *closeNotifier {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ln.Close() })
	return &closeNotifier{Listener: ln, closed: make(chan struct{})}
}

type result struct {
	status int
	body   []byte
	err    error
}

// get requests url in the background and delivers the outcome on the channel.
func get(url string) <-chan result {
	out := make(chan result, 1)
	go func() {
		client := &http.Client{Transport: &http.Transport{DisableCompression: true}}
		defer client.CloseIdleConnections()
		res, err := client.Get(url)
		if err != nil {
			out <- result{err: err}
			return
		}
		defer res.Body.Close()
		body, err := io.ReadAll(res.Body)
		out <- result{status: res.StatusCode, body: body, err: err}
	}()
	return out
}

func TestServeGraceful(t *testing.T) {
	cur := rendering(t, true)
	r := blocking{r: cur, entered: make(chan struct{}), release: make(chan struct{})}
	s := New(r, new(Gate), zap.NewNop(), Options{})
	ln := listen(t)
	addr := ln.Addr().String()
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	served := make(chan error, 1)
	go func() { served <- s.Serve(ctx, ln, time.Minute) }()

	inFlight := get("http://" + addr + ReleaseInfoPath)
	<-r.entered
	cancel()
	// The listener closing is what refuses new connections. (Dialling the
	// port to prove it would be flaky: another test may listen on it by now.)
	<-ln.closed

	select {
	case err := <-served:
		t.Fatalf("Serve returned %v with a request in flight", err)
	default:
	}

	close(r.release)
	res := <-inFlight
	if res.err != nil || res.status != http.StatusOK || string(res.body) != string(cur.Body.Bytes()) {
		t.Errorf("in-flight request: got status %d, %d bytes, err %v; want 200 with the body", res.status, len(res.body), res.err)
	}
	if err := <-served; err != nil {
		t.Errorf("Serve: got %v, want nil after a graceful shutdown", err)
	}
}

func TestServeShutdownDeadline(t *testing.T) {
	r := blocking{r: rendering(t, true), entered: make(chan struct{}), release: make(chan struct{})}
	s := New(r, new(Gate), zap.NewNop(), Options{})
	ln := listen(t)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	served := make(chan error, 1)
	go func() { served <- s.Serve(ctx, ln, 10*time.Millisecond) }()

	inFlight := get("http://" + ln.Addr().String() + ReleaseInfoPath)
	<-r.entered
	cancel()

	err := <-served
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Serve: got %v, want the shutdown deadline exceeded", err)
	}
	close(r.release)
	if res := <-inFlight; res.err == nil {
		t.Errorf("request cut at the deadline: got status %d, want a connection error", res.status)
	}
}
