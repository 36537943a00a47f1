// Package openapitest checks real HTTP answers against the service's OpenAPI
// document (pkg/api/openapi.json) with libopenapi-validator, which reads
// OpenAPI 3.1 and its JSON Schema 2020-12. A response header that the
// document does not declare fails the check too, so whoever adds one to an
// answer documents it. (The validator's own strict mode would do the same for
// JSON properties, but it also flags the keys of a map such as
// release_info.apps; pkg/api's tests compare the wire types' fields with the
// schemas instead.)
package openapitest

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/pb33f/libopenapi"
	validator "github.com/pb33f/libopenapi-validator"
	"github.com/pb33f/libopenapi-validator/config"
	"github.com/pb33f/libopenapi-validator/errors"
	"github.com/pb33f/libopenapi-validator/helpers"
	"github.com/pb33f/libopenapi-validator/paths"
	v3 "github.com/pb33f/libopenapi/datamodel/high/v3"

	"github.com/storytold/craft-releases/pkg/webhook"
)

// Doc is a parsed OpenAPI document and its validator. It is not safe for
// concurrent use.
type Doc struct {
	model *v3.Document
	v     validator.Validator
}

// Load parses doc, checks it against the OpenAPI schema of its version, and
// fails the test if it is not valid OpenAPI 3.1.
func Load(tb testing.TB, doc []byte) *Doc {
	tb.Helper()
	d, err := libopenapi.NewDocument(doc)
	if err != nil {
		tb.Fatalf("openapitest: parse: %v", err)
	}
	if v := d.GetVersion(); !strings.HasPrefix(v, "3.1.") {
		tb.Fatalf("openapitest: openapi %q, want 3.1.x", v)
	}
	model, err := d.BuildV3Model()
	if err != nil {
		tb.Fatalf("openapitest: build the model: %v", err)
	}
	v, errs := validator.NewValidator(d, config.WithFormatAssertions(), config.WithStandardBodyDecoders(), config.WithRejectUnsupportedBodyContent())
	if len(errs) > 0 {
		tb.Fatalf("openapitest: validator: %v", errs)
	}
	if ok, verrs := v.ValidateDocument(); !ok {
		tb.Fatalf("openapitest: the document is not valid OpenAPI:\n%s", describe(verrs))
	}
	return &Doc{model: &model.Model, v: v}
}

// Operations returns every operation the document declares for port ("api",
// "api-metrics" or "poller", as its paths' x-served-by extension names the
// ports), as "METHOD path" with the path as the document writes it
// ("/v1/x/{app}"), sorted.
func (d *Doc) Operations(tb testing.TB, port string) []string {
	tb.Helper()
	var ops []string
	for path, item := range d.model.Paths.PathItems.FromOldest() {
		var servedBy []string
		if ext, ok := item.Extensions.Get("x-served-by"); ok {
			if err := ext.Decode(&servedBy); err != nil {
				tb.Fatalf("openapitest: %s: x-served-by: %v", path, err)
			}
		}
		if len(servedBy) == 0 {
			tb.Errorf("openapitest: %s has no x-served-by: say which ports serve it", path)
		}
		if !slices.Contains(servedBy, port) {
			continue
		}
		for method := range item.GetOperations().FromOldest() {
			ops = append(ops, strings.ToUpper(method)+" "+path)
		}
	}
	slices.Sort(ops)
	return ops
}

// Statuses returns the status codes the document declares for op ("METHOD
// path", as Operations returns it), sorted.
func (d *Doc) Statuses(tb testing.TB, op string) []string {
	tb.Helper()
	method, path, _ := strings.Cut(op, " ")
	item, ok := d.model.Paths.PathItems.Get(path)
	if !ok {
		tb.Fatalf("openapitest: %s is not in the document", path)
	}
	operation, ok := item.GetOperations().Get(strings.ToLower(method))
	if !ok || operation.Responses == nil {
		tb.Fatalf("openapitest: %s is not in the document", op)
	}
	codes := slices.Collect(operation.Responses.Codes.KeysFromOldest())
	slices.Sort(codes)
	return codes
}

// Request is one request that a test sends for an operation.
type Request struct {
	Target    string            // path and query
	UserAgent string            // "" for none
	Header    map[string]string // more headers, for a POST
	Body      []byte            // the body of a POST, nil for none
}

