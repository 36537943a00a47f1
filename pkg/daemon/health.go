package daemon

import (
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"go.uber.org/zap"

	"github.com/storytold/craft-releases/pkg/logsafe"
)

// The paths of the health endpoints, which every server of both binaries
// answers: the public one and the port that is not public.
const (
	HealthzPath = "/healthz" // 200 while the process runs
	ReadyzPath  = "/readyz"  // 200 while the Gate is open
	MetricsPath = "/metrics" // Prometheus text
)

// UnmatchedRoute is the route under which an Observer is told about the
// requests whose path no route has (404), so that random paths make one
// label value.
const UnmatchedRoute = "unmatched"

// Observer records answered requests, for metrics.
type Observer interface {
	// Route is called once for each registered route path, and once with
	// UnmatchedRoute, when the server is built. The function it returns is
	// called concurrently, once per answered request of that route, with the
	// status code sent and the time taken; it must neither block nor, for a
	// request path that allocates nothing itself, allocate.
	Route(path string) func(code int, took time.Duration)
}

// Healthz answers 200 for as long as the process serves HTTP.
func Healthz() http.Handler {
	ok := newText("ok\n")
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { ok.write(w, r, http.StatusOK) })
}

// Readyz answers 200 while ready is open and 503 while it is closed.
func Readyz(ready *Gate) http.Handler {
	yes, no := newText("ready\n"), newText("not ready\n")
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if ready.Ready() {
			yes.write(w, r, http.StatusOK)
			return
		}
		no.write(w, r, http.StatusServiceUnavailable)
	})
}

// text is a small plain-text answer with its header values built once.
type text struct {
	body                              []byte
	contentType, cacheControl, length []string
}

func newText(body string) text {
	return text{
		body:         []byte(body),
		contentType:  []string{"text/plain; charset=utf-8"},
		cacheControl: noStore,
		length:       []string{strconv.Itoa(len(body))},
	}
}

// write answers r with status and t, without a body for HEAD.
func (t text) write(w http.ResponseWriter, r *http.Request, status int) {
	h := w.Header()
	h["Content-Type"] = t.contentType
	h["Cache-Control"] = t.cacheControl
	h["Content-Length"] = t.length
	w.WriteHeader(status)
	if r.Method != http.MethodHead {
		// A failed write means the client has gone: no one is left to tell.
		_, _ = w.Write(t.body)
	}
}

var (
	noStore    = []string{"no-store"}
	nosniff    = []string{"nosniff"}
	allowGet   = []string{"GET, HEAD, OPTIONS"} // OPTIONS' answer
	allowed405 = []string{"OPTIONS, GET, HEAD"} // a 405's, in the order the API's router gives
	jsonType   = []string{"application/json"}
	connClose  = []string{"close"}
)

// NewHealth returns the handler of the ports that are not public (the
// poller's, the API's metrics port): GET and HEAD of /healthz, /readyz
// reporting ready and, when metrics is not nil, /metrics; OPTIONS of each
// (204 with Allow). A path it does not serve answers 404, another method 405,
// a GET or HEAD with a body 400, a panic 500:
// each no-store with a JSON message, as the API's own router answers. Every
// answer carries X-Content-Type-Options: nosniff. When obs is not nil it is
// told about every request; at debug level each gets an access-log line.
// No route takes a body: a request with one is answered, unread, with
// Connection: close.
func NewHealth(ready *Gate, metrics http.Handler, log *zap.Logger, obs Observer) http.Handler {
	h := &health{log: log, routes: map[string]http.Handler{HealthzPath: Healthz(), ReadyzPath: Readyz(ready)}}
	if metrics != nil {
		h.routes[MetricsPath] = metrics
	}
	if obs != nil {
		h.unmatched = obs.Route(UnmatchedRoute)
		h.observed = make(map[string]func(int, time.Duration))
		for _, p := range []string{HealthzPath, ReadyzPath, MetricsPath} {
			if h.routes[p] != nil {
				h.observed[p] = obs.Route(p)
			}
		}
	}
	return h
}

