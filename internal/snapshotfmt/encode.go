package snapshotfmt

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"io"

	"github.com/ginformer/ginformer/internal/parallel"
)

// Stats describes a snapshot written.
type Stats struct {
	// Objects is the number of objects written.
	Objects int
	// Bytes is the number of bytes written to the writer, in full or in
	// part (up to a failed write).
	Bytes int64
}

// Encode writes a snapshot of n objects, the state of identity at version,
// to w. appendObj appends the encoding of object i to dst and returns the
// extended slice; it is called once per object, for each chunk in order of
// i, from up to workers goroutines at once (each on a chunk of its own; 1:
// the caller's goroutine only), so it must be safe for concurrent calls
// with different i. Encode writes the head, then each chunk with one Write
// (in order), then the trailer.
//
// Possible errors: the first error of appendObj (wrapped, "encode object")
// or of w, after which nothing more is written.
func Encode(w io.Writer, identity, version string, n, workers int, appendObj func(dst []byte, i int) ([]byte, error)) (Stats, error) {
	chunks := (n + ChunkObjects - 1) / ChunkObjects
	// The head in one buffer, the header in place: its length is filled in
	// once it is known.
	head := make([]byte, 16, headLen+len(identity)+len(version)+4*binary.MaxVarintLen64)
	copy(head, magic)
	binary.LittleEndian.PutUint32(head[8:], Version)
	head = appendString(head, identity)
	head = appendString(head, version)
	head = binary.AppendUvarint(head, uint64(n))
	head = binary.AppendUvarint(head, uint64(chunks))
	hdr := head[16:]
	binary.LittleEndian.PutUint32(head[12:], uint32(len(hdr)))
	hcrc := crc32.Checksum(hdr, castagnoli)
	head = binary.LittleEndian.AppendUint32(head, hcrc)
	st := Stats{Objects: n}
	written, err := w.Write(head)
	st.Bytes += int64(written)
	if err != nil {
		return st, err
	}
	crcs := make([]byte, 0, 4*(chunks+1))
	crcs = binary.LittleEndian.AppendUint32(crcs, hcrc)
	workers = max(1, min(workers, chunks))
	// Waves of `workers` chunks: encoded at once, written in order.
	bufs := make([][]byte, workers)
	for first := 0; first < chunks; first += workers {
		wave := min(workers, chunks-first)
		err := parallel.For(wave, wave, func(j int) error {
			lo := (first + j) * ChunkObjects
			var err error
			bufs[j], err = encodeChunk(bufs[j][:0], lo, min(lo+ChunkObjects, n), appendObj)
			return err
		})
		if err != nil {
			return st, err
		}
		for _, buf := range bufs[:wave] {
			crcs = append(crcs, buf[8:12]...)
			written, err := w.Write(buf)
			st.Bytes += int64(written)
			if err != nil {
				return st, err
			}
		}
	}
	tail := append([]byte(endMagic), 0, 0, 0, 0)
	binary.LittleEndian.PutUint32(tail[len(endMagic):], crc32.Checksum(crcs, castagnoli))
	written, err = w.Write(tail)
	st.Bytes += int64(written)
	return st, err
}

// encodeChunk appends one chunk, of objects [lo, hi) (its head and
// payload), to dst.
func encodeChunk(dst []byte, lo, hi int, appendObj func(dst []byte, i int) ([]byte, error)) ([]byte, error) {
	dst = append(dst, make([]byte, chunkHead)...)
	for i := lo; i < hi; i++ {
		at := len(dst)
		var err error
		if dst, err = appendObj(append(dst, 0, 0, 0, 0), i); err != nil {
			return dst, fmt.Errorf("encode object: %w", err)
		}
		binary.LittleEndian.PutUint32(dst[at:], uint32(len(dst)-at-4))
	}
	payload := dst[chunkHead:]
	binary.LittleEndian.PutUint32(dst[0:], uint32(len(payload)))
	binary.LittleEndian.PutUint32(dst[4:], uint32(hi-lo))
	binary.LittleEndian.PutUint32(dst[8:], crc32.Checksum(payload, castagnoli))
	return dst, nil
}
