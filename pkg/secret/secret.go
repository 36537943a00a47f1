// Package secret is the one way the service keeps passwords and tokens out
// of what it prints: a type that prints as Mask, the masked form of a URL,
// Scrub for messages that may quote a secret, and Redact and Excerpt for
// text a server wrote, which may echo one in any spelling.
package secret

import (
	"bytes"
	"fmt"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Mask stands in for a secret in everything printed.
const Mask = "[redacted]"

// String is a value that must never be printed, such as a token or a DSN.
// Every fmt verb, String and MarshalText give Mask (or "" when it is empty);
// only Reveal gives the value.
type String string

// Reveal returns the secret itself, for the one place that sends it.
func (s String) Reveal() string { return string(s) }

// String returns Mask, or "" for an empty secret.
func (s String) String() string {
	if s == "" {
		return ""
	}
	return Mask
}

// Format prints the masked form under any verb and flags, so that %v, %+v,
// %#v, %s and %q of a struct holding s never show the secret.
func (s String) Format(f fmt.State, verb rune) { fmt.Fprintf(f, fmt.FormatString(f, verb), s.String()) }

// MarshalText returns the masked form, so that JSON and structured logs of a
// struct holding s never show the secret.
func (s String) MarshalText() ([]byte, error) { return []byte(s.String()), nil }

// URL is a URL that may carry a password, such as REDIS_URL. It prints as
// MaskURL gives it; only Reveal gives the URL with its password.
type URL string

// Reveal returns the URL itself, password included, for the client that
// connects with it.
func (u URL) Reveal() string { return string(u) }

// String returns the URL with its password masked (MaskURL).
func (u URL) String() string { return MaskURL(string(u)) }

// Format prints the masked URL under any verb and flags.
func (u URL) Format(f fmt.State, verb rune) { fmt.Fprintf(f, fmt.FormatString(f, verb), u.String()) }

// MarshalText returns the masked URL.
func (u URL) MarshalText() ([]byte, error) { return []byte(u.String()), nil }

// MaskURL returns raw with the password of its user information replaced by
// Mask. A string that does not parse as a URL may hide a password anywhere,
// so it comes back as Mask whole; "" stays "".
func MaskURL(raw string) string {
	if raw == "" {
		return ""
	}
	u, err := url.Parse(raw)
	if err != nil {
		return Mask
	}
	if pw, ok := u.User.Password(); !ok || pw == "" {
		return raw
	}
	// url.UserPassword would percent-encode the brackets of Mask.
	masked := *u
	masked.User = url.UserPassword(u.User.Username(), "PASSWORD")
	return strings.Replace(masked.String(), ":PASSWORD@", ":"+Mask+"@", 1)
}

// Scrub returns msg with every non-empty one of secrets replaced by Mask, for
// an error or a log line that may quote one (a driver's message, a server's
// answer).
func Scrub(msg string, secrets ...string) string {
	for _, s := range secrets {
		if s != "" {
			msg = strings.ReplaceAll(msg, s, Mask)
		}
	}
	return msg
}

// MinTokenRun is the length from which a run of token characters is taken
// for a key: Redact removes every run of at least this many ASCII letters,
// digits, "_" and "-". API tokens are longer (Cloudflare's are 40), words
// and numbers shorter.
const MinTokenRun = 20

// Redact returns text with everything token-shaped replaced by Mask, for
// text a server wrote that may echo a secret in a form Scrub misses:
//
//   - one of secrets, compared on its ASCII letters and digits alone and
//     case-insensitively: upper-cased, or split by spaces, punctuation,
//     line breaks or zero-width characters, it is still found; the span from
//     its first letter or digit to its last is replaced;
//   - a run of MinTokenRun or more ASCII letters, digits, "_" and "-", any
//     format characters (Unicode Cf, such as U+200B and U+FEFF) within it
//     ignored: a secret Redact was not told of.
//
// Over-redaction is the price: a secret of a few characters matches much.
func Redact(text string, secrets ...string) string {
	var spans [][2]int // [start, end) byte offsets in text

	// Runs of token characters, format characters inside them ignored.
	start, end, n := 0, 0, 0
	for i, r := range text {
		switch {
		case isTokenChar(r):
			if n == 0 {
				start = i
			}
			n++
			end = i + 1
		case n > 0 && unicode.Is(unicode.Cf, r):
			// Invisible: the run goes on across it.
		default:
			if n >= MinTokenRun {
				spans = append(spans, [2]int{start, end})
			}
			n = 0
		}
	}
	if n >= MinTokenRun {
		spans = append(spans, [2]int{start, end})
	}

	// The secrets, on the letters and digits of text: folded[k] is the
	// lower-cased k-th of them, at byte offset at[k] of text.
	var folded []byte
	var at []int
	for i := 0; i < len(text); i++ {
		if c := text[i]; isAlnum(c) {
			folded = append(folded, lower(c))
			at = append(at, i)
		}
	}
	for _, s := range secrets {
		var want []byte
		for i := 0; i < len(s); i++ {
			if isAlnum(s[i]) {
				want = append(want, lower(s[i]))
			}
		}
		if len(want) == 0 {
			continue
		}
		for from := 0; ; {
			k := bytes.Index(folded[from:], want)
			if k < 0 {
				break
			}
			first, last := from+k, from+k+len(want)-1
			spans = append(spans, [2]int{at[first], at[last] + 1})
			from = last + 1
		}
	}
	if len(spans) == 0 {
		return text
	}

	slices.SortFunc(spans, func(a, b [2]int) int { return a[0] - b[0] })
	var out strings.Builder
	done := 0
	for _, sp := range spans {
		if sp[1] <= done {
			continue
		}
		if sp[0] < done {
			sp[0] = done
		} else {
			out.WriteString(text[done:sp[0]])
			out.WriteString(Mask)
		}
		done = sp[1]
	}
	out.WriteString(text[done:])
	return out.String()
}

// Excerpt returns what may be logged of b, an answer's body or a message
// that may quote one: b through Redact (all of it, so that no cut can leave
// part of a secret behind), cut to at most max bytes on a character
// boundary, quoted by strconv.QuoteToASCII (so that it is one line of
// printable ASCII whatever b holds), and followed by "..." when cut.
func Excerpt(b []byte, max int, secrets ...string) string {
	text := Redact(string(b), secrets...)
	if len(text) <= max {
		return strconv.QuoteToASCII(text)
	}
	cut := max
	for cut > 0 && !utf8.RuneStart(text[cut]) {
		cut--
	}
	return strconv.QuoteToASCII(text[:cut]) + "..."
}

func isTokenChar(r rune) bool { return r < utf8.RuneSelf && (isAlnum(byte(r)) || r == '_' || r == '-') }

func isAlnum(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9'
}

func lower(c byte) byte {
	if 'A' <= c && c <= 'Z' {
		return c + 'a' - 'A'
	}
	return c
}
