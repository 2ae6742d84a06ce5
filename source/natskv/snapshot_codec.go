package natskv

import (
	"encoding/binary"
	"errors"
	"fmt"
	"time"

	"github.com/ginformer/ginformer/internal/fields"
	"github.com/ginformer/ginformer/internal/valuecodec"
)

// objectCodec is the snapshot codec of the source's objects
// ([informer.Codec]). An object is encoded as
//
//	flags     1 byte: 1 ValueUnknown, 2 Created is the zero time
//	revision  uvarint
//	created   varint, Unix nanoseconds (absent with flag 2)
//	key       uvarint length, bytes
//	value     (absent with flag 1) the value field by field (internal/valuecodec)
//	          up to the end; or, for a T valuecodec cannot plan, uvarint
//	          length and the bytes of the value codec's Encode
//
// It keeps no state of its own: safe for concurrent use as long as the
// value codec is (the source requires it).
type objectCodec[T any] struct {
	planned *valuecodec.Codec[T] // nil: T cannot be planned, values encodes it
	values  Codec[T]
	// copyValue is set when the value codec's Decode may retain its input
	// (a natskv Codec may), which a snapshot's buffer must not be.
	copyValue bool
}

// newObjectCodec returns the codec of objects whose values values encodes.
func newObjectCodec[T any](values Codec[T]) objectCodec[T] {
	_, json := values.(JSONCodec[T]) // encoding/json copies what it keeps
	planned, _ := valuecodec.For[T]()
	return objectCodec[T]{planned: planned, values: values, copyValue: !json}
}

// The flags of an encoded object.
const (
	flagValueUnknown = 1 << iota
	flagNoCreated
	flagsKnown = flagValueUnknown | flagNoCreated
)

// errMalformed is wrapped by Decode's errors.
var errMalformed = errors.New("natskv source: malformed snapshot encoding of an object")

// Format names the layout's version and how values are encoded: the
// layout of T, or the value codec's type.
func (c objectCodec[T]) Format() string {
	if c.planned != nil {
		return "natskv.Object/2 values:" + c.planned.Fingerprint()
	}
	return fmt.Sprintf("natskv.Object/2 value=%T", c.values)
}

// AppendEncode appends the encoding of o to dst.
//
// Possible errors: the value codec's (wrapped); a nil object.
func (c objectCodec[T]) AppendEncode(dst []byte, o *Object[T]) ([]byte, error) {
	if o == nil {
		return dst, errors.New("natskv source: snapshot encoding of a nil object")
	}
	var flags byte
	if o.ValueUnknown {
		flags |= flagValueUnknown
	}
	if o.Created.IsZero() {
		flags |= flagNoCreated
	}
	var value []byte
	if !o.ValueUnknown && c.planned == nil {
		var err error
		if value, err = c.values.Encode(o.Value); err != nil {
			return dst, fmt.Errorf("natskv source: snapshot encoding of the value of %q: %w", o.Key, err)
		}
	}
	dst = append(dst, flags)
	dst = binary.AppendUvarint(dst, o.Revision)
	if flags&flagNoCreated == 0 {
		dst = binary.AppendVarint(dst, o.Created.UnixNano())
	}
	dst = binary.AppendUvarint(dst, uint64(len(o.Key)))
	dst = append(dst, o.Key...)
	switch {
	case o.ValueUnknown:
	case c.planned != nil:
		var err error
		if dst, err = c.planned.Append(dst, &o.Value); err != nil {
			return dst, fmt.Errorf("natskv source: snapshot encoding of the value of %q: %w", o.Key, err)
		}
	default:
		dst = binary.AppendUvarint(dst, uint64(len(value)))
		dst = append(dst, value...)
	}
	return dst, nil
}

// Decode returns the object encoded in data, which it does not retain
// (the value's bytes are copied before the value codec sees them, unless
// it is [JSONCodec]). Created comes back in the local time zone.
//
// Possible errors: an error wrapping errMalformed (truncated, trailing or
// unknown bytes); the value codec's (wrapped).
func (c objectCodec[T]) Decode(data []byte) (*Object[T], error) {
	r := fields.Reader{Data: data}
	flags := r.Byte()
	o := &Object[T]{Revision: r.Uvarint(), ValueUnknown: flags&flagValueUnknown != 0}
	if flags&flagNoCreated == 0 {
		o.Created = time.Unix(0, r.Varint())
	}
	o.Key = string(r.Bytes())
	var value []byte
	if !o.ValueUnknown && c.planned != nil {
		value, r.Data = r.Data, nil // the rest
	} else if !o.ValueUnknown {
		value = r.Bytes()
	}
	switch {
	case r.Err != nil:
		return nil, fmt.Errorf("%w: %w", errMalformed, r.Err)
	case flags&^flagsKnown != 0:
		return nil, fmt.Errorf("%w: unknown flags %#x", errMalformed, flags)
	case len(r.Data) > 0:
		return nil, fmt.Errorf("%w: %d bytes after the object", errMalformed, len(r.Data))
	case o.ValueUnknown:
		return o, nil
	case c.planned != nil:
		if err := c.planned.Decode(value, &o.Value); err != nil { // copies what it keeps
			return nil, fmt.Errorf("%w: the value of %q: %w", errMalformed, o.Key, err)
		}
		return o, nil
	}
	if c.copyValue {
		value = append([]byte(nil), value...)
	}
	v, err := c.values.Decode(value)
	if err != nil {
		return nil, fmt.Errorf("natskv source: snapshot: the value of %q: %w", o.Key, err)
	}
	o.Value = v
	return o, nil
}
