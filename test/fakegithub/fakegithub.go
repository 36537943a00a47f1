// Package fakegithub is a fake of the GitHub REST endpoints the service
// calls, GET /repos/{org}/{project}/releases/latest, for a pre-release
// channel GET /repos/{org}/{project}/releases (the list), for an asset's
// bytes GET /repos/{org}/{project}/releases/assets/{id}, and for an
// operator's check of a tag GET /repos/{org}/{project}/releases/tags/{tag},
// served over HTTP on loopback for tests.
//
// A test publishes releases per repository, programs faults (rate limits,
// server errors, slow, malformed, oversized or hung-up answers), and reads
// back every request the fake received. Answers look like GitHub's: JSON
// bodies, strong ETags derived from the body bytes, 304 for a matching
// If-None-Match, 404 with GitHub's message for a repository without a
// release, and x-ratelimit-* headers.
//
// Every method of Server is safe for concurrent use, including while requests
// are being served.
package fakegithub

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// AnyRepo stands for every repository where a method takes one: faults
// queued or stuck for AnyRepo apply to every release request, and
// Count(AnyRepo) counts every request.
const AnyRepo = ""

// List returns the name of repo's release list, which Queue, Stick, Count,
// ETag and Request.Repo take as they take a repository: a fault queued for
// repo applies to its latest release only, one queued for List(repo) to its
// list only, one for AnyRepo to both.
func List(repo string) string { return repo + "/releases" }

// AssetOf returns the name of asset id of repo, which Queue, Stick, Count
// and Request.Repo take as they take a repository: a fault queued for it
// applies to that asset's requests only.
func AssetOf(repo string, id int64) string {
	return repo + "/releases/assets/" + strconv.FormatInt(id, 10)
}

// TagOf returns the name of repo's release tag, which Queue, Stick, Count
// and Request.Repo take as they take a repository: a fault queued for it
// applies to that tag's requests only.
func TagOf(repo, tag string) string { return repo + tagsPath + tag }

const tagsPath = "/releases/tags/"

// objectsPath is where the fake redirects asset requests to in
// RedirectAssets mode, as GitHub does to its objects host.
const objectsPath = "/_objects/"

// Default and largest per_page of the list, as GitHub's.
const (
	defaultPerPage = 30
	maxPerPage     = 100
)

// Server is a fake GitHub REST API. Create one with New.
type Server struct {
	srv  *httptest.Server
	done chan struct{} // closed when the test ends, so that delays give up

	// active counts handlers still running, so the fake's own tests can see
	// that a delayed answer gives up when its request is cancelled.
	active sync.WaitGroup

	mu       sync.Mutex
	releases map[string]published
	lists    map[string][]Release // by repo, newest first; absent: SetList never called
	queued   map[string][]Fault
	sticky   map[string]Fault
	quota    Quota
	requests []Request
	assets   map[string][]byte // by AssetOf: the bytes of published assets with Content
	redirect bool              // RedirectAssets
}

type published struct {
	body []byte
	etag string
}

// Request is one request the fake received, recorded on arrival.
type Request struct {
	Method string
	Path   string    // the URL path as received
	Repo   string    // "org/project" for the latest-release route, List("org/project") for the list, TagOf for a tag, else ""
	At     time.Time // arrival time

	// The headers the service must get right; "" when absent (use Header to
	// tell an empty header from a missing one).
	IfNoneMatch   string
	Authorization string
	UserAgent     string
	Accept        string
	APIVersion    string // X-GitHub-Api-Version

	Header http.Header // a copy of every request header
}

// Quota is what the fake announces in its x-ratelimit-* headers on answers
// that a fault does not override. The zero Quota sends no such headers.
type Quota struct {
	Limit     int
	Remaining int
	Reset     time.Time // sent as Unix seconds
}

