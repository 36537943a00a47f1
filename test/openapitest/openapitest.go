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
	"io"
	"net/http"
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
	Target    string // path and query
	UserAgent string // "" for none
}

// macUserAgent is a browser's User-Agent on a Mac, for the download links'
// inference.
const macUserAgent = "Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/130.0 Safari/537.36"

// requests holds, for each path with parameters, the requests that give its
// statuses, given the deployment Requests describes.
var requests = map[string][]Request{
	"/v1/craft_apps/release_info/{app}": {
		{Target: "/v1/craft_apps/release_info/photocraft"},
		{Target: "/v1/craft_apps/release_info/filmcraft"},
		{Target: "/v1/craft_apps/release_info/nosuchapp"},
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
// its operations where photocraft has a release with a windows/x64 msi asset
// and no freebsd one, filmcraft has no release (or was never fetched), and
// nosuchapp is not configured. It fails the test for a path with parameters
// it has no requests for: add them here.
func Requests(tb testing.TB, op string) []Request {
	tb.Helper()
	_, path, _ := strings.Cut(op, " ")
	if !strings.Contains(path, "{") {
		return []Request{{Target: path}}
	}
	r, ok := requests[path]
	if !ok {
		tb.Fatalf("openapitest: no requests for %s: add some to openapitest's requests", path)
	}
	return r
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
	if ok, verrs := d.v.ValidateHttpRequestResponse(req, res); !ok {
		tb.Errorf("openapitest: %s %s (Accept-Encoding %q, If-None-Match %q) answered %d, which the document does not allow:\n%s",
			req.Method, req.URL.Path, req.Header.Get("Accept-Encoding"), req.Header.Get("If-None-Match"), res.StatusCode, describe(verrs))
	}
	d.checkUndeclaredHeaders(tb, req, res)
	res.Body = io.NopCloser(bytes.NewReader(sent))
	return sent
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
