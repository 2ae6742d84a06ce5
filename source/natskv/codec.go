package natskv

import "encoding/json"

// Codec turns the bytes stored in the bucket into values and back. Decode is
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

// JSONCodec is the default [Codec]: encoding/json. Its zero value is ready.
type JSONCodec[T any] struct{}

// Decode unmarshals data into a new T.
func (JSONCodec[T]) Decode(data []byte) (T, error) {
	var v T
	err := json.Unmarshal(data, &v)
	return v, err
}

// Encode marshals v.
func (JSONCodec[T]) Encode(v T) ([]byte, error) { return json.Marshal(v) }

// RawCodec passes the bytes through: a source of []byte values. Its zero
// value is ready; it never fails.
type RawCodec struct{}

// Decode returns data itself.
func (RawCodec) Decode(data []byte) ([]byte, error) { return data, nil }

// Encode returns v itself.
func (RawCodec) Encode(v []byte) ([]byte, error) { return v, nil }
