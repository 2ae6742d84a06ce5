package snapshotfmt

import (
	"encoding/binary"
	"hash/crc32"

	"github.com/ginformer/ginformer/internal/parallel"
)

// chunk is where a chunk lies in a snapshot and which objects it holds.
type chunk struct {
	off     int // of its head
	objects int
	first   int // index of its first object
}

// Decode checks that data is a whole snapshot of identity and decodes it:
// it calls alloc(n) once, with the number of objects, before any object is
// decoded, then decodeObj(i, b) for every object i in [0, n) with its bytes
// b (a subslice of data), from up to workers goroutines at once (a chunk
// each), so decodeObj must be safe for concurrent calls with different i.
// It returns the snapshot's version.
//
// Decode fails whole: when it returns an error the objects decoded so far
// are no snapshot. Every chunk's placement, the counts and the trailer are
// checked before alloc is called; each chunk's checksum before its objects
// are decoded.
//
// Possible errors: [ErrCorrupt], [ErrLayoutVersion] (wrapped),
// [*IdentityError] (wraps [ErrIdentity]), or the first error of decodeObj,
// as it returned it.
func Decode(data []byte, identity string, workers int, alloc func(n int), decodeObj func(i int, b []byte) error) (version string, err error) {
	h, nchunks, off, err := readHeader(data)
	if err != nil {
		return "", err
	}
	if h.Identity != identity {
		return "", &IdentityError{Got: h.Identity, Want: identity}
	}
	chunks, err := walkChunks(data, off, int(nchunks), h.Objects)
	if err != nil {
		return "", err
	}
	alloc(h.Objects)
	err = parallel.For(len(chunks), workers, func(i int) error { return decodeChunk(data, chunks[i], decodeObj) })
	if err != nil {
		return "", err
	}
	return h.Version, nil
}

// walkChunks walks the heads of the n chunks from off: every chunk present,
// the object count right, the trailer right after the last one, the
// trailer's checksum right. It returns the chunks.
func walkChunks(data []byte, off, n, objects int) ([]chunk, error) {
	chunks := make([]chunk, n)
	crcs := make([]byte, 0, 4*(n+1))
	crcs = append(crcs, data[off-4:off]...) // the header's
	seen := 0
	for i := range chunks {
		if len(data)-off < chunkHead {
			return nil, corrupt("chunk %d of %d missing", i+1, n)
		}
		size := int(binary.LittleEndian.Uint32(data[off:]))
		m := int(binary.LittleEndian.Uint32(data[off+4:]))
		if size > len(data)-off-chunkHead || m > ChunkObjects {
			return nil, corrupt("chunk %d of %d cut short", i+1, n)
		}
		crcs = append(crcs, data[off+8:off+12]...)
		chunks[i] = chunk{off: off, objects: m, first: seen}
		seen += m
		off += chunkHead + size
	}
	if seen != objects {
		return nil, corrupt("%d objects in chunks, %d in the header", seen, objects)
	}
	if len(data)-off != trailerLen || string(data[off:off+len(endMagic)]) != endMagic {
		return nil, corrupt("no end marker after the last chunk")
	}
	if crc32.Checksum(crcs, castagnoli) != binary.LittleEndian.Uint32(data[off+len(endMagic):]) {
		return nil, corrupt("end checksum")
	}
	return chunks, nil
}

// decodeChunk checks chunk c's payload and decodes its objects.
func decodeChunk(data []byte, c chunk, decodeObj func(i int, b []byte) error) error {
	size := int(binary.LittleEndian.Uint32(data[c.off:]))
	payload := data[c.off+chunkHead : c.off+chunkHead+size]
	if crc32.Checksum(payload, castagnoli) != binary.LittleEndian.Uint32(data[c.off+8:]) {
		return corrupt("chunk checksum")
	}
	for j := range c.objects {
		if len(payload) < 4 {
			return corrupt("object length")
		}
		l := uint64(binary.LittleEndian.Uint32(payload))
		if l > uint64(len(payload)-4) {
			return corrupt("object length")
		}
		if err := decodeObj(c.first+j, payload[4:4+l]); err != nil {
			return err
		}
		payload = payload[4+l:]
	}
	if len(payload) != 0 {
		return corrupt("bytes after a chunk's last object")
	}
	return nil
}
