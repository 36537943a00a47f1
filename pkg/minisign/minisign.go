// Package minisign reads minisign signatures and public keys as Tauri's
// updater carries them: a .sig file is the base64 of a minisign signature
// box, the pubkey of tauri.conf.json the base64 of a minisign public-key
// file. It checks what can be checked without the signed file: the box's
// shape, its algorithm and key id, and, given the app's public key, that
// the key signed the box (its global signature over the signature and the
// trusted comment). Whether the signature matches a bundle's bytes only the
// updater can check, as it downloads them (docs/updates.md, "What the
// service checks"). It does no I/O; everything is safe for concurrent use.
package minisign

import (
	"bytes"
	"crypto/ed25519"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"
)

// MaxSignatureText bounds a .sig file, in bytes: Tauri's are about 0.4 KiB.
const MaxSignatureText = 4 << 10

// maxPublicKey bounds a public key as tauri.conf.json gives it, in bytes:
// they are about 150.
const maxPublicKey = 1 << 10

// The comment prefixes of minisign's files.
const (
	untrustedPrefix = "untrusted comment: "
	trustedPrefix   = "trusted comment: "
)

// Errors of PublicKey.Check.
var (
	// ErrOtherKey: the signature names another key than the app's.
	ErrOtherKey = errors.New("signed by another key")
	// ErrForged: the signature names the app's key, but the key did not
	// sign it.
	ErrForged = errors.New("global signature does not verify with the key")
)

// KeyID is the 8 bytes that name a minisign key, as they appear in its
// files.
type KeyID [8]byte

// String returns the id as minisign prints it: the 16 hexadecimal digits,
// in capitals, of the id read as a little-endian integer (minisign itself
// leaves out leading zeros).
func (k KeyID) String() string {
	return fmt.Sprintf("%016X", binary.LittleEndian.Uint64(k[:]))
}

// Signature is a minisign signature box as a .sig file holds it.
type Signature struct {
	// Text is the .sig file without the white space around it: one line of
	// padded standard base64, what the updater's "signature" field carries.
	Text string
	// Prehashed is true for the algorithm "ED" (the file's BLAKE2b-512 is
	// signed: what Tauri's CLI and current minisign write), false for the legacy
	// "Ed" (the file itself is signed). The updater accepts both.
	Prehashed bool
	// KeyID names the key that made the signature, by the box's word only
	// until PublicKey.Check accepts it.
	KeyID KeyID
	// TrustedComment is the trusted comment without its prefix ("timestamp:
	// 1700000000\tfile:ArtCraft.app.tar.gz" from Tauri's CLI). It is
	// authentic only once PublicKey.Check accepts the signature.
	TrustedComment string

	signature [ed25519.SignatureSize]byte // over the file (or its hash)
	global    [ed25519.SignatureSize]byte // over signature + trusted comment
}

// ParseSignature reads the text of a .sig file: at most MaxSignatureText
// bytes holding, apart from white space around it, one line of padded
// standard base64 (the updater decodes it so, and fails on anything else)
// of a minisign signature box in UTF-8. The box is four lines, each ended by
// a line feed (the last one's optional): "untrusted comment: " and a
// comment; the base64 of the algorithm ("ED" or the legacy "Ed"), the key id
// and the 64-byte signature; "trusted comment: " and a comment; the base64
// of the 64-byte global signature. The comments hold no control character
// but tab, and nothing else follows. Anything else is an error saying what
// is wrong. ParseSignature checks no key: see PublicKey.Check.
func ParseSignature(text []byte) (Signature, error) {
	if len(text) > MaxSignatureText {
		return Signature{}, fmt.Errorf("minisign signature: %d bytes, over %d", len(text), MaxSignatureText)
	}
	text = bytes.Trim(text, " \t\r\n")
	box, err := decodeLine(text)
	if err != nil {
		return Signature{}, fmt.Errorf("minisign signature: %w", err)
	}
	lines, err := boxLines(box, 4)
	if err != nil {
		return Signature{}, fmt.Errorf("minisign signature box: %w", err)
	}
	s := Signature{Text: string(text)}
	if _, err := comment(lines[0], untrustedPrefix); err != nil {
		return Signature{}, fmt.Errorf("minisign signature box: line 1: %w", err)
	}
	sig, err := decodeBytes(lines[1], 2+len(s.KeyID)+len(s.signature))
	if err != nil {
		return Signature{}, fmt.Errorf("minisign signature box: line 2: %w", err)
	}
	switch string(sig[:2]) {
	case "ED":
		s.Prehashed = true
	case "Ed":
	default:
		return Signature{}, fmt.Errorf("minisign signature box: algorithm %q, want ED or Ed", sig[:2])
	}
	copy(s.KeyID[:], sig[2:])
	copy(s.signature[:], sig[2+len(s.KeyID):])
	if s.TrustedComment, err = comment(lines[2], trustedPrefix); err != nil {
		return Signature{}, fmt.Errorf("minisign signature box: line 3: %w", err)
	}
	global, err := decodeBytes(lines[3], len(s.global))
	if err != nil {
		return Signature{}, fmt.Errorf("minisign signature box: line 4: %w", err)
	}
	copy(s.global[:], global)
	return s, nil
}

