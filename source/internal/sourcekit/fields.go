package sourcekit

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// ErrTruncated is wrapped by the error of a [FieldReader] that ran past
// its data: a number cut short (or overlong), a field longer than what is
// left.
var ErrTruncated = errors.New("truncated field")

// FieldReader reads the fields of one object as the sources' snapshot
// codecs encode them: bytes, uvarints, varints, and byte strings prefixed
// by a uvarint or a little-endian u32 length. The first failure sticks in
// Err and later reads return zeros; a source checks Err once, after its
// last field. The byte strings it returns alias Data.
type FieldReader struct {
	// Data is what is left to read.
	Data []byte
	// Err is the first failure, wrapping ErrTruncated; nil while every
	// read succeeded.
	Err error
}

func (r *FieldReader) fail(format string, args ...any) {
	r.Err = fmt.Errorf("%s: %w", fmt.Sprintf(format, args...), ErrTruncated)
	r.Data = nil
}

// Byte reads one byte.
func (r *FieldReader) Byte() byte {
	if r.Err != nil {
		return 0
	}
	if len(r.Data) == 0 {
		r.fail("a byte in 0")
		return 0
	}
	b := r.Data[0]
	r.Data = r.Data[1:]
	return b
}

// Uvarint reads an unsigned varint.
func (r *FieldReader) Uvarint() uint64 {
	if r.Err != nil {
		return 0
	}
	v, n := binary.Uvarint(r.Data)
	if n <= 0 {
		r.fail("a truncated or overlong number")
		return 0
	}
	r.Data = r.Data[n:]
	return v
}

// Varint reads a signed (zig-zag) varint.
func (r *FieldReader) Varint() int64 {
	if r.Err != nil {
		return 0
	}
	v, n := binary.Varint(r.Data)
	if n <= 0 {
		r.fail("a truncated or overlong number")
		return 0
	}
	r.Data = r.Data[n:]
	return v
}

// Bytes reads a uvarint length and that many bytes.
func (r *FieldReader) Bytes() []byte {
	n := r.Uvarint()
	return r.take(n)
}

// Bytes32 reads a little-endian u32 length and that many bytes.
func (r *FieldReader) Bytes32() []byte {
	if r.Err != nil {
		return nil
	}
	if len(r.Data) < 4 {
		r.fail("a length of 4 bytes in %d", len(r.Data))
		return nil
	}
	n := binary.LittleEndian.Uint32(r.Data)
	r.Data = r.Data[4:]
	return r.take(uint64(n))
}

func (r *FieldReader) take(n uint64) []byte {
	if r.Err != nil {
		return nil
	}
	if n > uint64(len(r.Data)) {
		r.fail("a field of %d bytes in %d", n, len(r.Data))
		return nil
	}
	b := r.Data[:n:n]
	r.Data = r.Data[n:]
	return b
}
