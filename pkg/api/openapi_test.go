package api

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/storytold/craft-releases/pkg/daemon"
	"github.com/storytold/craft-releases/pkg/release"
	"github.com/storytold/craft-releases/pkg/routes"
	"github.com/storytold/craft-releases/pkg/snapshot"
	"github.com/storytold/craft-releases/pkg/updates/companion"
	"github.com/storytold/craft-releases/pkg/webhook"
	"github.com/storytold/craft-releases/test/fakeclock"
	"github.com/storytold/craft-releases/test/openapitest"
)

// fullRendering returns a rendering with every kind of value the wire has:
// a release with a recognised and an unrecognised asset, a signed Tauri
// bundle and the updater files with their companions, an app with no
// release, renames and notices; warm when every app was fetched.
func fullRendering(warm bool) *snapshot.Rendering {
	s := snapshot.New(twoApps, fakeclock.New(t0))
	r := releaseOf("storytold/photocraft", "v1.0.0", append([]string{"photocraft-1.0.0-windows-x64.msi", "photocraft-web-1.0.0.zip",
		"SHA256SUMS.txt", "photocraft-1.0.0-linux-x86_64.AppImage.zsync", "PhotoCraft_1.0.0_x64-setup.exe", "PhotoCraft_1.0.0_x64-setup.exe.sig"},
		slices.Sorted(maps.Keys(openapitest.UpdaterFiles))...)...)
	r.Name, r.PublishedAt, r.NotesMarkdown = "PhotoCraft 1.0.0", release.NewTime(t0.Add(-time.Hour)), "Faster brushes."
	sum := strings.Repeat("ab", 32)
	r.Assets[0].SHA256 = &sum
	for i, a := range r.Assets {
		if body, ok := openapitest.UpdaterFiles[a.Name]; ok {
			r.Assets[i].SizeBytes = int64(len(body))
		}
	}
	companions := map[string]string{"PhotoCraft_1.0.0_x64-setup.exe.sig": "dW50cnVzdGVkIGNvbW1lbnQ="}
	for _, name := range companion.Files(r) {
		if _, err := companion.Check(r, name, []byte(openapitest.UpdaterFiles[name]), nil); err != nil {
			panic(fmt.Sprintf("the fixture %s: %v", name, err))
		}
		companions[name] = openapitest.UpdaterFiles[name]
	}
	s.Set("photocraft", release.Entry{FetchedAt: t0.Add(124 * time.Millisecond), Release: r, Companions: release.NewCompanions(companions)})
	if warm {
		s.Set("filmcraft", release.Entry{FetchedAt: t0})
	}
	link := "https://example.com/status"
	s.SetMeta(release.Bulletin{
		AppRenames:  []release.AppRename{{OldName: "PixelCraft", OldNameLower: "pixelcraft", NewName: "PhotoCraft", NewNameLower: "photocraft", Description: "New name", RenamedAt: release.NewTime(t0)}},
		RepoRenames: []release.RepoRename{{OldName: "storytold/pixelcraft", NewName: "storytold/photocraft"}},
		Notices: release.Notices{
			Announcements: []release.Announcement{{Title: "Hello", Body: "World", CreatedAt: release.NewTime(t0)}},
			Alerts:        []release.Alert{{Title: "Outage", Body: "GitHub is slow", MaybeWebLink: &link}, {Title: "No link"}},
		},
	})
	return s.Current()
}

// echoParam is a path parameter as echo writes it (":app"); OpenAPI writes
// it "{app}".
var echoParam = regexp.MustCompile(`:([A-Za-z0-9_]+)`)

// registered returns s's routes as "METHOD path", in OpenAPI's path syntax.
func registered(s *Server) []string {
	var ops []string
	for _, r := range s.echo.Routes() {
		ops = append(ops, r.Method+" "+echoParam.ReplaceAllString(r.Path, "{$1}"))
	}
	slices.Sort(ops)
	return slices.Compact(ops)
}