// PublicKey is a minisign public key.
type PublicKey struct {
	KeyID KeyID
	key   [ed25519.PublicKeySize]byte
}

// ParsePublicKey reads a public key as the pubkey of tauri.conf.json holds
// it: at most 1 KiB of padded standard base64, nothing around it, of a
// minisign public-key file in UTF-8. The file is two lines, each ended by a
// line feed (the last one's optional): "untrusted comment: " and a comment
// without control characters but tab; the base64 of "Ed", the key id and
// the 32-byte Ed25519 key. Anything else is an error saying what is wrong.
func ParsePublicKey(b64 string) (PublicKey, error) {
	if len(b64) > maxPublicKey {
		return PublicKey{}, fmt.Errorf("minisign public key: %d bytes, over %d", len(b64), maxPublicKey)
	}
	file, err := decodeLine([]byte(b64))
	if err != nil {
		return PublicKey{}, fmt.Errorf("minisign public key: %w", err)
	}
	lines, err := boxLines(file, 2)
	if err != nil {
		return PublicKey{}, fmt.Errorf("minisign public key file: %w", err)
	}
	if _, err := comment(lines[0], untrustedPrefix); err != nil {
		return PublicKey{}, fmt.Errorf("minisign public key file: line 1: %w", err)
	}
	var k PublicKey
	b, err := decodeBytes(lines[1], 2+len(k.KeyID)+len(k.key))
	if err != nil {
		return PublicKey{}, fmt.Errorf("minisign public key file: line 2: %w", err)
	}
	if string(b[:2]) != "Ed" {
		return PublicKey{}, fmt.Errorf("minisign public key file: algorithm %q, want Ed", b[:2])
	}
	copy(k.KeyID[:], b[2:])
	copy(k.key[:], b[2+len(k.KeyID):])
	return k, nil
}

// Check reports whether k made s, as far as that can be told without the
// signed file: s names k's key id (else ErrOtherKey), and its global
// signature, over its signature and its trusted comment, verifies with k
// (else ErrForged). It does not check the signature over the file: a
// signature k made for another file passes.
func (k PublicKey) Check(s Signature) error {
	if s.KeyID != k.KeyID {
		return fmt.Errorf("key id %s, want %s: %w", s.KeyID, k.KeyID, ErrOtherKey)
	}
	signed := make([]byte, 0, len(s.signature)+len(s.TrustedComment))
	signed = append(append(signed, s.signature[:]...), s.TrustedComment...)
	if !ed25519.Verify(k.key[:], signed, s.global[:]) {
		return fmt.Errorf("key id %s: %w", k.KeyID, ErrForged)
	}
	return nil
}

// decodeLine decodes b, one line of padded standard base64. Go's decoder
// skips line breaks, which the updater's refuses: they are refused here.
func decodeLine(b []byte) ([]byte, error) {
	if bytes.ContainsAny(b, "\r\n") {
		return nil, errors.New("base64 over several lines, want one")
	}
	out, err := base64.StdEncoding.Strict().AppendDecode(nil, b)
	if err != nil {
		return nil, fmt.Errorf("not padded standard base64: %w", err)
	}
	return out, nil
}

// decodeBytes decodes line, the base64 of exactly n bytes.
func decodeBytes(line string, n int) ([]byte, error) {
	b, err := decodeLine([]byte(line))
	if err != nil {
		return nil, err
	}
	if len(b) != n {
		return nil, fmt.Errorf("%d bytes, want %d", len(b), n)
	}
	return b, nil
}

// boxLines splits b, UTF-8 text, into its n lines, each ended by "\n" but
// the last, whose "\n" is optional.
func boxLines(b []byte, n int) ([]string, error) {
	if !utf8.Valid(b) {
		return nil, errors.New("not UTF-8")
	}
	lines := strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
	if len(lines) != n {
		return nil, fmt.Errorf("%d lines, want %d", len(lines), n)
	}
	return lines, nil
}

// comment returns line without prefix, which it must start with; the rest
// must hold no control character but tab.
func comment(line, prefix string) (string, error) {
	c, ok := strings.CutPrefix(line, prefix)
	if !ok {
		return "", fmt.Errorf("does not start with %q", prefix)
	}
	if i := strings.IndexFunc(c, func(r rune) bool { return r != '\t' && (r < ' ' || r == 0x7f || 0x80 <= r && r < 0xa0) }); i >= 0 {
		return "", fmt.Errorf("control character %U in the comment", []rune(c[i:])[0])
	}
	return c, nil
}
