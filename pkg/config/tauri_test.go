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
			got, _, err := bin.load(t, env(v, " PhotoCraft = "+k1.PublicKey()+" ,, pdfcraft="+k2.PublicKey()))
			if err != nil {
				t.Fatal(err)
			}
			if len(got.PublicKeys) != 2 || got.PublicKeys["photocraft"] != pub(k1) || got.PublicKeys["pdfcraft"] != pub(k2) {
				t.Errorf("keys: got %+v, want photocraft's and pdfcraft's", got.PublicKeys)
			}
		})
		t.Run(bin.name+"/blank", func(t *testing.T) {
			if got, _, err := bin.load(t, env(v, " ")); err != nil || got.PublicKeys != nil {
				t.Errorf("got %v, %v; want no keys", got.PublicKeys, err)
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
				if _, _, err := bin.load(t, env(v, tc.value)); err == nil || !strings.Contains(err.Error(), v+": "+tc.want) {
					t.Errorf("error: got %v, want one containing %q", err, v+": "+tc.want)
				}
			})
		}
	}
}
