package config

import (
	"fmt"
	"slices"
	"strings"

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
	if strings.TrimSpace(s) == "" {
		return nil, nil
	}
	keys := map[string]minisign.PublicKey{}
	for entry := range strings.SplitSeq(s, ",") {
		entry = strings.TrimSpace(entry)
		if entry == "" {
			continue
		}
		key, b64, ok := strings.Cut(entry, "=")
		if !ok {
			return nil, fmt.Errorf("an entry without '=': want key=pubkey")
		}
		key, b64 = strings.ToLower(strings.TrimSpace(key)), strings.TrimSpace(b64)
		switch {
		case !release.SafeName(key) || !slices.ContainsFunc(apps, func(a release.App) bool { return a.Key == key }):
			return nil, fmt.Errorf("key %q is not one of CRAFT_APPS_RELEASE_APPS's", key)
		case keys[key] != (minisign.PublicKey{}):
			return nil, fmt.Errorf("key %q is listed twice", key)
		}
		k, err := minisign.ParsePublicKey(b64)
		if err != nil {
			return nil, fmt.Errorf("key %q: %w", key, err)
		}
		keys[key] = k
	}
	return keys, nil
}