// WebhookSecret is the webhook secret of the deployment Requests describes:
// its webhook requests are signed with it.
const WebhookSecret = "openapitest's webhook secret"

// webhookDelivery is a webhook request of event with body, signed with
// secret unless it is "", with delivery id id unless it is "".
func webhookDelivery(event, id string, body []byte, secret string) Request {
	h := map[string]string{"Content-Type": "application/json", webhook.EventHeader: event}
	if id != "" {
		h[webhook.DeliveryHeader] = id
	}
	if secret != "" {
		h[webhook.SignatureHeader] = webhook.Sign(secret, body)
	}
	return Request{Target: "/v1/craft_apps/github_webhook", UserAgent: "GitHub-Hookshot/044aadd", Header: h, Body: body}
}

// releaseEvent is the body of a release event published for repo.
func releaseEvent(repo string) []byte {
	return fmt.Appendf(nil, `{"action":"published","release":{"tag_name":"v9.9.9","draft":false,"prerelease":false,"published_at":"2026-01-02T03:04:05Z"},"repository":{"full_name":%q}}`, repo)
}

// webhookRequests give every status of the webhook where photocraft is
// storytold/photocraft and the refresh requests can be recorded (202) or
// cannot (503: Redis down). The release event for photocraft has a fixed
// delivery id: sent again, it is answered 202 duplicate.
func webhookRequests() []Request {
	photocraft := releaseEvent("storytold/photocraft")
	big := append(releaseEvent("storytold/photocraft"), bytes.Repeat([]byte(" "), webhook.MaxBody)...)
	return []Request{
		webhookDelivery("ping", "72d3162e-cc78-11e3-81ab-4c9367dc0958", []byte(`{"zen":"Keep it logically awesome.","hook_id":1}`), WebhookSecret),
		webhookDelivery("release", "72d3162e-cc78-11e3-81ab-4c9367dc0959", photocraft, WebhookSecret),
		webhookDelivery("release", "72d3162e-cc78-11e3-81ab-4c9367dc0960", releaseEvent("storytold/nosuchrepo"), WebhookSecret),
		webhookDelivery("push", "72d3162e-cc78-11e3-81ab-4c9367dc0961", []byte(`{"ref":"refs/heads/main"}`), WebhookSecret),
		webhookDelivery("release", "", photocraft, WebhookSecret),
		webhookDelivery("release", "72d3162e-cc78-11e3-81ab-4c9367dc0962", photocraft, "not the secret"),
		webhookDelivery("release", "72d3162e-cc78-11e3-81ab-4c9367dc0963", photocraft, ""),
		webhookDelivery("release", "72d3162e-cc78-11e3-81ab-4c9367dc0964", big, WebhookSecret),
	}
}

// NewRequest returns r as an *http.Request of method to base (a URL's
// scheme and host), or for base "" a server-side request (httptest's), with
// its User-Agent ("" for none), headers and body.
func NewRequest(tb testing.TB, method, base string, r Request) *http.Request {
	tb.Helper()
	var body io.Reader // nil: none
	if r.Body != nil {
		body = bytes.NewReader(r.Body)
	}
	var req *http.Request
	if base == "" {
		req = httptest.NewRequest(method, r.Target, body)
	} else {
		var err error
		if req, err = http.NewRequest(method, base+r.Target, body); err != nil {
			tb.Fatal(err)
		}
	}
	if r.Body != nil {
		// For Check, to validate the body once the server has read it.
		req.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(r.Body)), nil }
	}
	if r.UserAgent != "" || base != "" {
		// Go's client sends one of its own otherwise.
		req.Header.Set("User-Agent", r.UserAgent)
	}
	for k, v := range r.Header {
		req.Header.Set(k, v)
	}
	return req
}

// macUserAgent is a browser's User-Agent on a Mac, for the download links'
// inference.
const macUserAgent = "Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/130.0 Safari/537.36"

