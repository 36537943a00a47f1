package store

import (
	"errors"
	"testing"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"
)

// TestRefusalLogIsQuoted: the writer and the reason of a refused hash come
// from Redis; the refusal's log line shows them escaped, never raw.
func TestRefusalLogIsQuoted(t *testing.T) {
	core, logs := observer.New(zapcore.WarnLevel)
	r := NewRefusals(zap.New(core), nil)
	r.Note("photocraft", map[string]string{fieldBy: "EVIL\u202eDENWO\x1b[2J"}, errors.New("release: name \u0085\u202eexe.pdf"))
	entries := logs.TakeAll()
	if len(entries) != 1 {
		t.Fatalf("logged %d lines, want 1", len(entries))
	}
	got := entries[0].ContextMap()
	if want := `"EVIL\u202eDENWO\x1b[2J"`; got["by"] != want {
		t.Errorf("by = %v, want %s", got["by"], want)
	}
	if want := `"release: name \u0085\u202eexe.pdf"`; got["err"] != want {
		t.Errorf("err = %v, want %s", got["err"], want)
	}
}
