package wire

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"

	"google.golang.org/protobuf/encoding/protowire"
)

// The Kubernetes protobuf encoding (k8s.io/apimachinery's
// runtime/serializer/protobuf): a whole object or list is the 4-byte magic
// "k8s\x00" followed by a runtime.Unknown message whose field 2 (raw) holds
// the object's own protobuf bytes. A watch stream is a sequence of frames,
// each a 4-byte big-endian length and that many bytes: one
// metav1.WatchEvent (bare, without the envelope), whose field 2 (object) is
// a runtime.RawExtension whose field 1 (raw) is an envelope of the object.

// Magic is the prefix of every object and list in the Kubernetes protobuf
// encoding.
const Magic = "k8s\x00"

// Field numbers of the messages the source reads without decoding them.
const (
	unknownRawField     = 2  // runtime.Unknown.raw
	watchTypeField      = 1  // metav1.WatchEvent.type
	watchObjectField    = 2  // metav1.WatchEvent.object
	rawExtensionField   = 1  // runtime.RawExtension.raw
	listMetaField       = 1  // every list's metadata
	objectMetaField     = 1  // every object's metadata (ObjectMeta)
	resourceVersionMeta = 6  // metav1.ObjectMeta.resourceVersion
	managedFieldsMeta   = 17 // metav1.ObjectMeta.managedFields
)

// maxFrame bounds one watch frame: the apiserver's default request limit
// is 3 MiB per object, and an event carries one object.
const maxFrame = 64 << 20

// Unwrap returns the raw bytes of the object in a Kubernetes protobuf
// envelope (magic + runtime.Unknown). b is not copied.
func Unwrap(b []byte) ([]byte, error) {
	if !bytes.HasPrefix(b, []byte(Magic)) {
		return nil, fmt.Errorf("%w: no k8s protobuf prefix", ErrMalformed)
	}
	raw, ok, err := bytesField(b[len(Magic):], unknownRawField)
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, fmt.Errorf("%w: envelope without raw bytes", ErrMalformed)
	}
	return raw, nil
}

// bytesField returns the last occurrence of the length-delimited field num
// at the top level of message b (protobuf's last-one-wins for singular
// fields).
func bytesField(b []byte, num protowire.Number) (val []byte, found bool, err error) {
	err = eachField(b, func(n protowire.Number, typ protowire.Type, v []byte) error {
		if n == num && typ == protowire.BytesType {
			val, found = v, true
		}
		return nil
	})
	return val, found, err
}

// leadingBytesField returns the first occurrence of the length-delimited
// field num in message b, reading no further: what follows may be damaged.
func leadingBytesField(b []byte, num protowire.Number) ([]byte, error) {
	for len(b) > 0 {
		n, typ, val, size, err := consumeField(b)
		if err != nil {
			return nil, err
		}
		if n == num && typ == protowire.BytesType {
			return val, nil
		}
		b = b[size:]
	}
	return nil, fmt.Errorf("%w: no field %d", ErrMalformed, num)
}

// Meta returns the bytes of the metadata of raw, an object's own bytes:
// its leading metadata field, which is read even when what follows it is
// damaged. The result aliases raw.
//
// Possible errors: [ErrMalformed] (wrapped).
func Meta(raw []byte) ([]byte, error) { return leadingBytesField(raw, objectMetaField) }

// eachField calls fn with each top-level field of message b: its number,
// wire type and, for length-delimited fields, the value's bytes (nil for
// other types). It stops at the first error.
func eachField(b []byte, fn func(num protowire.Number, typ protowire.Type, val []byte) error) error {
	for len(b) > 0 {
		num, typ, val, size, err := consumeField(b)
		if err != nil {
			return err
		}
		if err := fn(num, typ, val); err != nil {
			return err
		}
		b = b[size:]
	}
	return nil
}

// consumeField reads the field at the start of message b: its number and
// wire type, its value's bytes when it is length-delimited (nil for other
// types), and its whole size, tag included.
func consumeField(b []byte) (num protowire.Number, typ protowire.Type, val []byte, size int, err error) {
	num, typ, n := protowire.ConsumeTag(b)
	if n < 0 {
		return 0, 0, nil, 0, pbErr(n)
	}
	m := protowire.ConsumeFieldValue(num, typ, b[n:])
	if m < 0 {
		return 0, 0, nil, 0, pbErr(m)
	}
	if typ == protowire.BytesType {
		val, _ = protowire.ConsumeBytes(b[n:])
	}
	return num, typ, val, n + m, nil
}

