package k8s

import (
	"encoding/json"
	"fmt"
	"reflect"
	"slices"

	sigsjson "sigs.k8s.io/json"

	"github.com/ginformer/ginformer/informer"
	"github.com/ginformer/ginformer/internal/typename"

	"github.com/ginformer/ginformer/source/k8s/internal/wire"
)

// The codecs of snapshots ([Source.SnapshotCodec]).
//
// The generated types of k8s.io/api, read through client-go's typed
// clients, are kept in protobuf: encoded by their generated marshaller,
// decoded as the source decodes the wire (the planned decoder, strings and
// spec subtrees shared, unless [Options.DisableStringSharing]). Cached
// objects hold no managedFields (unless [Options.KeepManagedFields]), so a
// snapshot's object is smaller than the server's and decodes faster
// (BenchmarkSnapshotCodec). Every other object (projections, custom types,
// unstructured and metadata objects, objects of other clients) is kept in
// JSON, decoded as the source decodes JSON. Decoding an object of a source
// that decodes itself also records it as delivered, at its resourceVersion
// (wire.Known), so that a relist after a restart decodes only what changed
// while the program was down.

// snapshotFormatVersion is the version of the codecs' encoding, part of
// their Format.
const snapshotFormatVersion = 1

// protoMarshaler is what the generated types of k8s.io/api implement to
// encode themselves.
type protoMarshaler interface {
	Size() int
	MarshalToSizedBuffer([]byte) (int, error)
}

// snapshotCodec returns the snapshot codec of the objects c decodes.
func (c *codec[E, T]) snapshotCodec() informer.Codec[T] {
	if _, ok := any(T(new(E))).(protoMarshaler); ok && c.proto {
		return protoSnapshotCodec[E, T]{c: c, format: snapshotFormat[E]("protobuf")}
	}
	return jsonSnapshotCodec[E, T]{c: c, format: snapshotFormat[E]("json")}
}

// clientCodec returns the snapshot codec of a source that goes through
// lw's own List and Watch: protobuf for a generated type read through a
// client-go typed client (whose decoders leave the same fields as the
// generated Unmarshal), JSON for any other (metadata clients, for one, keep
// each item's apiVersion and kind, which protobuf does not hold).
func clientCodec[E any, T ObjectPtr[E]](lw any, opts Options) informer.Codec[T] {
	_, typed := restPathOf(lw)
	if _, ok := any(T(new(E))).(protoMarshaler); ok && typed {
		c := newCodec[E, T](opts)
		c.known = nil // no relist decodes from the wire here
		return c.snapshotCodec()
	}
	return jsonSnapshotCodec[E, T]{format: snapshotFormat[E]("json")}
}

// snapshotFormat is a codec's Format: "k8s/" + the object's Go type (with
// its package path) + "/" + the encoding + "/" + the format's version.
func snapshotFormat[E any](encoding string) string {
	return fmt.Sprintf("k8s/%s/%s/%d", typename.Of(reflect.TypeFor[E]()), encoding, snapshotFormatVersion)
}

// protoSnapshotCodec keeps generated types in protobuf.
type protoSnapshotCodec[E any, T ObjectPtr[E]] struct {
	c      *codec[E, T]
	format string
}

// Format implements [informer.Codec].
func (p protoSnapshotCodec[E, T]) Format() string { return p.format }

// AppendEncode implements [informer.Codec]: obj's generated marshaller.
func (p protoSnapshotCodec[E, T]) AppendEncode(dst []byte, obj T) ([]byte, error) {
	m := any(obj).(protoMarshaler)
	n := m.Size()
	dst = slices.Grow(dst, n)
	k, err := m.MarshalToSizedBuffer(dst[len(dst) : len(dst)+n])
	if err != nil {
		return dst, fmt.Errorf("k8s: snapshot of %s/%s: %w", obj.GetNamespace(), obj.GetName(), err)
	}
	if k != n {
		return dst, fmt.Errorf("k8s: snapshot of %s/%s: %d bytes encoded of %d", obj.GetNamespace(), obj.GetName(), k, n)
	}
	return dst[:len(dst)+n], nil
}

// Decode implements [informer.Codec]: the source's protobuf decoder.
func (p protoSnapshotCodec[E, T]) Decode(data []byte) (T, error) {
	obj := T(new(E))
	var scratch []byte
	if err := p.c.decode(formatProto, data, obj, &scratch); err != nil {
		return nil, fmt.Errorf("k8s: snapshot object: %w", err)
	}
	p.c.restored(obj)
	return obj, nil
}

// jsonSnapshotCodec keeps objects in JSON.
type jsonSnapshotCodec[E any, T ObjectPtr[E]] struct {
	c      *codec[E, T] // nil: a source that does not decode itself
	format string
}

// Format implements [informer.Codec].
func (j jsonSnapshotCodec[E, T]) Format() string { return j.format }

// AppendEncode implements [informer.Codec]: encoding/json (the types' own
// MarshalJSON where they have one, as unstructured objects do).
func (j jsonSnapshotCodec[E, T]) AppendEncode(dst []byte, obj T) ([]byte, error) {
	b, err := json.Marshal(obj)
	if err != nil {
		return dst, fmt.Errorf("k8s: snapshot of %s/%s: %w", obj.GetNamespace(), obj.GetName(), err)
	}
	return append(dst, b...), nil
}

// Decode implements [informer.Codec]: the source's JSON decoder, or, for
// a source that does not decode itself, a case-sensitive decoding into the
// type (its UnmarshalJSON where it has one) that keeps every field.
func (j jsonSnapshotCodec[E, T]) Decode(data []byte) (T, error) {
	obj := T(new(E))
	var err error
	if j.c != nil {
		err = j.c.decode(formatJSON, data, obj, nil)
	} else {
		err = sigsjson.UnmarshalCaseSensitivePreserveInts(data, obj)
	}
	if err != nil {
		return nil, fmt.Errorf("k8s: snapshot object: %w", err)
	}
	if j.c != nil {
		j.c.restored(obj)
	}
	return obj, nil
}

// restored records obj, decoded from a snapshot, as delivered (wire.Known):
// a relist then hands it on again, undecoded, if the server's is at the
// same resourceVersion.
func (c *codec[E, T]) restored(obj T) {
	if c.known != nil {
		c.known.Record(obj.GetNamespace(), obj.GetName(), obj.GetResourceVersion(), wire.AnchorOne((*E)(obj)), 0)
	}
}
