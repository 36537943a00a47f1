package testkit

import (
	"crypto/ed25519"
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"testing"
)

// MinisignKey is a minisign key made in memory for tests, writing the files
// Tauri's signer writes (without the minisign binary).
type MinisignKey struct {
	id   [8]byte
	priv ed25519.PrivateKey
	pub  ed25519.PublicKey
}

// NewMinisignKey returns a fresh key.
func NewMinisignKey(t testing.TB) MinisignKey {
	t.Helper()
	k, err := GenerateMinisignKey()
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// GenerateMinisignKey returns a fresh key, for a program (task dev).
func GenerateMinisignKey() (MinisignKey, error) {
	pub, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return MinisignKey{}, fmt.Errorf("generate key: %w", err)
	}
	var k MinisignKey
	if _, err := rand.Read(k.id[:]); err != nil {
		return MinisignKey{}, fmt.Errorf("key id: %w", err)
	}
	k.priv, k.pub = priv, pub
	return k, nil
}

// PublicKey returns the key as tauri.conf.json's pubkey holds it: the
// base64 of the minisign public-key file.
func (k MinisignKey) PublicKey() string {
	line := base64.StdEncoding.EncodeToString(append(append([]byte("Ed"), k.id[:]...), k.pub...))
	file := fmt.Sprintf("untrusted comment: minisign public key %X\n%s\n", k.id, line)
	return base64.StdEncoding.EncodeToString([]byte(file))
}

// Sign returns the text of the .sig file of the bytes data named name, as
// Tauri's signer writes it: the base64 of a minisign signature box (the
// legacy algorithm "Ed", which signs the bytes themselves).
func (k MinisignKey) Sign(name string, data []byte) string {
	sig := ed25519.Sign(k.priv, data)
	trusted := "timestamp:1700000000\tfile:" + name
	global := ed25519.Sign(k.priv, append(append([]byte{}, sig...), trusted...))
	box := "untrusted comment: signature from tauri secret key\n" +
		base64.StdEncoding.EncodeToString(append(append([]byte("Ed"), k.id[:]...), sig...)) + "\n" +
		"trusted comment: " + trusted + "\n" +
		base64.StdEncoding.EncodeToString(global) + "\n"
	return base64.StdEncoding.EncodeToString([]byte(box))
}