// New starts a fake GitHub on a free loopback port. It is closed by
// t.Cleanup. It serves no release until Publish is called, and announces a
// quota of 5000 requests with 4999 remaining, resetting in an hour.
func New(t testing.TB) *Server {
	t.Helper()
	s := newServer()
	s.srv = httptest.NewServer(http.HandlerFunc(s.serve))
	t.Cleanup(s.Close)
	return s
}

// Listen starts a fake GitHub on ln, as New does, for programs that are not
// tests (the local development stack). Close stops it.
func Listen(ln net.Listener) *Server {
	s := newServer()
	s.srv = &httptest.Server{Listener: ln, Config: &http.Server{Handler: http.HandlerFunc(s.serve)}}
	s.srv.Start()
	return s
}

func newServer() *Server {
	return &Server{
		done:     make(chan struct{}),
		releases: make(map[string]published),
		lists:    make(map[string][]Release),
		queued:   make(map[string][]Fault),
		sticky:   make(map[string]Fault),
		assets:   make(map[string][]byte),
		quota: Quota{
			Limit:     5000,
			Remaining: 4999,
			Reset:     time.Now().Add(time.Hour).Truncate(time.Second),
		},
	}
}

// Close stops the server, ending slow answers at once.
func (s *Server) Close() {
	close(s.done)
	s.srv.Close()
}

// URL is the fake's base URL, ending in "/", as
// CRAFT_APPS_RELEASE_GITHUB_API_URL takes it.
func (s *Server) URL() string { return s.srv.URL + "/" }

// Publish makes r the latest release of repo ("org/project"), replacing any
// earlier one. The ETag changes whenever the served bytes change.
func (s *Server) Publish(repo string, r Release) {
	body := r.JSON()
	s.mu.Lock()
	defer s.mu.Unlock()
	s.releases[repo] = published{body: body, etag: etagOf(body)}
	s.addAssetsLocked(repo, r)
}

// addAssetsLocked makes the contents of r's assets served; s.mu must be held.
func (s *Server) addAssetsLocked(repo string, r Release) {
	for _, a := range r.Assets {
		if a.Content != nil {
			s.assets[AssetOf(repo, a.ID)] = append([]byte(nil), a.Content...)
		}
	}
}

// RedirectAssets makes the asset endpoint answer 302 to the fake's own
// stand-in for GitHub's objects host (a path of the same server), which
// serves the bytes, as GitHub does for most assets; off, it answers the
// bytes at once.
func (s *Server) RedirectAssets(on bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.redirect = on
}

// SetList makes rs, newest first, repo's release list, drafts and
// prereleases included as GitHub lists them to a token with push access.
// A repository never given a list lists its latest release alone, or
// nothing (an empty array) when it has none.
func (s *Server) SetList(repo string, rs ...Release) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.lists[repo] = append([]Release{}, rs...)
	for _, r := range rs {
		s.addAssetsLocked(repo, r)
	}
}

// Unpublish removes repo's release: the fake answers 404 for it again.
func (s *Server) Unpublish(repo string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.releases, repo)
}

// ETag returns the ETag the fake serves for repo's release, quotes included,
// or "" when repo has none; for List(repo), that of its list's first
// GitHub's default page (per_page=10 as the service asks).
func (s *Server) ETag(repo string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if base, ok := strings.CutSuffix(repo, "/releases"); ok {
		return s.listLocked(base, 10).etag
	}
	return s.releases[repo].etag
}

// listLocked returns the first perPage releases of repo's list as served;
// s.mu must be held.
func (s *Server) listLocked(repo string, perPage int) published {
	list, ok := s.lists[repo]
	if !ok {
		list = []Release{}
		if pub, ok := s.releases[repo]; ok {
			var r Release
			if err := json.Unmarshal(pub.body, &r); err == nil {
				list = []Release{r}
			}
		}
	}
	body, err := json.Marshal(list[:min(len(list), perPage)])
	if err != nil {
		panic(fmt.Sprintf("fakegithub: encode list: %v", err))
	}
	return published{body: body, etag: etagOf(body)}
}

