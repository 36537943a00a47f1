package api

import (
	"bytes"
	"cmp"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/storytold/craft-releases/pkg/daemon"
	"github.com/storytold/craft-releases/pkg/release"
	"github.com/storytold/craft-releases/pkg/routes"
	"github.com/storytold/craft-releases/pkg/snapshot"
	"github.com/storytold/craft-releases/test/fakeclock"
)

var t0 = time.Date(2026, 10, 10, 12, 0, 0, 0, time.UTC)

// fixed is a Renderer that always serves the same rendering.
type fixed struct{ r *snapshot.Rendering }

func (f fixed) Current() *snapshot.Rendering { return f.r }

// twoApps are the apps of rendering and fullRendering, and of the webhook.
var twoApps = []release.App{
	{Key: "photocraft", Name: "PhotoCraft", Repo: "storytold/photocraft"},
	{Key: "filmcraft", Name: "FilmCraft", Repo: "storytold/filmcraft"},
}

// rendering returns a rendering of twoApps: both fetched when warm, one
// never fetched otherwise.
func rendering(t testing.TB, warm bool) *snapshot.Rendering {
	t.Helper()
	s := snapshot.New(twoApps, fakeclock.New(t0))
	s.Set("photocraft", release.Entry{FetchedAt: t0, Release: &release.Release{
		Tag: "v1.0.0", Version: "1.0.0", Name: "PhotoCraft 1.0.0",
		NotesMarkdown: strings.Repeat("Faster brushes. ", 100),
	}})
	if warm {
		s.Set("filmcraft", release.Entry{FetchedAt: t0})
	}
	return s.Current()
}

func TestReleaseInfo(t *testing.T) {
	t.Parallel()
	const (
		plainTag = "{plain}" // replaced by the rendering's ETag
		gzipTag  = "{gzip}"  // replaced by its GzipETag
	)
	tests := []struct {
		name, method        string
		cold                bool     // some app never fetched
		accept, ifNoneMatch []string // Accept-Encoding, If-None-Match field lines
		wantStatus          int
		wantGzip            bool
	}{
		{name: "plain", wantStatus: 200},
		{name: "gzip", accept: []string{"gzip"}, wantStatus: 200, wantGzip: true},
		{name: "cold", cold: true, wantStatus: 200},
		{name: "cold gzip", cold: true, accept: []string{"gzip"}, wantStatus: 200, wantGzip: true},

		{name: "304 plain", ifNoneMatch: []string{plainTag}, wantStatus: 304},
		{name: "304 gzip", accept: []string{"gzip"}, ifNoneMatch: []string{gzipTag}, wantStatus: 304, wantGzip: true},
		{name: "304 cold", cold: true, ifNoneMatch: []string{plainTag}, wantStatus: 304},
		{name: "gzip ETag without gzip accept", ifNoneMatch: []string{gzipTag}, wantStatus: 200},
		{name: "plain ETag with gzip accept", accept: []string{"gzip"}, ifNoneMatch: []string{plainTag}, wantStatus: 200, wantGzip: true},

		{name: "HEAD plain", method: http.MethodHead, wantStatus: 200},
		{name: "HEAD gzip", method: http.MethodHead, accept: []string{"gzip"}, wantStatus: 200, wantGzip: true},
		{name: "HEAD 304", method: http.MethodHead, ifNoneMatch: []string{plainTag}, wantStatus: 304},
	}
	warm, cold := rendering(t, true), rendering(t, false)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cur := warm
			if tt.cold {
				cur = cold
			}
			tags := strings.NewReplacer(plainTag, cur.ETag, gzipTag, cur.GzipETag)
			method := cmp.Or(tt.method, http.MethodGet)
			req := httptest.NewRequest(method, routes.ReleaseInfoPath, nil)
			for _, v := range tt.accept {
				req.Header.Add("Accept-Encoding", v)
			}
			for _, v := range tt.ifNoneMatch {
				req.Header.Add("If-None-Match", tags.Replace(v))
			}
			rec := httptest.NewRecorder()

			New(fixed{cur}, new(daemon.Gate), zap.NewNop(), Options{}).ServeHTTP(rec, req)

			wantBody, wantETag, wantEncoding := cur.Body(), cur.ETag, ""
			if tt.wantGzip {
				wantBody, wantETag, wantEncoding = cur.Gzip(), cur.GzipETag, "gzip"
			}
			wantCache := "public, max-age=60, stale-while-revalidate=30, stale-if-error=86400"
			if tt.cold {
				wantCache = "no-store"
			}
			// 304 carries no representation metadata besides the first four.
			wantHeader := map[string]string{"Cache-Control": wantCache, "Etag": wantETag, "Vary": "Accept-Encoding", "X-Content-Type-Options": "nosniff",
				"Content-Type": "", "Content-Encoding": "", "Content-Length": ""}
			if tt.wantStatus == http.StatusOK {
				wantHeader["Content-Type"] = "application/json"
				wantHeader["Content-Encoding"] = wantEncoding
				wantHeader["Content-Length"] = strconv.Itoa(len(wantBody))
			}
			if method == http.MethodHead || tt.wantStatus == http.StatusNotModified {
				wantBody = nil
			}

			if rec.Code != tt.wantStatus {
				t.Errorf("status: got %d, want %d", rec.Code, tt.wantStatus)
			}
			for k, want := range wantHeader {
				if got := rec.Header()[k]; strings.Join(got, "|") != want || (want != "" && len(got) != 1) {
					t.Errorf("%s: got %q, want %q", k, got, want)
				}
			}
			if got := rec.Body.Bytes(); !bytes.Equal(got, wantBody) {
				t.Errorf("body: got %d bytes, want %d", len(got), len(wantBody))
			}
		})
	}
}