type health struct {
	log       *zap.Logger
	routes    map[string]http.Handler
	observed  map[string]func(code int, took time.Duration) // nil: no Observer
	unmatched func(code int, took time.Duration)
}

func (h *health) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	w.Header()["X-Content-Type-Options"] = nosniff
	sw := &statusWriter{ResponseWriter: w}
	path := r.URL.RawPath
	if path == "" {
		path = r.URL.Path
	}
	route, known := h.routes[path]
	defer h.finish(sw, r, path, known, start)
	if r.ContentLength != 0 {
		// No route here takes a body: the answer closes the connection
		// rather than wait for a body no one reads (Serve).
		sw.Header()["Connection"] = connClose
	}
	switch {
	case (r.Method == http.MethodGet || r.Method == http.MethodHead) && (r.ContentLength != 0 || len(r.TransferEncoding) > 0):
		// RFC 9110 §9.3.1, RFC 9112 §6.1: such a body has no meaning, and
		// where it ends is how requests get smuggled past a proxy.
		failed(sw, r, http.StatusBadRequest, "a GET or HEAD request must not have a body")
	case !known:
		failed(sw, r, http.StatusNotFound, "Not Found")
	case r.Method == http.MethodGet || r.Method == http.MethodHead:
		route.ServeHTTP(sw, r)
	case r.Method == http.MethodOptions:
		sw.Header()["Allow"] = allowGet
		sw.WriteHeader(http.StatusNoContent)
	default:
		sw.Header()["Allow"] = allowed405
		failed(sw, r, http.StatusMethodNotAllowed, "Method Not Allowed")
	}
}

// finish answers a panic with 500, then tells the Observer and the access
// log about the request.
func (h *health) finish(w *statusWriter, r *http.Request, path string, known bool, start time.Time) {
	if v := recover(); v != nil {
		// net/http's own signal to abort a response must reach it.
		if err, ok := v.(error); ok && errors.Is(err, http.ErrAbortHandler) {
			panic(v)
		}
		h.log.Error("panic", zap.String("method", r.Method), logsafe.String("path", r.URL.Path),
			logsafe.String("err", fmt.Sprint(v)), zap.Stack("stack"))
		if w.status == 0 {
			failed(w, r, http.StatusInternalServerError, "Internal Server Error")
		}
	}
	took := time.Since(start)
	if h.observed != nil {
		record := h.unmatched
		if known {
			record = h.observed[path]
		}
		record(w.code(), took)
	}
	if h.log.Core().Enabled(zap.DebugLevel) {
		h.log.Debug("request", zap.String("method", r.Method), logsafe.String("path", r.URL.Path),
			zap.Int("status", w.code()), zap.Duration("took", took))
	}
}

// failed answers an error: no-store, a JSON message but for HEAD.
func failed(w http.ResponseWriter, r *http.Request, status int, msg string) {
	h := w.Header()
	h["Cache-Control"] = noStore
	if r.Method == http.MethodHead {
		w.WriteHeader(status)
		return
	}
	h["Content-Type"] = jsonType
	w.WriteHeader(status)
	_, _ = fmt.Fprintf(w, "{\"message\":%q}\n", msg)
}

// statusWriter remembers the status code sent.
type statusWriter struct {
	http.ResponseWriter
	status int
}

func (w *statusWriter) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
	}
	w.ResponseWriter.WriteHeader(code)
}

// Write sends the status first, as the API's router does.
func (w *statusWriter) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.WriteHeader(http.StatusOK)
	}
	return w.ResponseWriter.Write(b)
}

// code is the status sent, 200 when the handler sent nothing.
func (w *statusWriter) code() int {
	if w.status == 0 {
		return http.StatusOK
	}
	return w.status
}

// Unwrap lets http.ResponseController reach the connection (promhttp
// flushes through it).
func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }
