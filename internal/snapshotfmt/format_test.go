package snapshotfmt

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"os"
	"slices"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// object returns the bytes of test object i: its index and some filler, of
// a length that varies with i.
func object(i int) []byte {
	return fmt.Appendf(nil, "object %d %s", i, bytes.Repeat([]byte{byte('a' + i%26)}, i%37))
}

// encode returns a snapshot of n test objects.
func encode(t testing.TB, identity, version string, n, workers int) []byte {
	t.Helper()
	var buf bytes.Buffer
	st, err := Encode(&buf, identity, version, n, workers, func(dst []byte, i int) ([]byte, error) {
		return append(dst, object(i)...), nil
	})
	require.NoError(t, err)
	require.Equal(t, Stats{Objects: n, Bytes: int64(buf.Len())}, st)
	return buf.Bytes()
}

// decode decodes data as a snapshot of identity and returns its version
// and a copy of each object's bytes.
func decode(data []byte, identity string, workers int) (string, [][]byte, error) {
	var objs [][]byte
	var allocs atomic.Int32
	version, err := Decode(data, identity, workers, func(n int) {
		allocs.Add(1)
		objs = make([][]byte, n)
	}, func(i int, b []byte) error {
		if objs == nil || allocs.Load() != 1 {
			return errors.New("decodeObj before alloc, or alloc twice")
		}
		objs[i] = bytes.Clone(b)
		return nil
	})
	return version, objs, err
}

// TestRoundTrip: what is encoded is decoded, each object at its index,
// whatever the number of objects (none, a chunk, a chunk and one) and of
// workers on either side.
func TestRoundTrip(t *testing.T) {
	for _, n := range []int{0, 1, ChunkObjects, ChunkObjects + 1, 5*ChunkObjects + 7} {
		for _, workers := range []int{1, 2, 4} {
			t.Run(fmt.Sprintf("%d objects, %d workers", n, workers), func(t *testing.T) {
				data := encode(t, "id\nline two", "v7", n, workers)
				h, err := ReadHeader(data)
				require.NoError(t, err)
				assert.Equal(t, Header{Identity: "id\nline two", Version: "v7", Objects: n}, h)
				version, objs, err := decode(data, "id\nline two", 5-workers)
				require.NoError(t, err)
				assert.Equal(t, "v7", version)
				require.Len(t, objs, n)
				for i, b := range objs {
					assert.Equal(t, object(i), b, "object %d", i)
				}
			})
		}
	}
}

// TestReadsLayoutVersion2: a snapshot written by the informer's own
// encoder before the layout moved to this package (testdata/layout-v2.snap,
// 300 objects in two chunks) decodes to its objects, and encoding them
// again gives the same bytes: snapshots on disk survive an upgrade.
func TestReadsLayoutVersion2(t *testing.T) {
	data, err := os.ReadFile("testdata/layout-v2.snap")
	require.NoError(t, err)
	version, objs, err := decode(data, "golden\nlayout 2", 2)
	require.NoError(t, err)
	assert.Equal(t, "v42", version)
	require.Len(t, objs, 300)
	for i, b := range objs {
		assert.Equal(t, object(i), b, "object %d", i)
	}
	assert.Equal(t, data, encode(t, "golden\nlayout 2", "v42", 300, 2))
}

// TestEncodeWritesChunksWhole: each chunk reaches the writer in one Write,
// in order, between the head and the trailer (a paced writer sleeps
// between chunks).
func TestEncodeWritesChunksWhole(t *testing.T) {
	var writes [][]byte
	w := writerFunc(func(p []byte) (int, error) { writes = append(writes, bytes.Clone(p)); return len(p), nil })
	_, err := Encode(w, "id", "v", 3*ChunkObjects, 2, func(dst []byte, i int) ([]byte, error) { return append(dst, object(i)...), nil })
	require.NoError(t, err)
	require.Len(t, writes, 1+3+1, "head, three chunks, trailer")
	assert.Equal(t, encode(t, "id", "v", 3*ChunkObjects, 1), slices.Concat(writes...), "the same bytes with one worker")
	for _, c := range writes[1:4] {
		assert.Equal(t, uint32(ChunkObjects), binary.LittleEndian.Uint32(c[4:]))
	}
}

type writerFunc func(p []byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }

// TestEncodeErrors: the first error of the object encoder or of the writer
// ends the encoding, and Stats counts the bytes written until then.
func TestEncodeErrors(t *testing.T) {
	boom := errors.New("boom")
	st, err := Encode(&bytes.Buffer{}, "id", "v", 1000, 2, func(dst []byte, i int) ([]byte, error) {
		if i == 600 {
			return dst, boom
		}
		return append(dst, 'x'), nil
	})
	require.ErrorIs(t, err, boom)
	assert.Contains(t, err.Error(), "encode object")
	assert.Equal(t, 1000, st.Objects)

	written := 0
	w := writerFunc(func(p []byte) (int, error) {
		if written > 0 {
			return 3, boom
		}
		written += len(p)
		return len(p), nil
	})
	st, err = Encode(w, "id", "v", 1000, 1, func(dst []byte, i int) ([]byte, error) { return append(dst, 'x'), nil })
	require.ErrorIs(t, err, boom)
	assert.Equal(t, int64(written+3), st.Bytes)
}

// TestRefusesEveryTruncationAndBitFlip: a snapshot cut at any byte, with
// any one bit flipped or with a byte after its end is refused as corrupt
// (or, for a bit of the layout version, as another layout version); none
// decodes into something else.
func TestRefusesEveryTruncationAndBitFlip(t *testing.T) {
	data := encode(t, "id", "v1", ChunkObjects+3, 1) // two chunks
	for n := range len(data) {
		_, _, err := decode(data[:n], "id", 2)
		require.ErrorIs(t, err, ErrCorrupt, "cut at %d of %d", n, len(data))
	}
	spoilt := bytes.Clone(data)
	for i := range data {
		for bit := range 8 {
			spoilt[i] ^= 1 << bit
			_, _, err := decode(spoilt, "id", 2)
			if i >= 8 && i < 12 {
				require.ErrorIs(t, err, ErrLayoutVersion, "bit %d of byte %d flipped", bit, i)
			} else if !errors.Is(err, ErrIdentity) { // a flip in the identity whose checksum collides is not corrupt
				require.ErrorIs(t, err, ErrCorrupt, "bit %d of byte %d of %d flipped", bit, i, len(data))
			}
			spoilt[i] = data[i]
		}
	}
	_, _, err := decode(append(bytes.Clone(data), 0), "id", 2)
	require.ErrorIs(t, err, ErrCorrupt, "a byte after the end")
}

// TestRefusesWhereDamageIs: a flipped byte in the header, a chunk or the
// trailer is refused with a message that says which.
func TestRefusesWhereDamageIs(t *testing.T) {
	data := encode(t, "id", "v1", ChunkObjects+3, 1)
	hdrEnd := 16 + int(binary.LittleEndian.Uint32(data[12:])) // the header's checksum follows it
	flip := func(i int) []byte {
		b := bytes.Clone(data)
		b[i] ^= 0x10
		return b
	}
	tests := []struct {
		name string
		data []byte
		msg  string
	}{
		{"magic", flip(0), "no snapshot header"},
		{"header length", flip(14), "header length"},
		{"header", flip(17), "header checksum"},
		{"header checksum", flip(hdrEnd + 3), "header checksum"},
		{"first chunk's head", flip(hdrEnd + 4 + 9), "end checksum"},
		{"first chunk's payload", flip(hdrEnd + 4 + chunkHead + 20), "chunk checksum"},
		{"last chunk's payload", flip(len(data) - trailerLen - 1), "chunk checksum"},
		{"end magic", flip(len(data) - trailerLen), "no end marker after the last chunk"},
		{"trailer checksum", flip(len(data) - 1), "end checksum"},
		{"truncated trailer", data[:len(data)-1], "no end marker after the last chunk"},
		{"truncated chunk", data[:len(data)-trailerLen-1], "cut short"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, _, err := decode(tt.data, "id", 2)
			require.ErrorIs(t, err, ErrCorrupt)
			assert.Contains(t, err.Error(), tt.msg)
			assert.True(t, bytes.HasPrefix([]byte(err.Error()), []byte(ErrCorrupt.Error()+": ")), err.Error())
		})
	}
}