// UpdaterFiles are the files photocraft 1.0.0 carries for the updaters but
// Tauri's, by name: the packages and installers, and the companion files
// that name them, as electron-builder and vpk write them.
var UpdaterFiles = map[string]string{
	"photocraft-1.0.0-mac.zip":          "zip",
	"photocraft-1.0.0-full.nupkg":       "nupkg",
	"PhotoCraft-Setup-1.0.0.exe":        "setup",
	"PhotoCraft-1.0.0-linux-full.nupkg": "velopack",
	"RELEASES":                          strings.Repeat("a", 40) + " photocraft-1.0.0-full.nupkg 5\n",
	"PhotoCraftArm64-1.0.0-full.nupkg":  "arm64pkg",
	"RELEASES-arm64":                    strings.Repeat("c", 40) + " PhotoCraftArm64-1.0.0-full.nupkg 8\n",
	"latest.yml": "version: 1.0.0\nfiles:\n  - url: PhotoCraft-Setup-1.0.0.exe\n    sha512: " + strings.Repeat("A", 86) + "==\n    size: 5\n" +
		"path: PhotoCraft-Setup-1.0.0.exe\nsha512: " + strings.Repeat("A", 86) + "==\nreleaseDate: '2026-10-10T11:00:00.000Z'\n",
	"releases.linux.json": `{"Assets":[{"PackageId":"PhotoCraft","Version":"1.0.0","Type":"Full","FileName":"PhotoCraft-1.0.0-linux-full.nupkg",` +
		`"SHA1":"` + strings.Repeat("b", 40) + `","Size":8,"NotesMarkdown":"","NotesHTML":""}]}`,
}

// requests holds, for each path with parameters, the requests that give its
// statuses, given the deployment Requests describes.
var requests = map[string][]Request{
	"/v1/craft_apps/release_info/{app}": {
		{Target: "/v1/craft_apps/release_info/photocraft"},
		{Target: "/v1/craft_apps/release_info/filmcraft"},
		{Target: "/v1/craft_apps/release_info/nosuchapp"},
	},
	"/v1/craft_apps/updates/{app}/tauri/{target}/{arch}/{bundle_type}": {
		{Target: "/v1/craft_apps/updates/photocraft/tauri/windows/x86_64/nsis"},
		{Target: "/v1/craft_apps/updates/photocraft/tauri/windows/x86_64/nsis?current_version=1.0.0"},
		{Target: "/v1/craft_apps/updates/photocraft/tauri/windows/x86_64/%7B%7Bbundle_type%7D%7D?channel=prerelease&current_version=0.9.0"},
		{Target: "/v1/craft_apps/updates/photocraft/tauri/windows/x86_64/nsis?channel=beta"},
		{Target: "/v1/craft_apps/updates/photocraft/tauri/linux/x86_64/deb"},
		{Target: "/v1/craft_apps/updates/filmcraft/tauri/windows/x86_64/nsis"},
		{Target: "/v1/craft_apps/updates/nosuchapp/tauri/windows/x86_64/nsis"},
	},
	"/v1/craft_apps/updates/{app}/tauri/{target}/{arch}": {
		{Target: "/v1/craft_apps/updates/photocraft/tauri/windows/x86_64"},
		{Target: "/v1/craft_apps/updates/photocraft/tauri/windows/x86_64?current_version=v1.0.0"},
		{Target: "/v1/craft_apps/updates/photocraft/tauri/windows/x86_64?channel=beta"},
		{Target: "/v1/craft_apps/updates/photocraft/tauri/beos/x86_64"},
	},
	"/v1/craft_apps/updates/{app}/tauri/latest.json": {
		{Target: "/v1/craft_apps/updates/photocraft/tauri/latest.json"},
		{Target: "/v1/craft_apps/updates/photocraft/tauri/latest.json?channel=beta"},
		{Target: "/v1/craft_apps/updates/filmcraft/tauri/latest.json"},
	},
	"/v1/craft_apps/updates/{app}/appimage/{file}": {
		{Target: "/v1/craft_apps/updates/photocraft/appimage/x86_64.zsync"},
		{Target: "/v1/craft_apps/updates/photocraft/appimage/x86_64.zsync?channel=prerelease"},
		{Target: "/v1/craft_apps/updates/photocraft/appimage/aarch64.zsync"},
		{Target: "/v1/craft_apps/updates/photocraft/appimage/x86_64.zsync?channel=beta"},
		{Target: "/v1/craft_apps/updates/nosuchapp/appimage/x86_64.zsync"},
	},
	"/v1/craft_apps/updates/{app}/squirrel-mac/{arch}/{version}": {
		{Target: "/v1/craft_apps/updates/photocraft/squirrel-mac/x64/0.9.0"},
		{Target: "/v1/craft_apps/updates/photocraft/squirrel-mac/x64/1.0.0"},
		{Target: "/v1/craft_apps/updates/photocraft/squirrel-mac/x64/latest"},
		{Target: "/v1/craft_apps/updates/photocraft/squirrel-mac/arm64/0.9.0?channel=prerelease"},
		{Target: "/v1/craft_apps/updates/filmcraft/squirrel-mac/x64/0.9.0"},
	},
	"/v1/craft_apps/updates/{app}/squirrel-win/RELEASES": {
		{Target: "/v1/craft_apps/updates/photocraft/squirrel-win/RELEASES?id=PhotoCraft&localVersion=0.9.0&arch=amd64"},
		{Target: "/v1/craft_apps/updates/photocraft/squirrel-win/RELEASES?channel=beta"},
		{Target: "/v1/craft_apps/updates/filmcraft/squirrel-win/RELEASES"},
	},
	"/v1/craft_apps/updates/{app}/squirrel-win/{arch}/RELEASES": {
		{Target: "/v1/craft_apps/updates/photocraft/squirrel-win/arm64/RELEASES"},
		{Target: "/v1/craft_apps/updates/photocraft/squirrel-win/arm64/RELEASES?channel=beta"},
		{Target: "/v1/craft_apps/updates/photocraft/squirrel-win/ia32/RELEASES"},
	},
	"/v1/craft_apps/updates/{app}/velopack/{file}": {
		{Target: "/v1/craft_apps/updates/photocraft/velopack/releases.linux.json?localVersion=0.9.0&id=PhotoCraft"},
		{Target: "/v1/craft_apps/updates/photocraft/velopack/releases.win.json"},
		{Target: "/v1/craft_apps/updates/photocraft/velopack/releases.linux.json?channel=beta"},
	},
	"/v1/craft_apps/updates/{app}/electron/{file}": {
		{Target: "/v1/craft_apps/updates/photocraft/electron/latest.yml?noCache=1a2b3c"},
		{Target: "/v1/craft_apps/updates/photocraft/electron/latest-mac.yml"},
		{Target: "/v1/craft_apps/updates/photocraft/electron/latest.yml?channel=beta"},
	},
	"/v1/craft_apps/download/{app}": {
		{Target: "/v1/craft_apps/download/photocraft?os=windows&arch=x64&package=msi"},
		{Target: "/v1/craft_apps/download/photocraft", UserAgent: macUserAgent},
		{Target: "/v1/craft_apps/download/photocraft?os=windows", UserAgent: macUserAgent},
		{Target: "/v1/craft_apps/download/photocraft?os=freebsd&arch=x64"},
		{Target: "/v1/craft_apps/download/photocraft?os=windows&arch=amd64"},
		{Target: "/v1/craft_apps/download/photocraft"},
		{Target: "/v1/craft_apps/download/filmcraft?os=windows&arch=x64"},
		{Target: "/v1/craft_apps/download/nosuchapp?os=windows&arch=x64"},
	},
}

