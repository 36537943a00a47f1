package api

import (
	"net/http"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/storytold/craft-releases/pkg/snapshot"
)

// Canonical header keys, so that handlers assign to the header map directly.
const (
	hdrAcceptEncoding     = "Accept-Encoding"
	hdrAllow              = "Allow"
	hdrConnection         = "Connection"
	hdrContentTypeOptions = "X-Content-Type-Options"
	hdrCacheControl       = "Cache-Control"
	hdrContentEncoding    = "Content-Encoding"
	hdrContentLength      = "Content-Length"
	hdrContentType        = "Content-Type"
	hdrETag               = "Etag"
	hdrIfNoneMatch        = "If-None-Match"
	hdrInstallID          = "X-Install-Id"
	hdrVary               = "Vary"
)

// releaseInfo serves the current rendering's full answer.
func releaseInfo(r Renderer) echo.HandlerFunc {
	return func(c echo.Context) error { return serveDoc(c, &r.Current().Doc, jsonType) }
}

// Fixed header values, shared by every answer: never modify them.
var (
	jsonType     = []string{"application/json"}
	varyEncoding = []string{hdrAcceptEncoding}
	// varyEncodingInstall is a feed's Vary while a rollout is under way.
	varyEncodingInstall = []string{hdrAcceptEncoding + ", " + hdrInstallID}
	gzipEncoding        = []string{"gzip"}
	connClose           = []string{"close"}
)

// serveDoc answers with d (docs/wire.md, "Headers and status codes"): the gzip copy to
// clients that accept it, 304 when If-None-Match matches the representation
// served, and Vary: Accept-Encoding on every answer. It does no encoding and
// no locking, and assigns precomputed header values.
func serveDoc(c echo.Context, d *snapshot.Doc, contentType []string) error {
	return serveDocAs(c, d, contentType, d.Values.CacheControl)
}

// serveDocAs is serveDoc with Cache-Control cacheControl rather than d's.
func serveDocAs(c echo.Context, d *snapshot.Doc, contentType, cacheControl []string) error {
	req, res := c.Request(), c.Response()
	gz := acceptsGzip(req.Header[hdrAcceptEncoding])
	etag, etagValue := d.ETag, d.Values.ETag
	if gz {
		etag, etagValue = d.GzipETag, d.Values.GzipETag
	}

	h := res.Header()
	h[hdrCacheControl] = cacheControl
	h[hdrETag] = etagValue
	if h[hdrVary] == nil {
		// A feed's answer may vary on the install id too (feedHandler).
		h[hdrVary] = varyEncoding
	}
	if noneMatch(req.Header[hdrIfNoneMatch], etag) {
		res.WriteHeader(http.StatusNotModified)
		return nil
	}

	length := d.Values.ContentLength
	if gz {
		length = d.Values.GzipContentLength
		h[hdrContentEncoding] = gzipEncoding
	}
	h[hdrContentType] = contentType
	h[hdrContentLength] = length
	res.WriteHeader(http.StatusOK)
	if req.Method != http.MethodHead {
		body := d.Body()
		if gz {
			body = d.Gzip()
		}
		// One write of the whole body. A failed write means the client has
		// gone: no one is left to tell.
		_, _ = res.Write(body)
	}
	return nil
}

// acceptsGzip reports whether Accept-Encoding field values (RFC 9110, 12.5.3)
// accept gzip: "gzip" or "x-gzip" listed with a non-zero weight, or, when
// neither is listed, "*" with a non-zero weight. Codings are compared without
// regard to case; an element with a malformed weight is ignored.
func acceptsGzip(values []string) bool {
	gzip, star := -1, -1 // -1: not listed; 0: refused; 1: accepted
	for _, v := range values {
		for v != "" {
			var elem string
			elem, v, _ = strings.Cut(v, ",")
			coding, params, _ := strings.Cut(elem, ";")
			q, ok := weight(params)
			if !ok {
				continue
			}
			switch coding = trimOWS(coding); {
			case strings.EqualFold(coding, "gzip"), strings.EqualFold(coding, "x-gzip"):
				gzip = max(gzip, q)
			case coding == "*":
				star = max(star, q)
			}
		}
	}
	if gzip >= 0 {
		return gzip == 1
	}
	return star == 1
}

// weight reads the parameters after a coding and returns 1 for a non-zero
// weight (or none given), 0 for a zero one, and ok false when the weight is
// not a number between 0 and 1.
func weight(params string) (q int, ok bool) {
	for params != "" {
		var p string
		p, params, _ = strings.Cut(params, ";")
		name, value, _ := strings.Cut(trimOWS(p), "=")
		if !strings.EqualFold(name, "q") {
			continue
		}
		return qvalue(value)
	}
	return 1, true
}

// qvalue parses a weight leniently ("0", "0.5", "1.000", any number of
// decimals) and reports whether it is non-zero.
func qvalue(s string) (q int, ok bool) {
	whole, frac, _ := strings.Cut(s, ".")
	if whole != "0" && whole != "1" {
		return 0, false
	}
	if whole == "1" {
		q = 1
	}
	for i := range len(frac) {
		d := frac[i]
		if d < '0' || d > '9' || (whole == "1" && d != '0') {
			return 0, false
		}
		if d != '0' {
			q = 1
		}
	}
	return q, true
}

// noneMatch reports whether If-None-Match field values (RFC 9110, 13.1.2)
// match the strong entity tag etag under weak comparison: "*" matches, and a
// list matches when one of its tags, with or without W/, has etag's opaque
// tag. Parsing a field stops at the first malformed tag.
func noneMatch(values []string, etag string) bool {
	for _, v := range values {
		for {
			v = strings.TrimLeft(v, " \t,")
			if v == "" {
				break
			}
			if v[0] == '*' {
				return true
			}
			tag, rest, ok := scanETag(v)
			if !ok {
				break
			}
			if tag == etag {
				return true
			}
			v = rest
		}
	}
	return false
}

// scanETag reads the entity tag at the start of s and returns its opaque tag
// (quotes included, W/ left out) and what follows it.
func scanETag(s string) (tag, rest string, ok bool) {
	s = strings.TrimPrefix(s, "W/")
	if len(s) < 2 || s[0] != '"' {
		return "", "", false
	}
	for i := 1; i < len(s); i++ {
		switch c := s[i]; {
		case c == '"':
			return s[:i+1], s[i+1:], true
		// etagc is %x21 / %x23-7E / obs-text: no controls, spaces or DEL.
		case c <= ' ' || c == 0x7f:
			return "", "", false
		}
	}
	return "", "", false
}

// trimOWS removes optional whitespace (spaces and tabs) around s.
func trimOWS(s string) string { return strings.Trim(s, " \t") }
