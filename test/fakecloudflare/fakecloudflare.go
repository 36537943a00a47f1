// Package fakecloudflare is Cloudflare's purge-by-URL API on loopback, for
// tests: it records every call (path, token, files) and answers as
// Cloudflare does, or fails as told.
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

// Call is one purge call as the fake received it.
type Call struct {
	Path  string    // the request's path: /client/v4/zones/{zone}/purge_cache
	Token string    // the bearer token of Authorization
	Files []string  // the body's files
	At    time.Time // when it arrived
}

// Server is the fake API. Its methods are safe for concurrent use.
type Server struct {
	srv *httptest.Server

	mu      sync.Mutex
	calls   []Call
	fail    int // calls still to fail
	msg     string
	onPurge func(files []string)
}

// Start starts a fake whose URL() is the API's base URL, like
// https://api.cloudflare.com/client/v4/; it is closed with the test.
func Start(t testing.TB) *Server {
	t.Helper()
	s := &Server{}
	s.srv = httptest.NewServer(http.HandlerFunc(s.serve))
	t.Cleanup(s.srv.Close)
	return s
}

// URL is the API's base URL, ending with "/".
func (s *Server) URL() string { return s.srv.URL + "/client/v4/" }

// Fail makes the next n calls fail with 500 and Cloudflare's error shape,
// with message msg.
func (s *Server) Fail(n int, msg string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.fail, s.msg = n, msg
}

// OnPurge makes every call that succeeds run f with its files before it is
// answered, as Cloudflare removes them from its cache before it answers:
// a test puts its cache in front of the pods and refreshes them there.
func (s *Server) OnPurge(f func(files []string)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.onPurge = f
}

// Calls returns the calls received so far, in order.
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
	if r.Method != http.MethodPost || !strings.HasSuffix(r.URL.Path, "/purge_cache") {
		w.WriteHeader(http.StatusNotFound)
		_, _ = w.Write([]byte(`{"success":false,"errors":[{"code":7003,"message":"No route for that URI"}]}`))
		return
	}
	if err := json.NewDecoder(r.Body).Decode(&body); err != nil {
		w.WriteHeader(http.StatusBadRequest)
		_, _ = w.Write([]byte(`{"success":false,"errors":[{"code":1012,"message":"Request must contain one of \"purge_everything\", \"files\", \"tags\", \"hosts\" or \"prefixes\""}]}`))
		return
	}
	s.mu.Lock()
	s.calls = append(s.calls, Call{Path: r.URL.Path, Token: strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer "),
		Files: body.Files, At: time.Now()})
	fail, msg, onPurge := s.fail > 0, s.msg, s.onPurge
	if fail {
		s.fail--
	}
	s.mu.Unlock()
	if fail {
		w.WriteHeader(http.StatusInternalServerError)
		b, _ := json.Marshal(map[string]any{"success": false, "errors": []map[string]any{{"code": 10000, "message": msg}}})
		_, _ = w.Write(b)
		return
	}
	if onPurge != nil {
		onPurge(body.Files)
	}
	_, _ = w.Write([]byte(`{"success":true,"errors":[],"messages":[],"result":{"id":"023e105f4ecef8ad9ca31a8372d0c353"}}`))
}
