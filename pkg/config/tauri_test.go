package config_test

import (
	"strings"
	"testing"

	"github.com/storytold/craft-releases/pkg/minisign"
	"github.com/storytold/craft-releases/test/testkit"
)

// TestTauriPublicKeys checks CRAFT_APPS_RELEASE_TAURI_PUBKEYS in both
// binaries: good keys are read by app, and a bad entry stops start-up
// naming the variable.
func TestTauriPublicKeys(t *testing.T) {
	k1, k2 := testkit.NewMinisignKey(t), testkit.NewMinisignKey(t)
	pub := func(k testkit.MinisignKey) minisign.PublicKey {
		p, err := minisign.ParsePublicKey(k.PublicKey())
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	const v = "CRAFT_APPS_RELEASE_TAURI_PUBKEYS"
	for _, bin := range binaries {
		t.Run(bin.name+"/good", func(t *testing.T) {
			got := bin.load(map[string]string{v: " PhotoCraft = " + k1.PublicKey() + " ,, pdfcraft=" + k2.PublicKey()})
			if got.err != nil {
				t.Fatal(got.err)
			}
			if len(got.shared.PublicKeys) != 2 || got.shared.PublicKeys["photocraft"] != pub(k1) || got.shared.PublicKeys["pdfcraft"] != pub(k2) {
				t.Errorf("keys: got %+v, want photocraft's and pdfcraft's", got.shared.PublicKeys)
			}
		})
		t.Run(bin.name+"/blank", func(t *testing.T) {
			if got := bin.load(map[string]string{v: " "}); got.err != nil || got.shared.PublicKeys != nil {
				t.Errorf("got %v, %v; want no keys", got.shared.PublicKeys, got.err)
			}
		})
		for _, tc := range []struct{ name, value, want string }{
			{"unknown app", "nosuchapp=" + k1.PublicKey(), `key "nosuchapp" is not one of`},
			{"twice", "photocraft=" + k1.PublicKey() + ",photocraft=" + k2.PublicKey(), `key "photocraft" is listed twice`},
			{"no =", "photocraft", `entry "photocraft": want key=pubkey`},
			{"bad key", "photocraft=aGVsbG8=", `key "photocraft": minisign public key`},
			{"a signature, not a key", "photocraft=" + k1.Sign("x", []byte("x")), `key "photocraft": minisign public key`},
		} {
			t.Run(bin.name+"/"+tc.name, func(t *testing.T) {
				got := bin.load(map[string]string{v: tc.value})
				if got.err == nil || !strings.Contains(got.err.Error(), v+": "+tc.want) {
					t.Errorf("error: got %v, want one containing %q", got.err, v+": "+tc.want)
				}
			})
		}
	}
}