// TestRefusesAnotherIdentityOrLayout: a whole snapshot of something else
// is refused with an IdentityError naming the first line that differs; one
// of another layout version with ErrLayoutVersion, before anything else
// of it is read.
func TestRefusesAnotherIdentityOrLayout(t *testing.T) {
	data := encode(t, "layout 2\nsource: a\nuser: u", "v1", 10, 1)
	_, _, err := decode(data, "layout 2\nsource: b\nuser: u", 2)
	require.ErrorIs(t, err, ErrIdentity)
	ie, ok := errors.AsType[*IdentityError](err)
	require.True(t, ok)
	assert.Equal(t, IdentityError{Got: "layout 2\nsource: a\nuser: u", Want: "layout 2\nsource: b\nuser: u"}, *ie)
	assert.Equal(t, `it is a snapshot of something else: it has "source: a" where the reader has "source: b"`, err.Error())
	_, _, err = decode(data, "layout 2\nsource: a\nuser: u\n", 2)
	require.ErrorIs(t, err, ErrIdentity)
	assert.Equal(t, "identity differs", err.Error())

	other := bytes.Clone(data)
	binary.LittleEndian.PutUint32(other[8:], Version+1)
	_, err = ReadHeader(other[:headLen]) // the rest is not read
	require.ErrorIs(t, err, ErrLayoutVersion)
	assert.Equal(t, fmt.Sprintf("written in layout version %d, this release reads %d", Version+1, Version), err.Error())
}

// TestFirstDiff: the first differing line, or none.
func TestFirstDiff(t *testing.T) {
	tests := []struct {
		got, want, g, w string
		ok              bool
	}{
		{"a\nb", "a\nb", "", "", false},
		{"a\nb", "a\nc", "b", "c", true},
		{"a", "a\nc", "", "c", true},
		{"a\nb\nc", "a", "b", "", true},
		{"a", "a\n", "", "", false},
	}
	for _, tt := range tests {
		g, w, ok := FirstDiff(tt.got, tt.want)
		assert.Equal(t, []any{tt.g, tt.w, tt.ok}, []any{g, w, ok}, "%q %q", tt.got, tt.want)
	}
}

// craftChunk is a chunk of a crafted snapshot: its payload and the object
// count its head claims.
type craftChunk struct {
	payload []byte
	objects uint32
}

// craft builds a snapshot whose every checksum is right but whose counts,
// version and payloads are whatever the test says.
func craft(identity, version string, objects, chunks uint64, cs []craftChunk) []byte {
	var hdr []byte
	hdr = appendString(hdr, identity)
	hdr = appendString(hdr, version)
	hdr = binary.AppendUvarint(hdr, objects)
	hdr = binary.AppendUvarint(hdr, chunks)
	b := append([]byte(magic), 0, 0, 0, 0, 0, 0, 0, 0)
	binary.LittleEndian.PutUint32(b[8:], Version)
	binary.LittleEndian.PutUint32(b[12:], uint32(len(hdr)))
	b = append(b, hdr...)
	b = binary.LittleEndian.AppendUint32(b, crc32.Checksum(hdr, castagnoli))
	crcs := b[len(b)-4:]
	for _, c := range cs {
		b = binary.LittleEndian.AppendUint32(b, uint32(len(c.payload)))
		b = binary.LittleEndian.AppendUint32(b, c.objects)
		crc := crc32.Checksum(c.payload, castagnoli)
		b = binary.LittleEndian.AppendUint32(b, crc)
		b = append(b, c.payload...)
		crcs = binary.LittleEndian.AppendUint32(bytes.Clone(crcs), crc)
	}
	b = append(b, endMagic...)
	return binary.LittleEndian.AppendUint32(b, crc32.Checksum(crcs, castagnoli))
}

// payload is a chunk payload of the given objects.
func payload(objs ...string) []byte {
	var b []byte
	for _, o := range objs {
		b = binary.LittleEndian.AppendUint32(b, uint32(len(o)))
		b = append(b, o...)
	}
	return b
}

