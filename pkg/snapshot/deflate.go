package snapshot

import (
	"bytes"
	"compress/flate"
	"encoding/binary"
)

// piece is a run of an answer's bytes with, unless the chunk that holds them
// compresses them anew, their raw DEFLATE encoding as non-final blocks that
// end on a byte boundary, so that pieces encoded apart concatenate into one
// valid stream in any order (RFC 1951). A piece's slices may point into a
// chunk or a Doc that holds them: never modify them.
type piece struct {
	plain []byte
	flat  []byte
}

// maxStored is the most a stored block holds (RFC 1951, 3.2.4).
const maxStored = 1<<16 - 1

// storedPiece returns plain as stored (uncompressed) blocks: no compression
// work at all, for the few bytes that change with every fetch.
func storedPiece(plain []byte) piece {
	flat := make([]byte, 0, len(plain)+5*(len(plain)/maxStored+1))
	return piece{plain: plain, flat: appendStored(flat, plain)}
}

// appendStored appends b to dst as stored blocks, none final. At a byte
// boundary a block's header (BFINAL 0, BTYPE 00 and the padding) is one zero
// byte, then LEN and its complement.
func appendStored(dst, b []byte) []byte {
	for {
		n := min(len(b), maxStored)
		dst = append(dst, 0)
		dst = binary.LittleEndian.AppendUint16(dst, uint16(n))
		dst = binary.LittleEndian.AppendUint16(dst, ^uint16(n))
		dst = append(dst, b[:n]...)
		b = b[n:]
		if len(b) == 0 {
			return dst
		}
	}
}

// deflater compresses pieces with one reused flate.Writer (a writer at the
// default level holds about a megabyte). It is not safe for concurrent use.
type deflater struct {
	w   *flate.Writer
	buf bytes.Buffer
}

func newDeflater() *deflater {
	// NewWriter fails only on an invalid level.
	w, _ := flate.NewWriter(nil, flate.DefaultCompression)
	return &deflater{w: w}
}

// piece returns plain compressed on its own. Flush, unlike Close, ends with
// an empty stored block (a sync marker) and no final block: the stream stays
// open and byte-aligned for the next piece.
func (d *deflater) piece(plain []byte) piece {
	d.buf.Reset()
	d.w.Reset(&d.buf)
	// Writing to a bytes.Buffer cannot fail.
	_, _ = d.w.Write(plain)
	_ = d.w.Flush()
	return piece{plain: plain, flat: bytes.Clone(d.buf.Bytes())}
}

// gzipHeader is the header compress/gzip writes at the default level with no
// name, comment or time: magic, CM 8 (deflate), no flags, MTIME 0, XFL 0, OS
// unknown.
var gzipHeader = [10]byte{0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 0xff}

// gzipTrailerLen is how many bytes appendGzipTrailer appends.
const gzipTrailerLen = 10

// appendGzipTrailer ends a gzip member whose deflate stream so far is
// byte-aligned and not final: an empty final block with fixed codes (03 00),
// then the CRC-32 and the length mod 2^32 of the uncompressed data (RFC 1952).
func appendGzipTrailer(dst []byte, crc uint32, size int) []byte {
	dst = append(dst, 0x03, 0x00)
	dst = binary.LittleEndian.AppendUint32(dst, crc)
	return binary.LittleEndian.AppendUint32(dst, uint32(size))
}

// crcPoly is the IEEE polynomial, reflected, as hash/crc32 uses it.
const crcPoly = 0xedb88320

// x2n[k] is x^(2^k) modulo the polynomial, reflected; a package value only
// because it never changes.
var x2n = x2nTable()

func x2nTable() [32]uint32 {
	var t [32]uint32
	p := uint32(1) << 30 // x^1
	for k := range t {
		t[k] = p
		p = multModP(p, p)
	}
	return t
}

// multModP returns a(x)·b(x) modulo the CRC polynomial, in the reflected
// bit order where the high bit is x^0.
func multModP(a, b uint32) uint32 {
	var p uint32
	for m := uint32(1) << 31; m != 0; m >>= 1 {
		if a&m != 0 {
			p ^= b
		}
		if b&1 != 0 {
			b = b>>1 ^ crcPoly
		} else {
			b >>= 1
		}
	}
	return p
}

// crcShift returns x^(8n) modulo the polynomial: the operator that moves a
// CRC past n more bytes, in about log2(n) multiplications.
func crcShift(n int) uint32 {
	p := uint32(1) << 31 // x^0
	for k := 3; n != 0; n, k = n>>1, k+1 {
		if n&1 != 0 {
			p = multModP(x2n[k&31], p)
		}
	}
	return p
}

// crcCombine returns the CRC-32 (IEEE) of a‖b from crcA of a, crcB of b and
// shiftB, crcShift of b's length, without reading either: zlib's
// crc32_combine, which the standard library lacks.
func crcCombine(crcA, crcB, shiftB uint32) uint32 {
	return multModP(shiftB, crcA) ^ crcB
}