// Requests returns the requests to send for op ("METHOD path"): the path
// itself, or for a path with parameters a list that gives every status of
// its operations where photocraft has a release 1.0.0 with a windows/x64 msi
// asset and no freebsd one, an AppImage zsync file for x86_64 only, a
// signed Tauri NSIS installer for Windows x86_64 only, an x64 macOS zip,
// and RELEASES, RELEASES-arm64, latest.yml and releases.linux.json, no
// other, filmcraft has no release (or was never fetched), and
// nosuchapp is not configured; for a GET or HEAD, the first of those once
// more with a body, which every GET and HEAD refuses. For the webhook's
// POST, signed (with WebhookSecret) and unsigned deliveries of every kind.
// It fails the test for a path with parameters it has no requests for: add
// them here.
func Requests(tb testing.TB, op string) []Request {
	tb.Helper()
	if op == "POST /v1/craft_apps/github_webhook" {
		return webhookRequests()
	}
	method, path, _ := strings.Cut(op, " ")
	rs := []Request{{Target: path}}
	if strings.Contains(path, "{") {
		var ok bool
		if rs, ok = requests[path]; !ok {
			tb.Fatalf("openapitest: no requests for %s: add some to openapitest's requests", path)
		}
	}
	if method == http.MethodGet || method == http.MethodHead {
		withBody := rs[0]
		withBody.Body = []byte("{}")
		rs = append(slices.Clip(rs), withBody)
	}
	return rs
}

