// Package snapshotfmt is the byte layout of an informer's snapshot file:
// magic numbers, header, chunks, checksums and trailer, written and checked
// with the chunks encoded and decoded on several goroutines. It knows
// nothing of the objects: the caller encodes and decodes each one, by its
// index, through the funcs it passes to [Encode] and [Decode].
//
// The layout (all integers little-endian unless uvarint):
//
//	"GINFSNAP"  u32 layout version  u32 header length  header  u32 CRC-32C(header)
//	header:     uvarint-prefixed identity, uvarint-prefixed version,
//	            uvarint object count, uvarint chunk count
//	chunk ×N:   u32 payload length  u32 objects  u32 CRC-32C(payload)  payload
//	payload:    per object, a u32 length and the caller's bytes
//	"GINFEND!"  u32 CRC-32C of the header's CRC and every chunk's CRC
//
// Every object lives in one chunk of at most [ChunkObjects], and chunks are
// checked and decoded independently, on every core. A file is accepted only
// whole: the magic numbers, the layout version ([Version]), every checksum,
// the counts, a version that is not empty and the end at exactly the
// trailer's last byte; the header's identity must equal the reader's.
// Anything else refuses the file ([ErrCorrupt], [ErrLayoutVersion],
// [ErrIdentity]).
package snapshotfmt

import (
	"encoding/binary"
	"hash/crc32"
)

// Version is the version of the layout, written in every file's head; a
// file of another version is refused ([ErrLayoutVersion]).
const Version = 2

// ChunkObjects is the number of objects per chunk (the last may hold
// fewer): small enough to spread a few thousand objects over the cores,
// large enough that the 12 bytes of a chunk's head do not count.
const ChunkObjects = 256

const (
	magic    = "GINFSNAP"
	endMagic = "GINFEND!"
	// headLen is the head's size around the header: magic, layout version,
	// header length and the header's checksum.
	headLen = len(magic) + 12
	// chunkHead is the size of a chunk's head: payload length, objects and
	// the payload's checksum.
	chunkHead = 12
	// trailerLen is the trailer's size: the end magic and its checksum.
	trailerLen = len(endMagic) + 4
	// maxHeader bounds the header a reader accepts.
	maxHeader = 1 << 20
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// Header is what a snapshot says of itself.
type Header struct {
	// Identity is what the snapshot is of, as its writer named it.
	Identity string
	// Version is the version of the state it holds; never empty.
	Version string
	// Objects is the number of objects it holds.
	Objects int
}

// ReadHeader checks data's head (magic, layout version, header checksum, a
// version that is not empty) and returns its header. It does not check the
// chunks: [Decode] does.
//
// Possible errors: [ErrCorrupt], [ErrLayoutVersion] (wrapped).
func ReadHeader(data []byte) (Header, error) {
	h, _, _, err := readHeader(data)
	return h, err
}

// readHeader is ReadHeader, returning also the chunk count and the offset
// of the first chunk.
func readHeader(data []byte) (h Header, chunks uint64, off int, err error) {
	if len(data) < headLen || string(data[:len(magic)]) != magic {
		return h, 0, 0, corrupt("no snapshot header")
	}
	if v := binary.LittleEndian.Uint32(data[8:]); v != Version {
		return h, 0, 0, &layoutVersionError{got: v}
	}
	n := binary.LittleEndian.Uint32(data[12:])
	if n > maxHeader || int(n) > len(data)-headLen {
		return h, 0, 0, corrupt("header length %d", n)
	}
	hdr := data[16 : 16+n]
	if crc32.Checksum(hdr, castagnoli) != binary.LittleEndian.Uint32(data[16+n:]) {
		return h, 0, 0, corrupt("header checksum")
	}
	var ok bool
	if h.Identity, hdr, ok = readString(hdr); !ok {
		return h, 0, 0, corrupt("header")
	}
	if h.Version, hdr, ok = readString(hdr); !ok {
		return h, 0, 0, corrupt("header")
	}
	objects, k := binary.Uvarint(hdr)
	if k <= 0 {
		return h, 0, 0, corrupt("header")
	}
	if chunks, k = binary.Uvarint(hdr[k:]); k <= 0 {
		return h, 0, 0, corrupt("header")
	}
	if chunks > uint64(len(data))/chunkHead || objects > chunks*ChunkObjects {
		return h, 0, 0, corrupt("counts")
	}
	if h.Version == "" {
		return h, 0, 0, corrupt("no version")
	}
	h.Objects = int(objects)
	return h, chunks, headLen + int(n), nil
}

// appendString appends s to b, its length (uvarint) first.
func appendString(b []byte, s string) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

// readString returns the string appendString put at the start of b and
// what follows it; false if b holds none.
func readString(b []byte) (string, []byte, bool) {
	n, k := binary.Uvarint(b)
	if k <= 0 || n > uint64(len(b)-k) {
		return "", nil, false
	}
	return string(b[k : k+int(n)]), b[k+int(n):], true
}
