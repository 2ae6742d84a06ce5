package informer

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"io"
	"runtime"
	"strings"

	"github.com/ginformer/ginformer/internal/parallel"
	"github.com/ginformer/ginformer/internal/safecall"
)

// The snapshot layout (all integers little-endian unless uvarint):
//
//	"GINFSNAP"  u32 layout version  u32 header length  header  u32 CRC-32C(header)
//	header:     uvarint-prefixed identity, uvarint-prefixed version,
//	            uvarint object count, uvarint chunk count
//	chunk ×N:   u32 payload length  u32 objects  u32 CRC-32C(payload)  payload
//	payload:    per object, a u32 length and the codec's bytes
//	"GINFEND!"  u32 CRC-32C of the header's CRC and every chunk's CRC
//
// Every object lives in one chunk, and chunks are checked and decoded
// independently, on every core. A file is accepted only whole: the magic
// numbers, the layout version, every checksum, the counts and the end at
// exactly the trailer's last byte; the header's identity must equal the
// informer's. Anything else refuses the file (ErrSnapshot) and the informer
// starts cold.

const (
	snapshotMagic    = "GINFSNAP"
	snapshotEndMagic = "GINFEND!"
	// snapshotChunkObjects is the number of objects per chunk: small enough
	// to spread a few thousand objects over the cores, large enough that the
	// 12 bytes of a chunk's head do not count.
	snapshotChunkObjects = 256
	// maxSnapshotHeader bounds the header a loader accepts.
	maxSnapshotHeader = 1 << 20
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// snapshotStats describes a snapshot written or loaded.
type snapshotStats struct {
	objects int
	bytes   int64
}

// encodeSnapshot writes objs, the state of a cache at version, to w in the
// layout above, encoding chunks on up to workers goroutines at once (1: on
// the caller's goroutine only).
func encodeSnapshot[T any](w io.Writer, identity, version string, objs []T, codec Codec[T], workers int) (snapshotStats, error) {
	chunks := (len(objs) + snapshotChunkObjects - 1) / snapshotChunkObjects
	var hdr []byte
	hdr = appendString(hdr, identity)
	hdr = appendString(hdr, version)
	hdr = binary.AppendUvarint(hdr, uint64(len(objs)))
	hdr = binary.AppendUvarint(hdr, uint64(chunks))
	head := make([]byte, 0, 20+len(hdr))
	head = append(head, snapshotMagic...)
	head = binary.LittleEndian.AppendUint32(head, snapshotFormatVersion)
	head = binary.LittleEndian.AppendUint32(head, uint32(len(hdr)))
	head = append(head, hdr...)
	hcrc := crc32.Checksum(hdr, castagnoli)
	head = binary.LittleEndian.AppendUint32(head, hcrc)
	st := snapshotStats{objects: len(objs)}
	n, err := w.Write(head)
	st.bytes += int64(n)
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
			lo := (first + j) * snapshotChunkObjects
			hi := min(lo+snapshotChunkObjects, len(objs))
			var err error
			bufs[j], err = encodeChunk(bufs[j][:0], objs[lo:hi], codec)
			return err
		})
		if err != nil {
			return st, err
		}
		for _, buf := range bufs[:wave] {
			crcs = append(crcs, buf[8:12]...)
			n, err := w.Write(buf)
			st.bytes += int64(n)
			if err != nil {
				return st, err
			}
		}
	}
	tail := append([]byte(snapshotEndMagic), 0, 0, 0, 0)
	binary.LittleEndian.PutUint32(tail[len(snapshotEndMagic):], crc32.Checksum(crcs, castagnoli))
	n, err = w.Write(tail)
	st.bytes += int64(n)
	return st, err
}