// answered lists the operations h answers with neither 404 nor 405, of the
// methods and paths any binary's document has: how a handler without a
// router shows what it serves.
func answered(t *testing.T, h http.Handler, doc *openapitest.Doc) []string {
	var all, ops []string
	for _, port := range []string{"api", "api-metrics", "poller"} {
		all = append(all, doc.Operations(t, port)...)
	}
	slices.Sort(all)
	for _, op := range slices.Compact(all) {
		method, path, _ := strings.Cut(op, " ")
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(method, path, nil))
		if rec.Code != http.StatusNotFound && rec.Code != http.StatusMethodNotAllowed {
			ops = append(ops, op)
		}
	}
	slices.Sort(ops)
	return ops
}

// metricsStub answers as promhttp does, uncompressed; test/e2e checks the
// real handler.
func metricsStub() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
		w.Header()["Vary"] = []string{"Accept", "Accept-Encoding"}
		_, _ = io.WriteString(w, "metric 1\n")
	})
}

// webhookFleet records deliveries as the pods' Redis does, or fails them
// all while down, as a silent Redis does.
type webhookFleet struct {
	down bool
	seen map[string]bool
}

func (f *webhookFleet) Deliver(_ context.Context, ids []string, _ map[string]release.Refresh) (bool, error) {
	if f.down {
		return false, errors.New("redis down")
	}
	first := true
	for _, id := range ids {
		first = first && !f.seen[id]
		f.seen[id] = true
	}
	return first, nil
}

// webhookHandler is the webhook as cmd/api builds it, for fullRendering's
// apps and openapitest's secret, over a Fleet that is down unless up.
func webhookHandler(t *testing.T, up bool) http.Handler {
	t.Helper()
	h, err := webhook.New(webhook.Config{
		Secrets:  []string{"an-old-secret", openapitest.WebhookSecret},
		Apps:     twoApps,
		Recorder: &webhookFleet{down: !up, seen: map[string]bool{}},
	})
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// TestOpenAPIDocumentsEveryRoute fails when a route is added to routes.go
// (or removed) without the same change to openapi.json.
func TestOpenAPIDocumentsEveryRoute(t *testing.T) {
	t.Parallel()
	doc := openapitest.Load(t, openAPIDoc)
	// As cmd/api and cmd/poller build them: the API's public server has no
	// /metrics, its private one and the poller's are health servers.
	health := daemon.NewHealth(new(daemon.Gate), metricsStub(), zap.NewNop(), nil)
	servers := []struct {
		binary string
		ops    []string
	}{
		{"api", registered(New(fixed{rendering(t, true)}, new(daemon.Gate), zap.NewNop(), Options{Webhook: http.NotFoundHandler()}))},
		{"api-metrics", answered(t, health, doc)},
		{"poller", answered(t, health, doc)},
	}
	for _, s := range servers {
		got, want := s.ops, doc.Operations(t, s.binary)
		for _, op := range got {
			if !slices.Contains(want, op) {
				t.Errorf("%s serves %s, which openapi.json does not document (add it, with %q in x-served-by)", s.binary, op, s.binary)
			}
		}
		for _, op := range want {
			if !slices.Contains(got, op) {
				t.Errorf("openapi.json documents %s on %s, which routes.go does not register", op, s.binary)
			}
		}
	}
}

// TestOpenAPIServed: the embedded document, byte for byte, and a gzip copy;
// its headers' values are checked against the document (TestOpenAPIAnswers).
func TestOpenAPIServed(t *testing.T) {
	t.Parallel()
	s := New(fixed{rendering(t, true)}, new(daemon.Gate), zap.NewNop(), Options{})
	rec := httptest.NewRecorder()
	s.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, routes.OpenAPIPath, nil))
	if rec.Code != http.StatusOK || rec.Body.String() != string(openAPIDoc) {
		t.Fatalf("GET %s: %d, %d bytes; want 200 and the embedded document", routes.OpenAPIPath, rec.Code, rec.Body.Len())
	}
	etag := rec.Header().Get("ETag")
	gz := serve(t, s, http.MethodGet, routes.OpenAPIPath, http.Header{"Accept-Encoding": {"gzip"}})
	if gz.Header().Get("Content-Encoding") != "gzip" || gz.Header().Get("ETag") == etag || gz.Body.Len() >= len(openAPIDoc)/2 {
		t.Fatalf("GET %s accepting gzip: Content-Encoding %q, ETag %q (plain %q), %d bytes of %d; want gzip, its own ETag, under half the size",
			routes.OpenAPIPath, gz.Header().Get("Content-Encoding"), gz.Header().Get("ETag"), etag, gz.Body.Len(), len(openAPIDoc))
	}
	zr, err := gzip.NewReader(gz.Body)
	if err != nil {
		t.Fatal(err)
	}
	if b, err := io.ReadAll(zr); err != nil || !bytes.Equal(b, openAPIDoc) {
		t.Errorf("gzip body: %d bytes, %v; want the embedded document", len(b), err)
	}
}

