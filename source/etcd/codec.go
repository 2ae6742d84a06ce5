package etcd

import "encoding/json"

// Codec turns the bytes stored in etcd into values and back. Decode is
// called from the source's goroutines, concurrently: implementations must be
// safe for concurrent use. A protobuf codec is a few lines around
// proto.Unmarshal and proto.Marshal.
type Codec[T any] interface {
	// Decode returns the value encoded in data. It may retain data: the
	// source never reuses or modifies it afterwards.
	Decode(data []byte) (T, error)
	// Encode returns the bytes to store for v (used by writers, tests and
	// demos; the source itself never writes).
	Encode(v T) ([]byte, error)
}

// DecoderInto is an optional interface of a [Codec]: a codec that has it
// decodes each value straight into the [Object] that holds it, where Decode,
// returning T by value, makes the source copy it there (and, for a T that
// the decoder's reflection moves to the heap, allocate it twice).
// [JSONCodec] has it.
type DecoderInto[T any] interface {
	// DecodeInto decodes data into *v, which holds the zero T, with the
	// contract of Decode: called concurrently, it may retain data, and on
	// error *v is discarded whatever it holds.
	DecodeInto(data []byte, v *T) error
}

// JSONCodec is the default [Codec]: encoding/json. Its zero value is ready.
type JSONCodec[T any] struct{}

var _ DecoderInto[int] = JSONCodec[int]{}

// Decode unmarshals data into a new T.
func (JSONCodec[T]) Decode(data []byte) (T, error) {
	var v T
	err := json.Unmarshal(data, &v)
	return v, err
}

// DecodeInto unmarshals data into *v (see [DecoderInto]).
func (JSONCodec[T]) DecodeInto(data []byte, v *T) error { return json.Unmarshal(data, v) }

// Encode marshals v.
func (JSONCodec[T]) Encode(v T) ([]byte, error) { return json.Marshal(v) }

// RawCodec passes the bytes through: a source of []byte values. Its zero
// value is ready; it never fails.
type RawCodec struct{}

// Decode returns data itself.
func (RawCodec) Decode(data []byte) ([]byte, error) { return data, nil }

// Encode returns v itself.
func (RawCodec) Encode(v []byte) ([]byte, error) { return v, nil }