// TestReleaseInfoWire checks, through a real net/http server, what only it
// decides: a HEAD answer keeps its Content-Length and has no body, a 304 has
// no body, and the served bytes are the rendering's.
func TestReleaseInfoWire(t *testing.T) {
	t.Parallel()
	cur := rendering(t, true)
	srv := httptest.NewServer(New(fixed{cur}, new(daemon.Gate), zap.NewNop(), Options{}))
	t.Cleanup(srv.Close)
	// Without this the client would ask for gzip and decompress it itself.
	client := &http.Client{Transport: &http.Transport{DisableCompression: true}}
	t.Cleanup(client.CloseIdleConnections)
	tests := []struct {
		name, method, accept, ifNoneMatch string
		wantStatus                        int
		doc                               []byte // the representation; sent only for a GET's 200
	}{
		{"GET plain", "GET", "", "", 200, cur.Body()},
		{"GET gzip", "GET", "gzip", "", 200, cur.Gzip()},
		{"HEAD plain", "HEAD", "", "", 200, cur.Body()},
		{"HEAD gzip", "HEAD", "gzip", "", 200, cur.Gzip()},
		{"304", "GET", "", cur.ETag, 304, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req, err := http.NewRequestWithContext(t.Context(), tt.method, srv.URL+routes.ReleaseInfoPath, nil)
			if err != nil {
				t.Fatal(err)
			}
			if tt.accept != "" {
				req.Header.Set("Accept-Encoding", tt.accept)
			}
			if tt.ifNoneMatch != "" {
				req.Header.Set("If-None-Match", tt.ifNoneMatch)
			}
			res, err := client.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer res.Body.Close()
			body, err := io.ReadAll(res.Body)
			if err != nil {
				t.Fatal(err)
			}
			wantBody := tt.doc
			if tt.method == "HEAD" {
				wantBody = nil
			}
			if res.StatusCode != tt.wantStatus || res.ContentLength != int64(len(tt.doc)) || !bytes.Equal(body, wantBody) {
				t.Errorf("got %d, Content-Length %d, %d bytes; want %d, %d, %d bytes",
					res.StatusCode, res.ContentLength, len(body), tt.wantStatus, len(tt.doc), len(wantBody))
			}
			if got := res.Header.Get("Vary"); got != "Accept-Encoding" {
				t.Errorf("Vary: got %q, want Accept-Encoding", got)
			}
		})
	}
}

