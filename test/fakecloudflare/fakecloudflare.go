// Package fakecloudflare is Cloudflare's purge-by-URL API on loopback, for
// tests: it records every request (method, path, token, files) and answers as
// Cloudflare does, or fails or redirects as told.
package fakecloudflare

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

// Call is one request as the fake received it: a purge call, or another
// request it answered 404 or 400.
type Call struct {
	Method string    // POST for a purge call
	Path   string    // the request's path: /client/v4/zones/{zone}/purge_cache
	Token  string    // the bearer token of Authorization
	Files  []string  // the body's files
	At     time.Time // when it arrived
}

// Server is the fake API. Its methods are safe for concurrent use.
type Server struct {
	srv *httptest.Server

	mu       sync.Mutex
	calls    []Call
	fail     int // calls still to fail
	status   int
	body     []byte
	location string // "": no redirect
	onPurge  func(files []string)
}

// Start starts a fake on http:// whose URL() is the API's base URL, like
// https://api.cloudflare.com/client/v4/; it is closed with the test.
func Start(t testing.TB) *Server {
	t.Helper()
	s := &Server{}
	s.srv = httptest.NewServer(http.HandlerFunc(s.serve))
	t.Cleanup(s.srv.Close)
	return s
}

// StartTLS starts a fake as Start does, on https:// with a certificate that
// only Client trusts.
func StartTLS(t testing.TB) *Server {
	t.Helper()
	s := &Server{}
	s.srv = httptest.NewTLSServer(http.HandlerFunc(s.serve))
	t.Cleanup(s.srv.Close)
	return s
}

// URL is the API's base URL, ending with "/".
func (s *Server) URL() string { return s.srv.URL + "/client/v4/" }

// Client returns an HTTP client that trusts the fake's certificate.
func (s *Server) Client() *http.Client { return s.srv.Client() }

// Fail makes the next n calls fail with 500 and Cloudflare's error shape,
// with message msg.
func (s *Server) Fail(n int, msg string) {
	b, _ := json.Marshal(map[string]any{"success": false, "errors": []map[string]any{{"code": 10000, "message": msg}}})
	s.FailWith(n, http.StatusInternalServerError, b)
}

// FailWith makes the next n calls answer status with body as it is.
func (s *Server) FailWith(n, status int, body []byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.fail, s.status, s.body = n, status, body
}

// Redirect makes every call from now on answer status (a 3xx) with
// Location: location.
func (s *Server) Redirect(status int, location string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.status, s.location = status, location
}

// OnPurge makes every call that succeeds run f with its files before it is
// answered, as Cloudflare removes them from its cache before it answers:
// a test puts its cache in front of the pods and refreshes them there.
func (s *Server) OnPurge(f func(files []string)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.onPurge = f
}

// Calls returns the requests received so far, in order.
func (s *Server) Calls() []Call {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Call(nil), s.calls...)
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	var body struct {
		Files []string `json:"files"`
	}
	w.Header().Set("Content-Type", "application/json")
	call := Call{Method: r.Method, Path: r.URL.Path, Token: strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer "), At: time.Now()}
	route := r.Method == http.MethodPost && strings.HasSuffix(r.URL.Path, "/purge_cache")
	bodyErr := json.NewDecoder(r.Body).Decode(&body)
	call.Files = body.Files
	s.mu.Lock()
	s.calls = append(s.calls, call)
	s.mu.Unlock()
	switch {
	case !route:
		w.WriteHeader(http.StatusNotFound)
		_, _ = w.Write([]byte(`{"success":false,"errors":[{"code":7003,"message":"No route for that URI"}]}`))
		return
	case bodyErr != nil:
		w.WriteHeader(http.StatusBadRequest)
		_, _ = w.Write([]byte(`{"success":false,"errors":[{"code":1012,"message":"Request must contain one of \"purge_everything\", \"files\", \"tags\", \"hosts\" or \"prefixes\""}]}`))
		return
	}
	s.mu.Lock()
	fail, status, answer, location, onPurge := s.fail > 0, s.status, s.body, s.location, s.onPurge
	if fail {
		s.fail--
	}
	s.mu.Unlock()
	if location != "" {
		w.Header().Set("Location", location)
		w.WriteHeader(status)
		return
	}
	if fail {
		w.WriteHeader(status)
		_, _ = w.Write(answer)
		return
	}
	if onPurge != nil {
		onPurge(body.Files)
	}
	_, _ = w.Write([]byte(`{"success":true,"errors":[],"messages":[],"result":{"id":"023e105f4ecef8ad9ca31a8372d0c353"}}`))
}
