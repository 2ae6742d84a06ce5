package natskv_test

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"

	"github.com/ginformer/ginformer/source/natskv"
	"github.com/ginformer/ginformer/source/natskv/natstest"
)

// The source's side of warm restarts: the identity a snapshot must match,
// and the codec of its objects. The conformance kit checks round trips of
// the objects the source delivers; these tests check the identity against
// what happens to buckets and servers, and the codec's edges.

func identity(t *testing.T, src interface {
	SnapshotIdentity(context.Context) (string, error)
}) string {
	t.Helper()
	id, err := src.SnapshotIdentity(t.Context())
	require.NoError(t, err)
	return id
}

func TestSnapshotIdentity(t *testing.T) {
	ctx := t.Context()
	_, js := conn(t, srv)
	kv := newBucket(t, js, jetstream.KeyValueConfig{})
	other := newBucket(t, js, jetstream.KeyValueConfig{})
	src := newSource(t, natskv.Options[obj]{JetStream: js, Bucket: kv.Bucket()})
	id := identity(t, src)
	require.Contains(t, id, "bucket="+kv.Bucket())

	_, err := kv.Put(ctx, "a", []byte(`{"gen":1}`))
	require.NoError(t, err)
	require.Equal(t, id, identity(t, src), "after a write")
	require.Equal(t, id, identity(t, newSource(t, natskv.Options[obj]{JetStream: js, Bucket: kv.Bucket()})), "another source of the bucket")
	require.NotEqual(t, id, identity(t, newSource(t, natskv.Options[obj]{JetStream: js, Bucket: other.Bucket()})), "another bucket")
	raw, err := natskv.New(natskv.Options[[]byte]{JetStream: js, Bucket: kv.Bucket(), Codec: natskv.RawCodec{}})
	require.NoError(t, err)
	require.NotEqual(t, id, identity(t, raw), "another value codec")

	// Deleted and created again: the revisions start at 1 again.
	require.NoError(t, js.DeleteKeyValue(ctx, kv.Bucket()))
	_, err = src.SnapshotIdentity(ctx)
	require.Error(t, err, "a missing bucket")
	_, err = js.CreateKeyValue(ctx, jetstream.KeyValueConfig{Bucket: kv.Bucket(), History: jetstream.KeyValueMaxHistory})
	require.NoError(t, err)
	require.NotEqual(t, id, identity(t, src), "a bucket deleted and created again")
}

// A server restarted on its store keeps the stream, and the identity.
func TestSnapshotIdentitySurvivesServerRestart(t *testing.T) {
	s, err := natstest.Start(natstest.Config{})
	require.NoError(t, err)
	defer s.Close()
	_, js := conn(t, s)
	kv := newBucket(t, js, jetstream.KeyValueConfig{Storage: jetstream.FileStorage})
	src := newSource(t, natskv.Options[obj]{JetStream: js, Bucket: kv.Bucket()})
	id := identity(t, src)
	require.NoError(t, s.Restart())
	retry(t, func(ctx context.Context) error {
		got, err := src.SnapshotIdentity(ctx)
		if err == nil {
			require.Equal(t, id, got)
		}
		return err
	})
}

