package fakegithub

import (
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// Fault replaces the fake's normal answer to one release request (Queue) or
// to every one (Stick). The zero Fault answers normally.
type Fault struct {
	// Delay holds the answer back this long. The fake gives up, writing
	// nothing, when the request is cancelled or the test ends first.
	Delay time.Duration

	// Status and Body, when either is set, are written instead of the normal
	// answer (Status 0 means 200). A 2xx answer with a body gets a strong
	// ETag derived from the body unless Header sets one. When both are
	// unset, the normal answer follows the delay.
	Status int
	Body   []byte

	// Header is set on the answer over the fake's own headers; a key with no
	// values removes that header.
	Header http.Header

	// Hangup, when set, drops the connection instead of answering.
	Hangup Hangup
}

// Hangup is how a fault drops the connection.
type Hangup int

// The ways to drop a connection.
const (
	NoHangup    Hangup = iota // answer
	HangupClose               // close the connection without a word: the client reads EOF
	HangupReset               // reset it (RST): the client reads "connection reset by peer"
)

// Status answers with status and GitHub's JSON error message for it.
func Status(status int) Fault {
	return Fault{Status: status, Body: message(http.StatusText(status), docsLatest)}
}

// ServerError answers 500 Internal Server Error.
func ServerError() Fault { return Status(http.StatusInternalServerError) }

// RateLimit answers like GitHub when the primary rate limit is spent: 403
// with x-ratelimit-remaining: 0 and, unless reset is zero, x-ratelimit-reset.
// A go-github client remembers such an answer and sends nothing more before
// reset.
func RateLimit(reset time.Time) Fault {
	h := http.Header{
		"X-Ratelimit-Limit":     {"60"},
		"X-Ratelimit-Remaining": {"0"},
		"X-Ratelimit-Used":      {"60"},
		"X-Ratelimit-Reset":     nil,
	}
	if !reset.IsZero() {
		h.Set("X-Ratelimit-Reset", strconv.FormatInt(reset.Unix(), 10))
	}
	return Fault{
		Status: http.StatusForbidden,
		Header: h,
		Body: message("API rate limit exceeded for 127.0.0.1. (But here's the good news: "+
			"Authenticated requests get a higher rate limit. Check out the documentation for more details.)",
			"https://docs.github.com/rest/overview/resources-in-the-rest-api#rate-limiting"),
	}
}

// TooManyRequests answers 429 with Retry-After: retryAfter, or without
// Retry-After when it is "". retryAfter is sent verbatim: seconds ("120") or
// an HTTP date (time.Format(http.TimeFormat)).
func TooManyRequests(retryAfter string) Fault {
	return Fault{
		Status: http.StatusTooManyRequests,
		Header: retryAfterHeader(retryAfter),
		Body:   message("Too Many Requests", docsLatest),
	}
}

// SecondaryRateLimit answers like GitHub's secondary (abuse) rate limit: 403
// with the secondary-rate-limit documentation URL, and Retry-After:
// retryAfter unless it is "".
func SecondaryRateLimit(retryAfter string) Fault {
	return Fault{
		Status: http.StatusForbidden,
		Header: retryAfterHeader(retryAfter),
		Body: message("You have exceeded a secondary rate limit. Please wait a few minutes before you try again.",
			"https://docs.github.com/rest/overview/rate-limits-for-the-rest-api#about-secondary-rate-limits"),
	}
}

// Slow holds the normal answer back for d (see Fault.Delay).
func Slow(d time.Duration) Fault { return Fault{Delay: d} }

// Malformed answers 200 with JSON cut off in the middle.
func Malformed() Fault {
	return Fault{Status: http.StatusOK, Body: []byte(`{"tag_name":"v1.0.0","name":"Trunc`)}
}

// Raw answers 200 with body verbatim: wrong types, a draft, not JSON at all.
func Raw(body string) Fault { return Fault{Status: http.StatusOK, Body: []byte(body)} }

// Oversized answers 200 with a well-formed release of exactly n bytes (at
// least 64), its notes padded with "a": only a size limit can refuse it.
func Oversized(n int) Fault {
	const head, tail = `{"tag_name":"v9.9.9","draft":false,"prerelease":false,"body":"`, `"}`
	n = max(n, len(head)+len(tail))
	var b strings.Builder
	b.Grow(n)
	b.WriteString(head)
	b.WriteString(strings.Repeat("a", n-len(head)-len(tail)))
	b.WriteString(tail)
	return Fault{Status: http.StatusOK, Body: []byte(b.String())}
}

// Redirect answers 302 to location, as GitHub redirects an asset request
// to where it serves the bytes from.
func Redirect(location string) Fault {
	return Fault{Status: http.StatusFound, Header: http.Header{"Location": {location}}, Body: []byte{}}
}

// CloseConn drops the connection without answering.
func CloseConn() Fault { return Fault{Hangup: HangupClose} }

// ResetConn resets the connection without answering.
func ResetConn() Fault { return Fault{Hangup: HangupReset} }

func retryAfterHeader(v string) http.Header {
	if v == "" {
		return nil
	}
	return http.Header{"Retry-After": {v}}
}

func message(msg, docs string) []byte {
	b, _ := json.Marshal(map[string]string{"message": msg, "documentation_url": docs})
	return b
}
