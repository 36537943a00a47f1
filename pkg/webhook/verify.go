package webhook

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"hash"
	"strings"
)

// SignatureHeader carries GitHub's HMAC-SHA256 of the raw body.
const SignatureHeader = "X-Hub-Signature-256"

// Verify reports whether signature, the value of X-Hub-Signature-256
// ("sha256=" and 64 hex digits), is the HMAC-SHA256 of body under one of
// secrets (see macs.match).
func Verify(secrets []string, body []byte, signature string) bool {
	m := newMACs(secrets)
	m.write(body)
	return m.match(signature)
}

// macs is the running HMAC-SHA256 of one body under each secret, written as
// the body is read.
type macs []hash.Hash

func newMACs(secrets []string) macs {
	m := make(macs, len(secrets))
	for i, s := range secrets {
		m[i] = hmac.New(sha256.New, []byte(s))
	}
	return m
}

// write adds p to every HMAC.
func (m macs) write(p []byte) {
	for _, h := range m {
		h.Write(p)
	}
}

// reset starts every HMAC again, for the next body.
func (m macs) reset() {
	for _, h := range m {
		h.Reset()
	}
}

// match reports whether signature is one of the HMACs. The comparison is in
// constant time, and every secret is tried whichever matches, so the time
// taken tells nothing about the secrets. A missing or malformed signature,
// or no secret, is false.
func (m macs) match(signature string) bool {
	digits, ok := strings.CutPrefix(signature, "sha256=")
	if !ok {
		return false
	}
	got, err := hex.DecodeString(digits)
	if err != nil || len(got) != sha256.Size {
		return false
	}
	match := false
	for _, h := range m {
		if hmac.Equal(h.Sum(nil), got) {
			match = true
		}
	}
	return match
}

// Sign returns the X-Hub-Signature-256 value of body under secret, as GitHub
// computes it; for tests and for checking a configuration by hand.
func Sign(secret string, body []byte) string {
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write(body)
	return "sha256=" + hex.EncodeToString(mac.Sum(nil))
}
