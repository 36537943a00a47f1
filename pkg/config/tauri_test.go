package config_test

import (
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
		must(t, err)
		return p
	}
	const v = "CRAFT_APPS_RELEASE_TAURI_PUBKEYS"
	tests := []loadCase[common]{
		{"good", env(v, " PhotoCraft = "+k1.PublicKey()+" ,, pdfcraft="+k2.PublicKey()),
			func(c *common) {
				c.PublicKeys = map[string]minisign.PublicKey{"photocraft": pub(k1), "pdfcraft": pub(k2)}
			}, nil, nil},
		{"blank", env(v, " "), nil, nil, nil},
		{"unknown app", env(v, "nosuchapp="+k1.PublicKey()), nil, nil, []string{v + `: key "nosuchapp" is not one of`}},
		{"twice", env(v, "photocraft="+k1.PublicKey()+",photocraft="+k2.PublicKey()), nil, nil, []string{v + `: key "photocraft" is listed twice`}},
		{"no =", env(v, "photocraft"), nil, nil, []string{v + `: entry "photocraft": want key=pubkey`}},
		{"bad key", env(v, "photocraft=aGVsbG8="), nil, nil, []string{v + `: key "photocraft": minisign public key`}},
		{"a signature, not a key", env(v, "photocraft="+k1.Sign("x", []byte("x"))), nil, nil, []string{v + `: key "photocraft": minisign public key`}},
	}
	for _, bin := range binaries {
		t.Run(bin.name, func(t *testing.T) { runLoads(t, tests, bin.def, bin.load) })
	}
}
