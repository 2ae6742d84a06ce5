// Package fields reads binary encodings field by field with a sticky error:
// bytes, uvarints, varints, and byte strings prefixed by a uvarint or a
// little-endian u32 length. It is the one reader of the engine's value
// codec (internal/valuecodec) and of the sources' snapshot codecs. It
// imports nothing of ginformer's.
package fields

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// errTruncated is wrapped by the error of a [Reader] that ran past its
// data: a number cut short (or overlong), a field longer than what is left.
var errTruncated = errors.New("truncated field")

// Reader reads the fields of one encoded record. The first failure sticks in
// Err and later reads return zeros (and leave Data nil); a caller checks Err
// once, after its last field. The byte strings it returns alias Data. The
// zero value reads nothing: its first read fails. A Reader is not safe for
// concurrent use.
type Reader struct {
	// Data is what is left to read.
	Data []byte
	// Err is the first failure: one of the reader's own (a field cut short
	// or a number overlong), or the one a caller set with [Reader.Fail];
	// nil while every read succeeded. Data is nil once Err is set, which is
	// what makes later reads return zeros: set it only through Fail.
	Err error
}

// Fail records err as the reader's failure, unless it already has one, and
// drops what is left to read: a caller's own check of a field it read (an
// out-of-range value, say) fails the record the same way a short field
// does.
func (r *Reader) Fail(err error) {
	if r.Err == nil {
		r.Err = err
	}
	r.Data = nil
}

func (r *Reader) truncated(format string, args ...any) {
	r.Fail(fmt.Errorf("%s: %w", fmt.Sprintf(format, args...), errTruncated))
}

// Byte reads one byte.
func (r *Reader) Byte() byte {
	if len(r.Data) == 0 {
		if r.Err == nil {
			r.truncated("a byte in 0")
		}
		return 0
	}
	b := r.Data[0]
	r.Data = r.Data[1:]
	return b
}

// Uvarint reads an unsigned varint.
func (r *Reader) Uvarint() uint64 {
	v, n := binary.Uvarint(r.Data)
	if n <= 0 {
		r.failNumber()
		return 0
	}
	r.Data = r.Data[n:]
	return v
}

// Varint reads a signed (zig-zag) varint.
func (r *Reader) Varint() int64 {
	v, n := binary.Varint(r.Data)
	if n <= 0 {
		r.failNumber()
		return 0
	}
	r.Data = r.Data[n:]
	return v
}

func (r *Reader) failNumber() {
	if r.Err == nil {
		r.truncated("a truncated or overlong number")
	}
}

// Bytes reads a uvarint length and that many bytes.
func (r *Reader) Bytes() []byte {
	return r.Take(r.Uvarint())
}

// Bytes32 reads a little-endian u32 length and that many bytes.
func (r *Reader) Bytes32() []byte {
	if len(r.Data) < 4 {
		if r.Err == nil {
			r.truncated("a length of 4 bytes in %d", len(r.Data))
		}
		return nil
	}
	n := binary.LittleEndian.Uint32(r.Data)
	r.Data = r.Data[4:]
	return r.Take(uint64(n))
}

// Take reads the next n bytes. The slice it returns has no capacity beyond
// them.
func (r *Reader) Take(n uint64) []byte {
	if n > uint64(len(r.Data)) {
		if r.Err == nil {
			r.truncated("a field of %d bytes in %d", n, len(r.Data))
		}
		return nil
	}
	b := r.Data[:n:n]
	r.Data = r.Data[n:]
	return b
}
