package config

import (
	"fmt"
	"net/url"
)

// redacted stands in for a secret in every printed form.
const redacted = "[redacted]"

// Secret is a setting that must never be printed, such as the GitHub token.
// Every fmt verb, String and MarshalText give "[redacted]" (or "" when the
// secret is empty); only Reveal gives the value.
type Secret string

// Reveal returns the secret itself, for the one place that sends it.
func (s Secret) Reveal() string { return string(s) }

// String returns "[redacted]", or "" for an empty secret.
func (s Secret) String() string {
	if s == "" {
		return ""
	}
	return redacted
}

// Format prints the redacted form under any verb and flags, so that %v, %+v,
// %#v, %s and %q of a struct holding s never show the secret.
func (s Secret) Format(f fmt.State, verb rune) { fmt.Fprintf(f, fmt.FormatString(f, verb), s.String()) }

// MarshalText returns the redacted form, so that JSON and structured logs
// of a struct holding s never show the secret.
func (s Secret) MarshalText() ([]byte, error) { return []byte(s.String()), nil }

// SecretURL is a URL that may carry a password, such as REDIS_URL. It prints
// as RedactURL gives it; only Reveal gives the URL with its password.
type SecretURL string

// Reveal returns the URL itself, password included, for the client that
// connects with it.
func (u SecretURL) Reveal() string { return string(u) }

// String returns the URL with its password masked (see RedactURL).
func (u SecretURL) String() string { return RedactURL(string(u)) }

// Format prints the masked URL under any verb and flags.
func (u SecretURL) Format(f fmt.State, verb rune) {
	fmt.Fprintf(f, fmt.FormatString(f, verb), u.String())
}

// MarshalText returns the masked URL.
func (u SecretURL) MarshalText() ([]byte, error) { return []byte(u.String()), nil }

// RedactURL returns s with the password of its user information replaced by
// "xxxxx", for logs. A string that does not parse as a URL may hide a
// password anywhere, so it comes back as "[redacted]" whole; "" stays "".
func RedactURL(s string) string {
	if s == "" {
		return ""
	}
	u, err := url.Parse(s)
	if err != nil {
		return redacted
	}
	if _, ok := u.User.Password(); !ok {
		return s
	}
	return u.Redacted()
}