// SplitList splits the raw bytes of a list into its metadata and its items
// (field itemsField), without decoding any item. The slices alias raw.
func SplitList(raw []byte, itemsField protowire.Number) (meta []byte, items [][]byte, err error) {
	err = eachField(raw, func(n protowire.Number, typ protowire.Type, v []byte) error {
		if typ != protowire.BytesType {
			return nil
		}
		switch n {
		case listMetaField:
			meta = v
		case itemsField:
			items = append(items, v)
		}
		return nil
	})
	return meta, items, err
}

// SplitWatchEvent splits one watch frame into the event's type and the raw
// bytes of its object (envelope removed). The slices alias frame.
func SplitWatchEvent(frame []byte) (typ string, obj []byte, err error) {
	raw := frame // the stream serializer writes bare WatchEvents
	if bytes.HasPrefix(frame, []byte(Magic)) {
		if raw, err = Unwrap(frame); err != nil {
			return "", nil, err
		}
	}
	var ext []byte
	err = eachField(raw, func(n protowire.Number, t protowire.Type, v []byte) error {
		switch {
		case n == watchTypeField && t == protowire.BytesType:
			typ = string(v)
		case n == watchObjectField && t == protowire.BytesType:
			ext = v
		}
		return nil
	})
	if err != nil {
		return "", nil, err
	}
	inner, _, err := bytesField(ext, rawExtensionField)
	if err != nil {
		return "", nil, err
	}
	if obj, err = Unwrap(inner); err != nil {
		return "", nil, err
	}
	return typ, obj, nil
}

// WithoutManagedFields returns obj with metadata.managedFields removed: obj
// itself when it has none, else a copy built in *scratch (grown as needed),
// valid until the next call with the same scratch.
func WithoutManagedFields(obj []byte, scratch *[]byte) ([]byte, error) {
	// Find the metadata field and whether it holds managedFields.
	var metaStart, metaEnd int // the whole field, tag included
	var meta []byte
	for off := 0; off < len(obj); {
		num, typ, val, size, err := consumeField(obj[off:])
		if err != nil {
			return nil, err
		}
		if num == objectMetaField && typ == protowire.BytesType {
			metaStart, metaEnd, meta = off, off+size, val
		}
		off += size
	}
	if meta == nil {
		return obj, nil
	}
	// Copy the metadata's fields except managedFields.
	out := (*scratch)[:0]
	out = append(out, obj[:metaStart]...)
	out = protowire.AppendTag(out, objectMetaField, protowire.BytesType)
	lenAt := len(out)
	bodyAt := lenAt + 5 // room for a 5-byte varint length, fixed up below
	out = append(out, make([]byte, 5)...)
	dropped := false
	for b := meta; len(b) > 0; {
		num, _, _, size, err := consumeField(b)
		if err != nil {
			return nil, err
		}
		if num == managedFieldsMeta {
			dropped = true
		} else {
			out = append(out, b[:size]...)
		}
		b = b[size:]
	}
	if !dropped {
		*scratch = out
		return obj, nil
	}
	// Write the length as a padded 5-byte varint (valid protobuf: the
	// decoders accept non-minimal varints).
	size := uint64(len(out) - bodyAt)
	for i := range 4 {
		out[lenAt+i] = byte(size>>(7*i))&0x7f | 0x80
	}
	out[lenAt+4] = byte(size >> 28)
	out = append(out, obj[metaEnd:]...)
	*scratch = out
	return out, nil
}

// FrameReader reads the length-prefixed frames of a protobuf watch stream.
// It is not safe for concurrent use.
type FrameReader struct {
	r   io.Reader
	hdr [4]byte
}

// NewFrameReader returns a reader of the frames of r.
func NewFrameReader(r io.Reader) *FrameReader { return &FrameReader{r: r} }

// Next reads one frame into buf, or into a new buffer if buf is too small.
//
// Possible errors: r's (io.EOF at a frame boundary, io.ErrUnexpectedEOF
// within one), [ErrMalformed] (wrapped) for a frame over 64 MiB.
func (f *FrameReader) Next(buf []byte) ([]byte, error) {
	if _, err := io.ReadFull(f.r, f.hdr[:]); err != nil {
		return nil, err
	}
	n := binary.BigEndian.Uint32(f.hdr[:])
	if n > maxFrame {
		return nil, fmt.Errorf("%w: watch frame of %d bytes", ErrMalformed, n)
	}
	if cap(buf) < int(n) {
		buf = make([]byte, n)
	}
	buf = buf[:n]
	if _, err := io.ReadFull(f.r, buf); err != nil {
		if errors.Is(err, io.EOF) {
			err = io.ErrUnexpectedEOF
		}
		return nil, err
	}
	return buf, nil
}