// encodeChunk appends one chunk of objs (its head and payload) to dst.
func encodeChunk[T any](dst []byte, objs []T, codec Codec[T]) ([]byte, error) {
	dst = append(dst, make([]byte, 12)...)
	for _, o := range objs {
		at := len(dst)
		var err error
		if dst, err = codec.AppendEncode(append(dst, 0, 0, 0, 0), o); err != nil {
			return dst, fmt.Errorf("encode object: %w", err)
		}
		binary.LittleEndian.PutUint32(dst[at:], uint32(len(dst)-at-4))
	}
	payload := dst[12:]
	binary.LittleEndian.PutUint32(dst[0:], uint32(len(payload)))
	binary.LittleEndian.PutUint32(dst[4:], uint32(len(objs)))
	binary.LittleEndian.PutUint32(dst[8:], crc32.Checksum(payload, castagnoli))
	return dst, nil
}

func appendString(b []byte, s string) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

// errSnapshotCorrupt describes a file that is not a whole snapshot.
func errSnapshotCorrupt(format string, args ...any) error {
	return fmt.Errorf("%w: refused, not a whole snapshot (truncated or damaged): %s", ErrSnapshot, fmt.Sprintf(format, args...))
}

// snapshotHeader is what a snapshot says of itself.
type snapshotHeader struct {
	identity, version string
	objects, chunks   uint64
}

// readSnapshotHeader checks data's head and returns its header and the
// offset of the first chunk.
func readSnapshotHeader(data []byte) (snapshotHeader, int, error) {
	var h snapshotHeader
	if len(data) < 20 || string(data[:8]) != snapshotMagic {
		return h, 0, errSnapshotCorrupt("no snapshot header")
	}
	if v := binary.LittleEndian.Uint32(data[8:]); v != snapshotFormatVersion {
		return h, 0, fmt.Errorf("%w: refused, written in layout version %d, this release reads %d", ErrSnapshot, v, snapshotFormatVersion)
	}
	n := binary.LittleEndian.Uint32(data[12:])
	if n > maxSnapshotHeader || int(n) > len(data)-20 {
		return h, 0, errSnapshotCorrupt("header length %d", n)
	}
	hdr := data[16 : 16+n]
	if crc32.Checksum(hdr, castagnoli) != binary.LittleEndian.Uint32(data[16+n:]) {
		return h, 0, errSnapshotCorrupt("header checksum")
	}
	var ok bool
	if h.identity, hdr, ok = readString(hdr); !ok {
		return h, 0, errSnapshotCorrupt("header")
	}
	if h.version, hdr, ok = readString(hdr); !ok {
		return h, 0, errSnapshotCorrupt("header")
	}
	var k int
	if h.objects, k = binary.Uvarint(hdr); k <= 0 {
		return h, 0, errSnapshotCorrupt("header")
	}
	if h.chunks, k = binary.Uvarint(hdr[k:]); k <= 0 {
		return h, 0, errSnapshotCorrupt("header")
	}
	return h, int(20 + n), nil
}

func readString(b []byte) (string, []byte, bool) {
	n, k := binary.Uvarint(b)
	if k <= 0 || n > uint64(len(b)-k) {
		return "", nil, false
	}
	return string(b[k : k+int(n)]), b[k+int(n):], true
}

// identityMismatch explains why a snapshot of identity got is refused by an
// informer of identity want: the first line that differs.
func identityMismatch(got, want string) error {
	gl, wl := strings.Split(got, "\n"), strings.Split(want, "\n")
	for i := range max(len(gl), len(wl)) {
		var g, w string
		if i < len(gl) {
			g = gl[i]
		}
		if i < len(wl) {
			w = wl[i]
		}
		if g != w {
			return fmt.Errorf("%w: refused, it is a snapshot of something else: it has %q where this informer has %q", ErrSnapshot, g, w)
		}
	}
	return fmt.Errorf("%w: refused, identity differs", ErrSnapshot)
}

// decodedSnapshot is a snapshot's content.
type decodedSnapshot[K comparable, T any] struct {
	version string
	keys    []K
	objs    []T
}

