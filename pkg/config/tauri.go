package config

import (
	"fmt"

	"github.com/storytold/craft-releases/pkg/minisign"
	"github.com/storytold/craft-releases/pkg/release"
)

// ParsePublicKeys reads CRAFT_APPS_RELEASE_TAURI_PUBKEYS: "key=pubkey"
// entries separated by commas, each part trimmed, the key compared in
// lowercase, the pubkey tauri.conf.json's (minisign.ParsePublicKey). A blank
// s gives none. A malformed entry, a key that is not one of apps or is
// listed twice, and a key that does not parse are errors that name the key
// or quote the entry's key. The map is by app key; an app without a key
// keeps any well-formed signature (docs/github.md, "Companion assets").
func ParsePublicKeys(apps []release.App, s string) (map[string]minisign.PublicKey, error) {
	entries, err := appEntries(apps, s, "key=pubkey")
	if err != nil || len(entries) == 0 {
		return nil, err
	}
	keys := make(map[string]minisign.PublicKey, len(entries))
	for _, e := range entries {
		k, err := minisign.ParsePublicKey(e.value)
		if err != nil {
			return nil, fmt.Errorf("key %q: %w", e.given, err)
		}
		keys[apps[e.app].Key] = k
	}
	return keys, nil
}