func TestAcceptsGzip(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name   string
		values []string
		want   bool
	}{
		{"absent", nil, false},
		{"empty", []string{""}, false},
		{"gzip", []string{"gzip"}, true},
		{"upper case", []string{"GZip"}, true},
		{"x-gzip", []string{"X-GZIP"}, true},
		{"in a list", []string{"deflate, gzip, br"}, true},
		{"with spaces and tabs", []string{" \tgzip\t ;\tq=0.2 "}, true},
		{"second line", []string{"br", "gzip"}, true},
		{"q=1", []string{"gzip;q=1"}, true},
		{"q=1.000", []string{"gzip;q=1.000"}, true},
		{"q=0.001", []string{"gzip;q=0.001"}, true},
		{"Q=0.5", []string{"gzip;Q=0.5"}, true},
		{"other parameter first", []string{"gzip;level=9;q=0.5"}, true},
		{"q=0", []string{"gzip;q=0"}, false},
		{"q=0.", []string{"gzip;q=0."}, false},
		{"q=0.000", []string{"gzip;q=0.000"}, false},
		{"q=0 beats star", []string{"gzip;q=0, *"}, false},
		{"q=0 on another line beats star", []string{"*", "gzip;q=0"}, false},
		{"star", []string{"*"}, true},
		{"star q=0", []string{"*;q=0"}, false},
		{"star q=0 but gzip", []string{"*;q=0, gzip"}, true},
		{"identity", []string{"identity"}, false},
		{"identity and star q=0", []string{"identity, *;q=0"}, false},
		{"br only", []string{"br"}, false},
		{"gzip as a prefix", []string{"gzipper"}, false},
		{"malformed weight ignored", []string{"gzip;q=abc"}, false},
		{"weight above 1 ignored", []string{"gzip;q=1.5"}, false},
		{"weight 2 ignored", []string{"gzip;q=2"}, false},
		{"empty weight ignored", []string{"gzip;q="}, false},
		{"malformed weight ignored, other gzip counts", []string{"gzip;q=x, gzip;q=0.3"}, true},
		{"empty elements", []string{",, ,gzip,"}, true},
	} {
		if got := acceptsGzip(tt.values); got != tt.want {
			t.Errorf("%s: acceptsGzip(%q): got %v, want %v", tt.name, tt.values, got, tt.want)
		}
	}
}

func TestNoneMatch(t *testing.T) {
	t.Parallel()
	const etag = `"abc"`
	for _, tt := range []struct {
		name   string
		values []string
		want   bool
	}{
		{"absent", nil, false},
		{"empty", []string{""}, false},
		{"exact", []string{`"abc"`}, true},
		{"weak", []string{`W/"abc"`}, true},
		{"other", []string{`"abd"`}, false},
		{"prefix", []string{`"ab"`}, false},
		{"unquoted", []string{`abc`}, false},
		{"lower-case w/ is not weak", []string{`w/"abc"`}, false},
		{"list", []string{`"x", "y", "abc"`}, true},
		{"list without spaces", []string{`"x","abc"`}, true},
		{"list with weak", []string{`W/"x", W/"abc"`}, true},
		{"comma inside a tag", []string{`"a,b", "abc"`}, true},
		{"second line", []string{`"x"`, `"abc"`}, true},
		{"star", []string{`*`}, true},
		{"malformed stops the line", []string{`x, "abc"`}, false},
		{"malformed line, next line still read", []string{`x`, `"abc"`}, true},
		{"unterminated", []string{`"abc`}, false},
		{"space inside a tag", []string{`"a bc"`, `"ab c"`}, false},
	} {
		if got := noneMatch(tt.values, etag); got != tt.want {
			t.Errorf("%s: noneMatch(%q, %s): got %v, want %v", tt.name, tt.values, etag, got, tt.want)
		}
	}
}

// FuzzConditionalHeaders feeds arbitrary header values to both parsers: they
// must not panic, and a tag can only match a list that contains it or "*".
func FuzzConditionalHeaders(f *testing.F) {
	for _, s := range []string{"gzip;q=0.5, *", `W/"abc", "x"`, `"a,b"`, "*;q=0", "gzip;q=1.000", `"`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		acceptsGzip([]string{s})
		if noneMatch([]string{s}, `"abc"`) && !strings.Contains(s, `"abc"`) && !strings.Contains(s, "*") {
			t.Errorf("noneMatch(%q): got a match without the tag or a star", s)
		}
	})
}