// tagLocked returns repo's release tag as served, if it has one that is no
// draft; s.mu must be held.
func (s *Server) tagLocked(repo, tag string) (published, bool) {
	rs := s.lists[repo]
	if pub, ok := s.releases[repo]; ok {
		var r Release
		if err := json.Unmarshal(pub.body, &r); err == nil {
			rs = append([]Release{r}, rs...)
		}
	}
	for _, r := range rs {
		if r.TagName == tag && !r.Draft {
			body := r.JSON()
			return published{body: body, etag: etagOf(body)}, true
		}
	}
	return published{}, false
}

// SetQuota sets the x-ratelimit-* headers of later answers.
func (s *Server) SetQuota(q Quota) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.quota = q
}

// Queue adds one-shot faults for repo (or AnyRepo): each later release
// request takes the next one, in order. A request takes its repository's
// queue before AnyRepo's, and any queued fault before a stuck one.
//
// Go's HTTP client retries an idempotent request once when a reused
// connection breaks, so a queued hang-up on a reused connection may be
// followed at once by a second request that does not see it; Stick a
// hang-up to make every attempt see it.
func (s *Server) Queue(repo string, faults ...Fault) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.queued[repo] = append(s.queued[repo], faults...)
}

// Stick makes every later release request for repo (or AnyRepo) answer with
// f until Unstick. A repository's own stuck fault comes before AnyRepo's.
func (s *Server) Stick(repo string, f Fault) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.sticky[repo] = f
}

// Unstick removes the fault stuck for repo (or AnyRepo).
func (s *Server) Unstick(repo string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.sticky, repo)
}

// ClearFaults drops every queued and stuck fault.
func (s *Server) ClearFaults() {
	s.mu.Lock()
	defer s.mu.Unlock()
	clear(s.queued)
	clear(s.sticky)
}

// Requests returns a copy of every request received since New or the last
// Reset, oldest first.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]Request, len(s.requests))
	copy(out, s.requests)
	return out
}

// Count returns how many latest-release requests for repo were received
// since New or the last Reset; Count(AnyRepo) counts every request.
func (s *Server) Count(repo string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	if repo == AnyRepo {
		return len(s.requests)
	}
	n := 0
	for _, r := range s.requests {
		if r.Repo == repo {
			n++
		}
	}
	return n
}

// Reset forgets the recorded requests. Releases, faults and the quota stay.
func (s *Server) Reset() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.requests = nil
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	s.active.Add(1)
	defer s.active.Done()

	repo, ok := route(r)
	s.record(r, repo)
	if !ok {
		s.writeHeaders(w, nil)
		writeMessage(w, http.StatusNotFound, "Not Found", docsNotFound)
		return
	}
	f, faulty := s.fault(repo)
	if !faulty {
		s.answer(w, r, repo, nil)
		return
	}
	if f.Delay > 0 {
		t := time.NewTimer(f.Delay)
		defer t.Stop()
		select {
		case <-t.C:
		case <-r.Context().Done():
			return
		case <-s.done:
			return
		}
	}
	switch {
	case f.Hangup != NoHangup:
		hangup(w, f.Hangup)
	case f.Status == 0 && f.Body == nil:
		s.answer(w, r, repo, f.Header)
	default:
		status := f.Status
		if status == 0 {
			status = http.StatusOK
		}
		s.writeHeaders(w, nil)
		if status/100 == 2 && len(f.Body) > 0 {
			w.Header().Set("ETag", etagOf(f.Body))
		}
		override(w.Header(), f.Header)
		w.WriteHeader(status)
		_, _ = w.Write(f.Body)
	}
}