// TestOpenAPIAnswers checks every documented status of every route, with
// and without gzip, against the document; the webhook's Recorder is down while
// the server is not ready, for its 503. test/e2e does the same against the
// running binaries.
func TestOpenAPIAnswers(t *testing.T) {
	t.Parallel()
	doc := openapitest.Load(t, openAPIDoc)
	// A rendering is immutable: rendered (and compressed) once for every
	// server.
	renderings := map[bool]*snapshot.Rendering{false: fullRendering(false), true: fullRendering(true)}
	newServer := func(binary string, ready, warm bool) http.Handler {
		g := new(daemon.Gate)
		if ready {
			g.Open()
		}
		if binary != "api" {
			return daemon.NewHealth(g, metricsStub(), zap.NewNop(), nil)
		}
		return New(fixed{renderings[warm]}, g, zap.NewNop(), Options{Webhook: webhookHandler(t, ready)})
	}
	// A GET changes nothing its answers depend on: those share a server
	// of each kind. A webhook delivery is remembered: each gets servers of
	// its own, with a fresh fleet.
	type kind struct {
		binary      string
		ready, warm bool
	}
	shared := map[kind]http.Handler{}
	server := func(method, binary string, ready, warm bool) http.Handler {
		if method == http.MethodPost {
			return newServer(binary, ready, warm)
		}
		k := kind{binary, ready, warm}
		if shared[k] == nil {
			shared[k] = newServer(binary, ready, warm)
		}
		return shared[k]
	}
	for _, binary := range []string{"api", "api-metrics", "poller"} {
		for _, op := range doc.Operations(t, binary) {
			method, _, _ := strings.Cut(op, " ")
			seen := map[string]bool{}
			// Readiness changes only /readyz and the webhook (whose fleet is
			// down when not ready), warmth only the API's own answers.
			readies, warms := []bool{true}, []bool{true}
			if strings.HasSuffix(op, daemon.ReadyzPath) || method == http.MethodPost {
				readies = []bool{false, true}
			}
			if binary == "api" {
				warms = []bool{false, true}
			}
			for _, r := range openapitest.Requests(t, op) {
				for _, gz := range []bool{false, true} {
					for _, ready := range readies {
						for _, warm := range warms {
							s := server(method, binary, ready, warm)
							ask := func(etag string) *http.Response {
								req := openapitest.NewRequest(t, method, "", r)
								if gz {
									req.Header.Set("Accept-Encoding", "gzip")
								}
								if etag != "" {
									req.Header.Set("If-None-Match", etag)
								}
								rec := httptest.NewRecorder()
								s.ServeHTTP(rec, req)
								res := rec.Result()
								doc.Check(t, req, res)
								seen[strconv.Itoa(res.StatusCode)] = true
								return res
							}
							if etag := ask("").Header.Get("ETag"); etag != "" {
								if got := ask(etag).StatusCode; got != http.StatusNotModified {
									t.Errorf("%s %s with a matching If-None-Match: %d, want 304", method, r.Target, got)
								}
							}
						}
					}
				}
			}
			for _, code := range doc.Statuses(t, op) {
				if !seen[code] {
					t.Errorf("%s %s: documented status %s never answered", binary, op, code)
				}
			}
		}
	}
}