// Check validates res, the answer to req, against the document, failing the
// test with every problem found. A gzip body is decompressed first (the
// document describes the JSON; Content-Encoding is checked as a header). It
// reads and replaces res.Body, and returns the body as sent.
func (d *Doc) Check(tb testing.TB, req *http.Request, res *http.Response) []byte {
	tb.Helper()
	sent, err := io.ReadAll(res.Body)
	res.Body.Close()
	if err != nil {
		tb.Fatalf("openapitest: %s %s: read the body: %v", req.Method, req.URL.Path, err)
	}
	body := sent
	if res.Header.Get("Content-Encoding") == "gzip" && len(sent) > 0 {
		zr, err := gzip.NewReader(bytes.NewReader(sent))
		if err == nil {
			body, err = io.ReadAll(zr)
		}
		if err != nil {
			tb.Fatalf("openapitest: %s %s: Content-Encoding gzip, but the body does not decompress: %v", req.Method, req.URL.Path, err)
		}
	}
	res.Body = io.NopCloser(bytes.NewReader(body))
	if res.Close && res.Header.Get("Connection") == "" {
		// Go's client takes Connection: close out of the header into
		// res.Close: put it back, for the document declares it.
		res.Header.Set("Connection", "close")
	}
	if req.GetBody != nil {
		// The server read it: the validator reads it again.
		if req.Body, err = req.GetBody(); err != nil {
			tb.Fatalf("openapitest: %s %s: the request's body again: %v", req.Method, req.URL.Path, err)
		}
	}
	if ok, verrs := d.v.ValidateHttpRequestResponse(req, res); !ok && !unauthorized(res, verrs) {
		tb.Errorf("openapitest: %s %s (Accept-Encoding %q, If-None-Match %q) answered %d, which the document does not allow:\n%s",
			req.Method, req.URL.Path, req.Header.Get("Accept-Encoding"), req.Header.Get("If-None-Match"), res.StatusCode, describe(verrs))
	}
	d.checkUndeclaredHeaders(tb, req, res)
	res.Body = io.NopCloser(bytes.NewReader(sent))
	return sent
}

// unauthorized reports whether res is a 401 and every one of errs is about
// the request's credentials: an unsigned webhook delivery breaks its
// operation's security requirement, and the document says that it is
// answered 401.
func unauthorized(res *http.Response, errs []*errors.ValidationError) bool {
	return res.StatusCode == http.StatusUnauthorized && !slices.ContainsFunc(errs, func(e *errors.ValidationError) bool {
		return e.ValidationType != helpers.SecurityValidation
	})
}

// undeclaredOK are the headers an answer may carry without its response
// declaring them: OpenAPI describes Content-Type by the content map, and
// Date is net/http's.
var undeclaredOK = []string{"Content-Type", "Date"}

// checkUndeclaredHeaders fails the test for every header of res that the
// document does not declare for its operation and status.
func (d *Doc) checkUndeclaredHeaders(tb testing.TB, req *http.Request, res *http.Response) {
	tb.Helper()
	item, _, _ := paths.FindPath(req, d.model, nil)
	if item == nil {
		return // the validator has reported it
	}
	op := helpers.ExtractOperation(req, item)
	if op == nil || op.Responses == nil {
		return
	}
	resp := op.Responses.Codes.GetOrZero(strconv.Itoa(res.StatusCode))
	if resp == nil {
		return
	}
	for name := range res.Header {
		if slices.ContainsFunc(undeclaredOK, func(h string) bool { return strings.EqualFold(h, name) }) {
			continue
		}
		declared := false
		for h := range resp.Headers.KeysFromOldest() {
			declared = declared || strings.EqualFold(h, name)
		}
		if !declared {
			tb.Errorf("openapitest: %s %s answered %d with header %s, which the document does not declare for it", req.Method, req.URL.Path, res.StatusCode, name)
		}
	}
}

func describe(errs []*errors.ValidationError) string {
	var b strings.Builder
	for _, e := range errs {
		b.WriteString("  - " + e.Message + ": " + e.Reason + "\n")
		for _, s := range e.SchemaValidationErrors {
			b.WriteString("      " + s.FieldPath + " (" + s.KeywordLocation + "): " + s.Reason + "\n")
		}
	}
	return b.String()
}