// answer is the normal answer for repo: its release, a 304, or a 404; or
// for List(repo), its list (never a 404); or for TagOf(repo, tag), the
// release tag (its latest release or a release of its list that is no
// draft, as GitHub finds only published releases by tag) or a 404; or for
// AssetOf(repo, id), the asset's bytes or a redirect to them.
func (s *Server) answer(w http.ResponseWriter, r *http.Request, repo string, extra http.Header) {
	if strings.Contains(repo, "/releases/assets/") {
		s.answerAsset(w, r, repo, extra)
		return
	}
	s.mu.Lock()
	pub, ok := s.releases[repo]
	if base, list := strings.CutSuffix(repo, "/releases"); list {
		pub, ok = s.listLocked(base, perPage(r)), true
	}
	if base, tag, isTag := strings.Cut(repo, tagsPath); isTag {
		pub, ok = s.tagLocked(base, tag)
	}
	s.mu.Unlock()
	s.writeHeaders(w, extra)
	if !ok {
		writeMessage(w, http.StatusNotFound, "Not Found", docsLatest)
		return
	}
	w.Header().Set("ETag", pub.etag)
	w.Header().Set("Cache-Control", "private, max-age=60, s-maxage=60")
	w.Header().Set("Vary", "Accept, Authorization, Cookie, X-GitHub-OTP")
	override(w.Header(), extra)
	if matches(r.Header.Get("If-None-Match"), pub.etag) {
		w.WriteHeader(http.StatusNotModified)
		return
	}
	w.Header().Set("Content-Length", strconv.Itoa(len(pub.body)))
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(pub.body)
}

// answerAsset is the normal answer for asset key (AssetOf): its bytes, a
// redirect to them, or a 404.
func (s *Server) answerAsset(w http.ResponseWriter, r *http.Request, key string, extra http.Header) {
	s.mu.Lock()
	body, ok := s.assets[key]
	redirect := s.redirect && !strings.HasPrefix(r.URL.Path, objectsPath)
	s.mu.Unlock()
	s.writeHeaders(w, extra)
	if !ok {
		writeMessage(w, http.StatusNotFound, "Not Found", docsAsset)
		return
	}
	if redirect {
		w.Header().Set("Location", s.srv.URL+objectsPath+key)
		w.WriteHeader(http.StatusFound)
		return
	}
	w.Header().Set("Content-Type", "application/octet-stream")
	w.Header().Set("Content-Length", strconv.Itoa(len(body)))
	override(w.Header(), extra)
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(body)
}

// writeHeaders sets the headers GitHub sends on every answer, then extra.
func (s *Server) writeHeaders(w http.ResponseWriter, extra http.Header) {
	s.mu.Lock()
	q := s.quota
	s.mu.Unlock()
	h := w.Header()
	h.Set("Content-Type", "application/json; charset=utf-8")
	h.Set("X-GitHub-Api-Version-Selected", "2022-11-28")
	if q != (Quota{}) {
		h.Set("X-RateLimit-Limit", strconv.Itoa(q.Limit))
		h.Set("X-RateLimit-Remaining", strconv.Itoa(q.Remaining))
		h.Set("X-RateLimit-Used", strconv.Itoa(q.Limit-q.Remaining))
		h.Set("X-RateLimit-Resource", "core")
		if !q.Reset.IsZero() {
			h.Set("X-RateLimit-Reset", strconv.FormatInt(q.Reset.Unix(), 10))
		}
	}
	override(h, extra)
}

// fault takes the fault for the next request of repo, if any.
func (s *Server) fault(repo string) (Fault, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, key := range []string{repo, AnyRepo} {
		if q := s.queued[key]; len(q) > 0 {
			s.queued[key] = q[1:]
			return q[0], true
		}
	}
	for _, key := range []string{repo, AnyRepo} {
		if f, ok := s.sticky[key]; ok {
			return f, true
		}
	}
	return Fault{}, false
}