// decodeSnapshot checks data against identity and decodes its objects and
// their keys on up to workers goroutines. It fails whole: any damaged
// chunk, object the codec refuses or key the key function refuses refuses
// the snapshot.
func decodeSnapshot[K comparable, T any](data []byte, identity string, codec Codec[T], keyFunc KeyFunc[K, T], workers int) (*decodedSnapshot[K, T], error) {
	h, off, err := readSnapshotHeader(data)
	if err != nil {
		return nil, err
	}
	if h.identity != identity {
		return nil, identityMismatch(h.identity, identity)
	}
	if h.version == "" {
		return nil, errSnapshotCorrupt("no version")
	}
	// Walk the chunk heads: every chunk present, the counts right, the
	// trailer right after the last one.
	if h.chunks > uint64(len(data))/12 || h.objects > h.chunks*snapshotChunkObjects {
		return nil, errSnapshotCorrupt("counts")
	}
	type chunk struct{ off, objects, first int }
	chunks := make([]chunk, h.chunks)
	crcs := make([]byte, 0, 4*(len(chunks)+1))
	crcs = append(crcs, data[off-4:off]...)
	objects := 0
	for i := range chunks {
		if len(data)-off < 12 {
			return nil, errSnapshotCorrupt("chunk %d of %d missing", i+1, h.chunks)
		}
		n := int(binary.LittleEndian.Uint32(data[off:]))
		m := int(binary.LittleEndian.Uint32(data[off+4:]))
		if n > len(data)-off-12 || m > snapshotChunkObjects {
			return nil, errSnapshotCorrupt("chunk %d of %d cut short", i+1, h.chunks)
		}
		crcs = append(crcs, data[off+8:off+12]...)
		chunks[i] = chunk{off: off, objects: m, first: objects}
		objects += m
		off += 12 + n
	}
	if uint64(objects) != h.objects {
		return nil, errSnapshotCorrupt("%d objects in chunks, %d in the header", objects, h.objects)
	}
	if len(data)-off != len(snapshotEndMagic)+4 || string(data[off:off+len(snapshotEndMagic)]) != snapshotEndMagic {
		return nil, errSnapshotCorrupt("no end marker after the last chunk")
	}
	if crc32.Checksum(crcs, castagnoli) != binary.LittleEndian.Uint32(data[off+len(snapshotEndMagic):]) {
		return nil, errSnapshotCorrupt("end checksum")
	}

	out := &decodedSnapshot[K, T]{version: h.version, keys: make([]K, objects), objs: make([]T, objects)}
	decode := func(c chunk) error {
		n := int(binary.LittleEndian.Uint32(data[c.off:]))
		payload := data[c.off+12 : c.off+12+n]
		if crc32.Checksum(payload, castagnoli) != binary.LittleEndian.Uint32(data[c.off+8:]) {
			return errSnapshotCorrupt("chunk checksum")
		}
		for j := range c.objects {
			if len(payload) < 4 {
				return errSnapshotCorrupt("object length")
			}
			l, k := uint64(binary.LittleEndian.Uint32(payload)), 4
			if l > uint64(len(payload)-k) {
				return errSnapshotCorrupt("object length")
			}
			obj, err := codec.Decode(payload[k : k+int(l)])
			if err != nil {
				return fmt.Errorf("%w: refused, the codec (%s) cannot decode an object: %w", ErrSnapshot, codec.Format(), err)
			}
			key, err := safeKey(keyFunc, obj)
			if err != nil {
				return fmt.Errorf("%w: refused, an object's key: %w", ErrSnapshot, err)
			}
			out.objs[c.first+j], out.keys[c.first+j] = obj, key
			payload = payload[k+int(l):]
		}
		if len(payload) != 0 {
			return errSnapshotCorrupt("bytes after a chunk's last object")
		}
		return nil
	}
	if err := parallel.For(len(chunks), workers, func(i int) error { return decode(chunks[i]) }); err != nil {
		return nil, err
	}
	return out, nil
}

// safeKey calls the user's key function, turning a panic into an error.
func safeKey[K comparable, T any](f KeyFunc[K, T], obj T) (K, error) {
	k, err := safecall.Call(f, obj)
	if err != nil {
		return k, fmt.Errorf("%w: %w", ErrKeyFunc, err)
	}
	return k, nil
}

// snapshotWorkers is the number of goroutines a snapshot is decoded on.
func snapshotWorkers() int { return runtime.GOMAXPROCS(0) }
