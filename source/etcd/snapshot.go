package etcd

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"reflect"
	"strconv"
	"strings"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/ginformer/ginformer/informer"
	"github.com/ginformer/ginformer/internal/fields"
	"github.com/ginformer/ginformer/internal/safecall"
	"github.com/ginformer/ginformer/internal/valuecodec"
	"github.com/ginformer/ginformer/source/etcd/internal/classify"
)

// Warm restarts: what the source gives an informer's snapshots
// ([informer.SnapshotOptions]). The informer resumes a restored cache with a
// watch from the snapshot's revision (WatchOptions.NotifyCaughtUp, see
// [Source.Watch]): as long as etcd has not compacted that revision, no range
// of the prefix is read.

var (
	_ informer.SnapshotSource[*Object[int]] = (*Source[int])(nil)
	_ informer.SnapshotSource[*Object[int]] = (*Sharded[int])(nil)
	_ informer.Codec[*Object[int]]          = snapshotCodec[int]{}
)

// snapshotFormat versions the encoding of snapshotCodec; part of its Format.
const snapshotFormat = "v2"

// SnapshotIdentity names what the source caches, for
// [informer.SnapshotSource]: "etcd", etcd's cluster ID (a snapshot of
// another cluster, even one restored from a backup of this one, is refused:
// its revisions mean something else), the prefix, StripPrefix, and whether
// a Filter and a Transform are set. The functions themselves cannot be
// compared: when a Filter, a Transform or the Codec's behaviour changes
// what the cache holds, change [informer.SnapshotOptions.Identity] too.
//
// The cluster ID comes from the header of one serializable read of a single
// key (the prefix itself): no range of the prefix is read.
//
// Possible errors: the client's, classified as by [Source.List]; ctx.Err().
func (s *Source[T]) SnapshotIdentity(ctx context.Context) (string, error) {
	id, err := s.clusterID(ctx)
	if err != nil {
		return "", err
	}
	return s.identity(id), nil
}

// clusterID reads etcd's cluster ID from the header of a cheap read.
func (s *Source[T]) clusterID(ctx context.Context) (uint64, error) {
	resp, err := s.opts.Client.Get(ctx, s.start, clientv3.WithSerializable(), clientv3.WithKeysOnly())
	if err != nil {
		return 0, fmt.Errorf("etcd source: cluster ID: %w", classify.Error(err))
	}
	if resp.Header == nil || resp.Header.ClusterId == 0 {
		return 0, errors.New("etcd source: cluster ID: etcd's answer carries none")
	}
	return resp.Header.ClusterId, nil
}

// identity formats the identity of the source over cluster id.
func (s *Source[T]) identity(id uint64) string {
	var b strings.Builder
	b.WriteString("etcd cluster=")
	b.WriteString(strconv.FormatUint(id, 16))
	b.WriteString(" prefix=")
	b.WriteString(strconv.Quote(s.opts.Prefix))
	b.WriteString(" stripPrefix=")
	b.WriteString(strconv.FormatBool(s.opts.StripPrefix))
	b.WriteString(" filter=")
	b.WriteString(strconv.FormatBool(s.opts.Filter != nil))
	b.WriteString(" transform=")
	b.WriteString(strconv.FormatBool(s.opts.Transform != nil))
	return b.String()
}

// SnapshotCodec returns the codec of the source's objects, for
// [informer.SnapshotSource]: each object's key, revisions and
// [Object.ValueUnknown], and its value. The value is encoded field by field
// in a binary form planned once from T by reflection, which loads an order
// of magnitude faster than JSON (every field is kept, unexported ones
// included, so the restored value is deeply equal to the cached one). A T
// that holds an interface, a func or a channel is encoded with the source's
// [Codec] instead (Encode, then Decode or [DecoderInto]), which must then
// read what it writes.
//
// The value stored is the decoded one: with a [Options.Transform] that
// decrypts, the snapshot holds the values in clear. Keep the snapshot where
// the values may be (or leave snapshots off).
func (s *Source[T]) SnapshotCodec() informer.Codec[*Object[T]] {
	c := snapshotCodec[T]{codec: s.opts.Codec, into: s.into}
	c.values, _ = valuecodec.For[T]() // nil for an unsupported T, which the Codec encodes
	return c
}

// SnapshotIdentity names what the source caches, as
// [Source.SnapshotIdentity] does for the underlying source, marked
// "sharded". The slice is left out on purpose: a replica whose slice changed
// while it was down restores its snapshot, then relists (its watch refuses
// to resume a restored cache, see [Sharded.Watch]) and receives only the
// difference.
//
// Possible errors: those of [Source.SnapshotIdentity].
func (s *Sharded[T]) SnapshotIdentity(ctx context.Context) (string, error) {
	id, err := s.src.SnapshotIdentity(ctx)
	if err != nil {
		return "", err
	}
	return id + " sharded", nil
}

