// Package secret is the one way the service keeps passwords and tokens out
// of what it prints: a type that prints as Mask, the masked form of a URL,
// and Scrub for messages that may quote a secret.
package secret

import (
	"fmt"
	"net/url"
	"strings"
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
