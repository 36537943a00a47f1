package testkit_test

import (
	"github.com/storytold/craft-releases/pkg/minisign"
	"github.com/storytold/craft-releases/test/testkit"
	"testing"
)

func TestMinisignKeySignsWhatMinisignChecks(t *testing.T) {
	k := testkit.NewMinisignKey(t)
	pk, err := minisign.ParsePublicKey(k.PublicKey())
	if err != nil {
		t.Fatal(err)
	}
	s, err := minisign.ParseSignature([]byte(k.Sign("a", []byte("x"))))
	if err != nil {
		t.Fatal(err)
	}
	if err := pk.Check(s); err != nil {
		t.Fatal(err)
	}
}
