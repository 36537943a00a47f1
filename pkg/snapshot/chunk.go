package snapshot

import (
	"crypto/sha256"
	"encoding/hex"
	"hash/crc32"
	"strconv"
)

// appsPerChunk is how many apps one chunk holds: 13 apps are one chunk,
// and a fetch at 1,000 apps copies and hashes some 100 KB, not 6 MB.
const appsPerChunk = 16

// chunk is a run of consecutive pieces of an answer, joined: its bytes, its
// gzip bytes (the pieces' deflate blocks, after the gzip header in an
// answer's first chunk) and what the answer's trailer and validators need.
type chunk struct {
	plain, gz  []byte
	crc        uint32   // of plain
	shift      uint32   // crcShift(len(plain)), which moves a CRC past plain
	sum, gzSum [32]byte // SHA-256 of plain and of gz
}

// newChunk joins pieces into a chunk, after the gzip header when first, and
// points each piece into it, so that the chunk holds the only copy the
// pieces keep. Its gzip bytes are the pieces' deflate blocks, joined.
func newChunk(pieces []*piece, first bool) *chunk {
	np, nf := 0, 0
	for _, p := range pieces {
		np, nf = np+len(p.plain), nf+len(p.flat)
	}
	c := &chunk{plain: make([]byte, 0, np), gz: make([]byte, 0, len(gzipHeader)+nf)}
	if first {
		c.gz = append(c.gz, gzipHeader[:]...)
	}
	for _, p := range pieces {
		i, j := len(c.plain), len(c.gz)
		c.plain, c.gz = append(c.plain, p.plain...), append(c.gz, p.flat...)
		p.plain, p.flat = c.plain[i:len(c.plain):len(c.plain)], c.gz[j:len(c.gz):len(c.gz)]
	}
	return c.sealed()
}

// newCompressedChunk joins pieces into a chunk as newChunk does, but
// compresses its bytes anew with d rather than joining the pieces' blocks:
// matches across apps make it a half smaller, for a millisecond or two of
// CPU a rebuild. It reads only the pieces' bytes: their deflate blocks, if
// any, are left as they are.
func newCompressedChunk(pieces []*piece, first bool, d *deflater) *chunk {
	np := 0
	for _, p := range pieces {
		np += len(p.plain)
	}
	c := &chunk{plain: make([]byte, 0, np)}
	for _, p := range pieces {
		i := len(c.plain)
		c.plain = append(c.plain, p.plain...)
		p.plain = c.plain[i:len(c.plain):len(c.plain)]
	}
	flat := d.piece(c.plain).flat
	if first {
		flat = append(append(make([]byte, 0, len(gzipHeader)+len(flat)), gzipHeader[:]...), flat...)
	}
	c.gz = flat
	return c.sealed()
}

// sealed fills in c's checksums and returns c.
func (c *chunk) sealed() *chunk {
	c.crc, c.shift = crc32.ChecksumIEEE(c.plain), crcShift(len(c.plain))
	c.sum, c.gzSum = sha256.Sum256(c.plain), sha256.Sum256(c.gz)
	return c
}

// assemble returns the answer made of chunks, in order, served with
// Cache-Control cacheControl. Its cost is a few operations per chunk and a
// copy of the last chunk's gzip bytes, to which the gzip trailer is added
// (with several chunks the last holds only what follows the apps); the
// chunks are joined into one slice when the answer is first served.
func assemble(chunks []*chunk, cacheControl string) Doc {
	body, gz := make([][]byte, len(chunks)), make([][]byte, len(chunks))
	sums, gzSums := make([][32]byte, len(chunks)), make([][32]byte, len(chunks))
	var crc uint32
	size := 0
	for i, c := range chunks {
		body[i], gz[i] = c.plain, c.gz
		sums[i], gzSums[i] = c.sum, c.gzSum
		crc = crcCombine(crc, c.crc, c.shift)
		size += len(c.plain)
	}
	last := len(chunks) - 1
	tail := make([]byte, 0, len(gz[last])+gzipTrailerLen)
	gz[last] = appendGzipTrailer(append(tail, gz[last]...), crc, size)
	gzSums[last] = sha256.Sum256(gz[last])
	return newDoc(join(body...), join(gz...), tag(sums), tag(gzSums), cacheControl)
}

// newDoc returns the Doc of body and its gzip copy gz, with their ETags and
// header values.
func newDoc(body, gz *joined, etag, gzipETag, cacheControl string) Doc {
	d := Doc{body: body, gzip: gz, ETag: etag, GzipETag: gzipETag, CacheControl: cacheControl}
	d.Values = HeaderValues{
		CacheControl:      []string{cacheControl},
		ETag:              []string{etag},
		ContentLength:     []string{strconv.Itoa(body.len())},
		GzipETag:          []string{gzipETag},
		GzipContentLength: []string{strconv.Itoa(gz.len())},
	}
	return d
}

// tag is the strong, quoted entity tag of the chunks whose SHA-256 sums
// are sums: 128 bits of the one sum, or of the SHA-256 of all of them. Both
// change with any byte, and the same bytes cut the same way (the cut depends
// only on the configured apps) give the same tag on every pod.
func tag(sums [][32]byte) string {
	sum := sums[0]
	if len(sums) > 1 {
		h := sha256.New()
		for _, s := range sums {
			h.Write(s[:])
		}
		h.Sum(sum[:0])
	}
	var t [2 + 2*16]byte
	t[0], t[len(t)-1] = '"', '"'
	hex.Encode(t[1:len(t)-1], sum[:16])
	return string(t[:])
}