// TestRefusesWrongCounts: a snapshot whose checksums are all right but
// whose counts or lengths disagree is refused, and says what disagrees.
func TestRefusesWrongCounts(t *testing.T) {
	two := craftChunk{payload("a", "b"), 2}
	tests := []struct {
		name string
		data []byte
		msg  string
	}{
		{"crafted but whole", craft("id", "v", 2, 1, []craftChunk{two}), ""},
		{"more objects in the header", craft("id", "v", 3, 1, []craftChunk{two}), "2 objects in chunks, 3 in the header"},
		{"fewer objects in the header", craft("id", "v", 1, 1, []craftChunk{two}), "2 objects in chunks, 1 in the header"},
		{"more objects than chunks hold", craft("id", "v", ChunkObjects+1, 1, []craftChunk{two}), "counts"},
		{"more chunks than bytes", craft("id", "v", 2, 1<<40, []craftChunk{two}), "counts"},
		{"a chunk missing", craft("id", "v", 2, 2, []craftChunk{two}), "cut short"},
		{"a chunk too many", craft("id", "v", 2, 1, []craftChunk{two, {nil, 0}}), "no end marker"},
		{"a chunk claiming too many objects", craft("id", "v", ChunkObjects+1, 2, []craftChunk{{payload("a"), ChunkObjects + 1}, {nil, 0}}), "chunk 1 of 2 cut short"},
		{"a chunk claiming more objects than it holds", craft("id", "v", 3, 1, []craftChunk{{payload("a", "b"), 3}}), "object length"},
		{"a chunk claiming fewer objects than it holds", craft("id", "v", 1, 1, []craftChunk{{payload("a", "b"), 1}}), "bytes after a chunk's last object"},
		{"an object longer than its chunk", craft("id", "v", 1, 1, []craftChunk{{binary.LittleEndian.AppendUint32(nil, 5), 1}}), "object length"},
		{"no version", craft("id", "", 2, 1, []craftChunk{two}), "no version"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, objs, err := decode(tt.data, "id", 2)
			if tt.msg == "" {
				require.NoError(t, err)
				assert.Equal(t, [][]byte{[]byte("a"), []byte("b")}, objs)
				return
			}
			require.ErrorIs(t, err, ErrCorrupt)
			assert.Contains(t, err.Error(), tt.msg)
		})
	}
}

// TestDecodeObjErrorFailsWhole: the first error of decodeObj is Decode's,
// as decodeObj returned it, and no version is returned.
func TestDecodeObjErrorFailsWhole(t *testing.T) {
	data := encode(t, "id", "v1", 3*ChunkObjects, 1)
	boom := errors.New("boom")
	for _, workers := range []int{1, 3} {
		version, err := Decode(data, "id", workers, func(int) {}, func(i int, _ []byte) error {
			if i == ChunkObjects+5 {
				return boom
			}
			return nil
		})
		require.Equal(t, boom, err)
		assert.Empty(t, version)
	}
}

// FuzzDecode: Decode of any bytes refuses them or decodes objects that
// encode back to the same bytes; it never panics, never hands decodeObj an
// index out of range or calls it twice for one.
//
//	go test ./internal/snapshotfmt -run '^$' -fuzz '^FuzzDecode$' -fuzztime 60s
func FuzzDecode(f *testing.F) {
	for _, n := range []int{0, 1, 3, ChunkObjects + 1} {
		b := encode(f, "id", "v1", n, 1)
		f.Add(b)
		f.Add(b[:len(b)/2])
		flip := bytes.Clone(b)
		flip[len(flip)/2] ^= 0x80
		f.Add(flip)
	}
	f.Add(craft("id", "v", 1, 1, []craftChunk{{binary.LittleEndian.AppendUint32(nil, 0xffffffff), 1}}))
	f.Fuzz(func(t *testing.T, data []byte) {
		h, herr := ReadHeader(data)
		var objs [][]byte
		version, err := Decode(data, "id", 2, func(n int) {
			objs = make([][]byte, n)
		}, func(i int, b []byte) error {
			if objs[i] != nil {
				return fmt.Errorf("object %d decoded twice", i)
			}
			objs[i] = append([]byte{}, b...)
			return nil
		})
		if herr != nil {
			require.Error(t, err, "a header ReadHeader refuses")
		}
		if err != nil {
			require.True(t, errors.Is(err, ErrCorrupt) || errors.Is(err, ErrLayoutVersion) || errors.Is(err, ErrIdentity), "%v", err)
			return
		}
		assert.Equal(t, h.Version, version)
		var buf bytes.Buffer
		_, err = Encode(&buf, "id", version, len(objs), 1, func(dst []byte, i int) ([]byte, error) { return append(dst, objs[i]...), nil })
		require.NoError(t, err)
		assert.Equal(t, data, buf.Bytes(), "a snapshot accepted is the one its objects encode to")
	})
}