func (s *Server) record(r *http.Request, repo string) {
	req := Request{
		Method:        r.Method,
		Path:          r.URL.Path,
		Repo:          repo,
		At:            time.Now(),
		IfNoneMatch:   r.Header.Get("If-None-Match"),
		Authorization: r.Header.Get("Authorization"),
		UserAgent:     r.Header.Get("User-Agent"),
		Accept:        r.Header.Get("Accept"),
		APIVersion:    r.Header.Get("X-GitHub-Api-Version"),
		Header:        r.Header.Clone(),
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.requests = append(s.requests, req)
}

// route reports the repository of a GET /repos/{org}/{project}/releases/latest,
// List of it for a GET /repos/{org}/{project}/releases, TagOf it for a GET
// /repos/{org}/{project}/releases/tags/{tag}, or AssetOf it for a GET
// /repos/{org}/{project}/releases/assets/{id} (or its objects stand-in).
func route(r *http.Request) (repo string, ok bool) {
	if r.Method != http.MethodGet {
		return "", false
	}
	if key, ok := strings.CutPrefix(r.URL.Path, objectsPath); ok {
		return key, strings.Contains(key, "/releases/assets/")
	}
	parts := strings.Split(strings.TrimPrefix(r.URL.Path, "/"), "/")
	if len(parts) < 4 || parts[0] != "repos" || parts[1] == "" || parts[2] == "" || parts[3] != "releases" {
		return "", false
	}
	switch {
	case len(parts) == 4:
		return List(parts[1] + "/" + parts[2]), true
	case len(parts) == 5 && parts[4] == "latest":
		return parts[1] + "/" + parts[2], true
	case len(parts) >= 6 && parts[4] == "tags" && parts[5] != "":
		// A tag may hold "/", escaped as %2F and decoded in the path.
		return TagOf(parts[1]+"/"+parts[2], strings.Join(parts[5:], "/")), true
	case len(parts) == 6 && parts[4] == "assets":
		id, err := strconv.ParseInt(parts[5], 10, 64)
		return AssetOf(parts[1]+"/"+parts[2], id), err == nil && id > 0
	}
	return "", false
}

// perPage is a list request's per_page, as GitHub reads it: 30 when absent
// or not a positive number, at most 100.
func perPage(r *http.Request) int {
	n, err := strconv.Atoi(r.URL.Query().Get("per_page"))
	if err != nil || n <= 0 {
		return defaultPerPage
	}
	return min(n, maxPerPage)
}

// matches reports whether an If-None-Match value names etag.
func matches(ifNoneMatch, etag string) bool {
	for _, v := range strings.Split(ifNoneMatch, ",") {
		if v = strings.TrimSpace(v); v == etag || v == "*" {
			return true
		}
	}
	return false
}

// etagOf is a strong ETag derived from the body bytes, as GitHub sends.
func etagOf(body []byte) string {
	sum := sha256.Sum256(body)
	return `"` + hex.EncodeToString(sum[:]) + `"`
}

// override sets every header of extra on h; a key with no values deletes it.
func override(h, extra http.Header) {
	for k, v := range extra {
		if len(v) == 0 {
			h.Del(k)
			continue
		}
		h[http.CanonicalHeaderKey(k)] = append([]string(nil), v...)
	}
}

const (
	docsLatest   = "https://docs.github.com/rest/releases/releases#get-the-latest-release"
	docsNotFound = "https://docs.github.com/rest"
	docsAsset    = "https://docs.github.com/rest/releases/assets#get-a-release-asset"
)

// writeMessage writes GitHub's JSON error shape.
func writeMessage(w http.ResponseWriter, status int, message, docs string) {
	b, _ := json.Marshal(map[string]string{
		"message":           message,
		"documentation_url": docs,
		"status":            strconv.Itoa(status),
	})
	w.WriteHeader(status)
	_, _ = w.Write(b)
}

func hangup(w http.ResponseWriter, how Hangup) {
	hj, ok := w.(http.Hijacker)
	if !ok {
		panic(fmt.Sprintf("fakegithub: %T cannot hijack", w))
	}
	conn, _, err := hj.Hijack()
	if err != nil {
		return
	}
	if tc, ok := conn.(*net.TCPConn); ok && how == HangupReset {
		// Linger 0 makes Close send a RST instead of a FIN.
		_ = tc.SetLinger(0)
	}
	_ = conn.Close()
}