// TestOpenAPIWireFields fails when a field of the wire types (release.Info
// and what it holds) is missing from the document's schemas, or a schema
// declares a property no field has: every key is always present on the
// wire, so every property is also required.
func TestOpenAPIWireFields(t *testing.T) {
	t.Parallel()
	var doc map[string]any
	if err := json.Unmarshal(openAPIDoc, &doc); err != nil {
		t.Fatal(err)
	}
	schemas := doc["components"].(map[string]any)["schemas"].(map[string]any)
	compareSchema(t, "Info", reflect.TypeFor[release.Info](), schemas["Info"].(map[string]any), schemas)
}

// resolve follows a schema's $ref and, for a nullable anyOf, its non-null
// branch.
func resolve(t *testing.T, s map[string]any, schemas map[string]any) map[string]any {
	t.Helper()
	for {
		if ref, ok := s["$ref"].(string); ok {
			s = schemas[strings.TrimPrefix(ref, "#/components/schemas/")].(map[string]any)
			continue
		}
		if anyOf, ok := s["anyOf"].([]any); ok {
			var branches []map[string]any
			for _, b := range anyOf {
				if b := b.(map[string]any); b["type"] != "null" {
					branches = append(branches, b)
				}
			}
			if len(branches) != 1 {
				t.Fatalf("anyOf %v: want one branch besides null", anyOf)
			}
			s = branches[0]
			continue
		}
		return s
	}
}

func compareSchema(t *testing.T, where string, typ reflect.Type, s map[string]any, schemas map[string]any) {
	t.Helper()
	s = resolve(t, s, schemas)
	for typ.Kind() == reflect.Pointer {
		typ = typ.Elem()
	}
	if typ == reflect.TypeFor[release.OptionalRelease]() {
		// It marshals as its release.
		typ = reflect.TypeFor[release.Release]()
	}
	if typ == reflect.TypeFor[release.Time]() {
		if s["format"] != "date-time" {
			t.Errorf("%s: a time, want format date-time in the schema", where)
		}
		return
	}
	want := map[reflect.Kind]string{reflect.Struct: "object", reflect.Map: "object", reflect.Slice: "array",
		reflect.String: "string", reflect.Bool: "boolean", reflect.Int64: "integer", reflect.Int: "integer"}[typ.Kind()]
	if s["type"] != want {
		t.Errorf("%s: schema type %v, want %s (Go %s)", where, s["type"], want, typ)
		return
	}
	switch typ.Kind() {
	case reflect.Slice:
		compareSchema(t, where+"[]", typ.Elem(), s["items"].(map[string]any), schemas)
	case reflect.Map:
		compareSchema(t, where+".*", typ.Elem(), s["additionalProperties"].(map[string]any), schemas)
	case reflect.Struct:
		props, _ := s["properties"].(map[string]any)
		var required []string
		for _, r := range s["required"].([]any) {
			required = append(required, r.(string))
		}
		var fields, always []string
		for f := range typ.Fields() {
			name, opts, _ := strings.Cut(f.Tag.Get("json"), ",")
			fields = append(fields, name)
			if opts != "omitempty" {
				always = append(always, name)
			}
			p, ok := props[name]
			if !ok {
				t.Errorf("%s.%s is on the wire but not in openapi.json", where, name)
				continue
			}
			compareSchema(t, where+"."+name, f.Type, p.(map[string]any), schemas)
		}
		if !slices.Equal(always, required) {
			t.Errorf("%s: required %v, want every wire key that is always there, in wire order: %v", where, required, always)
		}
		for name := range props {
			if !slices.Contains(fields, name) {
				t.Errorf("%s.%s is in openapi.json but not on the wire", where, name)
			}
		}
	}
}