// SnapshotCodec returns the underlying source's ([Source.SnapshotCodec]).
func (s *Sharded[T]) SnapshotCodec() informer.Codec[*Object[T]] { return s.src.SnapshotCodec() }

// snapshotCodec encodes an object as:
//
//	uvarint flags (bit 0: ValueUnknown)
//	uvarint len(Key), Key
//	uvarint ModRevision, uvarint CreateRevision
//	unless ValueUnknown: u32 len(value), value (values, or codec.Encode)
//
// Revisions are non-negative; they are written as uint64 all the same, so
// any int64 round-trips.
type snapshotCodec[T any] struct {
	values *valuecodec.Codec[T] // nil: T is not supported, codec encodes values
	codec  Codec[T]
	into   DecoderInto[T] // codec's, if it has one
}

const flagValueUnknown = 1

// errSnapshotData is wrapped by the errors of bytes that are no encoded
// object.
var errSnapshotData = errors.New("malformed snapshot object")

// Format names the value type, the version of the encoding and the
// encoding of values: "etcd.Object[T]/v2/values:" and the layout of T, or
// "etcd.Object[T]/v2/codec" and the codec's type.
func (c snapshotCodec[T]) Format() string {
	if c.values != nil {
		return fmt.Sprintf("etcd.Object[%s]/%s/values:%s", reflect.TypeFor[T](), snapshotFormat, c.values.Fingerprint())
	}
	return fmt.Sprintf("etcd.Object[%s]/%s/%T", reflect.TypeFor[T](), snapshotFormat, c.codec)
}

// AppendEncode appends obj's encoding to dst.
//
// Possible errors: the codec's Encode (or its panic, recovered), wrapped.
func (c snapshotCodec[T]) AppendEncode(dst []byte, obj *Object[T]) ([]byte, error) {
	var flags uint64
	if obj.ValueUnknown {
		flags |= flagValueUnknown
	}
	dst = binary.AppendUvarint(dst, flags)
	dst = binary.AppendUvarint(dst, uint64(len(obj.Key)))
	dst = append(dst, obj.Key...)
	dst = binary.AppendUvarint(dst, uint64(obj.ModRevision))
	dst = binary.AppendUvarint(dst, uint64(obj.CreateRevision))
	if obj.ValueUnknown {
		return dst, nil
	}
	if c.values != nil {
		at := len(dst)
		dst, err := c.values.Append(append(dst, 0, 0, 0, 0), &obj.Value)
		if err != nil {
			return dst, fmt.Errorf("etcd snapshot: encode the value of %q: %w", obj.Key, err)
		}
		binary.LittleEndian.PutUint32(dst[at:], uint32(len(dst)-at-4))
		return dst, nil
	}
	value, err := safecall.Call(c.codec.Encode, obj.Value)
	if err != nil {
		return dst, fmt.Errorf("etcd snapshot: encode the value of %q: %w", obj.Key, err)
	}
	dst = binary.LittleEndian.AppendUint32(dst, uint32(len(value)))
	return append(dst, value...), nil
}

// Decode returns the object encoded in data. The value's bytes are copied
// before the codec sees them (it may keep them; data is reused).
//
// Possible errors: bytes that are no encoded object; the codec's Decode (or
// its panic, recovered), wrapped.
func (c snapshotCodec[T]) Decode(data []byte) (*Object[T], error) {
	d := fields.Reader{Data: data}
	flags := d.Uvarint()
	key := d.Bytes()
	obj := &Object[T]{
		ModRevision:    int64(d.Uvarint()),
		CreateRevision: int64(d.Uvarint()),
		ValueUnknown:   flags&flagValueUnknown != 0,
	}
	var value []byte
	if !obj.ValueUnknown {
		value = d.Bytes32()
	}
	switch {
	case d.Err != nil:
		return nil, fmt.Errorf("etcd snapshot: %w: %w", d.Err, errSnapshotData)
	case len(d.Data) != 0:
		return nil, fmt.Errorf("etcd snapshot: %d bytes after the object: %w", len(d.Data), errSnapshotData)
	case flags&^flagValueUnknown != 0:
		return nil, fmt.Errorf("etcd snapshot: unknown flags %#x: %w", flags, errSnapshotData)
	}
	obj.Key = string(key)
	if obj.ValueUnknown {
		return obj, nil
	}
	if c.values != nil {
		if err := c.values.Decode(value, &obj.Value); err != nil { // copies what it keeps
			return nil, fmt.Errorf("etcd snapshot: decode the value of %q: %w: %w", obj.Key, err, errSnapshotData)
		}
		return obj, nil
	}
	value = bytes.Clone(value)
	var err error
	if c.into != nil {
		_, err = safecall.Call(func(data []byte) (struct{}, error) { return struct{}{}, c.into.DecodeInto(data, &obj.Value) }, value)
	} else {
		obj.Value, err = safecall.Call(c.codec.Decode, value)
	}
	if err != nil {
		return nil, fmt.Errorf("etcd snapshot: decode the value of %q: %w", obj.Key, err)
	}
	return obj, nil
}
