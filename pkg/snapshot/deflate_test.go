package snapshot

import (
	"bytes"
	"compress/flate"
	"hash/crc32"
	"io"
	"math/rand/v2"
	"testing"
)

func TestCRCCombine(t *testing.T) {
	t.Parallel()
	rnd := rand.New(rand.NewPCG(3, 4))
	for _, n := range [][2]int{{0, 0}, {0, 5}, {5, 0}, {1, 1}, {100, 7}, {3, 4096}, {70_000, 1 << 17}} {
		a, b := make([]byte, n[0]), make([]byte, n[1])
		for i := range a {
			a[i] = byte(rnd.Uint32())
		}
		for i := range b {
			b[i] = byte(rnd.Uint32())
		}
		got := crcCombine(crc32.ChecksumIEEE(a), crc32.ChecksumIEEE(b), crcShift(len(b)))
		if want := crc32.ChecksumIEEE(append(a, b...)); got != want {
			t.Errorf("crcCombine of %d and %d bytes: got %08x, want %08x", n[0], n[1], got, want)
		}
	}
}

// TestPiecesConcatenate checks that pieces encoded apart, stored or
// compressed, in any order, make one DEFLATE stream of their bytes.
func TestPiecesConcatenate(t *testing.T) {
	t.Parallel()
	d := newDeflater()
	big := bytes.Repeat([]byte("a stored piece longer than one stored block "), 2000)
	pieces := []piece{
		d.piece([]byte(`{"name":"PhotoCraft","repo":"storytold/photocraft",`)),
		storedPiece([]byte(`"app_last_fetched":null}`)),
		storedPiece(nil),
		d.piece(nil),
		storedPiece(big),
		d.piece(big),
	}
	var flat, want []byte
	for _, p := range pieces {
		flat, want = append(flat, p.flat...), append(want, p.plain...)
	}
	flat = append(flat, 0x03, 0x00) // the final empty block of appendGzipTrailer
	got, err := io.ReadAll(flate.NewReader(bytes.NewReader(flat)))
	if err != nil {
		t.Fatalf("inflate: %v", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("inflated %d bytes, want the %d bytes of the pieces", len(got), len(want))
	}
}