func TestSnapshotCodecRoundTrip(t *testing.T) {
	created := time.Date(2026, 11, 26, 20, 19, 8, 123456789, time.UTC)
	_, js := conn(t, srv)
	codec := newSource(t, natskv.Options[obj]{JetStream: js, Bucket: "b"}).SnapshotCodec()
	require.Contains(t, codec.Format(), "values:")
	require.Contains(t, codec.Format(), "{Name string;Gen int;Tier string;}", "the value's layout")
	for _, o := range []*natskv.Object[obj]{
		{Key: "a", Value: obj{Name: "a", Gen: 3, Tier: "x"}, Revision: 7, Created: created},
		{Key: "a.b.c", Value: obj{Name: "é", Gen: 1}, Revision: 1<<64 - 1, Created: created.Add(-100 * 365 * 24 * time.Hour)},
		{Key: "zero-time", Value: obj{Gen: 1}, Revision: 1},
		{Key: "unknown", Revision: 9, Created: created, ValueUnknown: true},
		{Key: "", Revision: 0},
	} {
		b, err := codec.AppendEncode([]byte("x"), o)
		require.NoError(t, err)
		require.Equal(t, byte('x'), b[0])
		got, err := codec.Decode(b[1:])
		require.NoError(t, err, "%+v", o)
		require.True(t, sameObject(o, got), "%+v\n%+v", o, got)

		// Cut short anywhere, or with a byte more: an error, never a panic.
		for n := range len(b) - 1 {
			_, err := codec.Decode(b[1 : 1+n])
			require.Error(t, err, "%+v cut to %d bytes", o, n)
		}
		_, err = codec.Decode(append(bytes.Clone(b[1:]), 0))
		require.Error(t, err, "a trailing byte")
	}
	_, err := codec.Decode([]byte{0x80, 1, 0, 0})
	require.Error(t, err, "unknown flags")
	_, err = codec.AppendEncode(nil, nil)
	require.Error(t, err, "a nil object")
	b, err := codec.AppendEncode(nil, &natskv.Object[obj]{Key: "k", Revision: 1})
	require.NoError(t, err)
	b[len(b)-1] = 0xFF // the last string's length, cut short
	_, err = codec.Decode(b)
	require.Error(t, err, "a value that does not decode")
}

// The decoded value owns its bytes: the informer reuses its buffers.
func TestSnapshotCodecCopiesRawValues(t *testing.T) {
	_, js := conn(t, srv)
	src, err := natskv.New(natskv.Options[[]byte]{JetStream: js, Bucket: "b", Codec: natskv.RawCodec{}})
	require.NoError(t, err)
	codec := src.SnapshotCodec()
	require.Contains(t, codec.Format(), "values:[]uint8")
	b, err := codec.AppendEncode(nil, &natskv.Object[[]byte]{Key: "k", Value: []byte("value"), Revision: 2})
	require.NoError(t, err)
	got, err := codec.Decode(b)
	require.NoError(t, err)
	for i := range b {
		b[i] = 0
	}
	require.Equal(t, "k", got.Key)
	require.Equal(t, "value", string(got.Value))
}

// Decode never panics, and what it decodes encodes to bytes that decode to
// the same object.
func FuzzSnapshotCodecDecode(f *testing.F) {
	_, js := conn(f, srv)
	src, err := natskv.New(natskv.Options[[]byte]{JetStream: js, Bucket: "b", Codec: natskv.RawCodec{}})
	if err != nil {
		f.Fatal(err)
	}
	codec := src.SnapshotCodec()
	for _, o := range []*natskv.Object[[]byte]{
		{Key: "k", Value: []byte("v"), Revision: 3, Created: time.Unix(5, 6)},
		{Key: "k", Revision: 3, ValueUnknown: true},
	} {
		b, err := codec.AppendEncode(nil, o)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		o, err := codec.Decode(data)
		if err != nil {
			return
		}
		b, err := codec.AppendEncode(nil, o)
		require.NoError(t, err)
		again, err := codec.Decode(b)
		require.NoError(t, err)
		require.Equal(t, o.Created.UnixNano(), again.Created.UnixNano())
		o.Created, again.Created = time.Time{}, time.Time{}
		require.Equal(t, o, again)
	})
}

// A value that cannot be planned field by field (it holds an interface)
// goes through the source's value codec.
func TestSnapshotCodecFallsBackToTheValueCodec(t *testing.T) {
	type anyObj struct {
		Name  string
		Extra any
	}
	_, js := conn(t, srv)
	src, err := natskv.New(natskv.Options[anyObj]{JetStream: js, Bucket: "b"})
	require.NoError(t, err)
	codec := src.SnapshotCodec()
	require.Contains(t, codec.Format(), "value=natskv.JSONCodec")
	o := &natskv.Object[anyObj]{Key: "k", Value: anyObj{Name: "n", Extra: "x"}, Revision: 4}
	b, err := codec.AppendEncode(nil, o)
	require.NoError(t, err)
	got, err := codec.Decode(b)
	require.NoError(t, err)
	require.Equal(t, o.Value, got.Value)
	for n := range len(b) {
		_, err := codec.Decode(b[:n])
		require.Error(t, err)
	}
}
