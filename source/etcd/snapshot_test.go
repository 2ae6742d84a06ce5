package etcd_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ginformer/ginformer/informer"
	"github.com/ginformer/ginformer/source/etcd"
	"github.com/ginformer/ginformer/source/etcd/etcdtest"
)

// snapCountingCodec is a JSON codec counting its calls; with into set it is a
// DecoderInto too (snapIntoCodec).
type snapCountingCodec struct {
	decodes, intos atomic.Int64
}

func (c *snapCountingCodec) Decode(data []byte) (obj, error) {
	c.decodes.Add(1)
	var v obj
	return v, json.Unmarshal(data, &v)
}

func (c *snapCountingCodec) Encode(v obj) ([]byte, error) { return json.Marshal(v) }

type snapIntoCodec struct{ *snapCountingCodec }

func (c snapIntoCodec) DecodeInto(data []byte, v *obj) error {
	c.intos.Add(1)
	return json.Unmarshal(data, v)
}

func TestSnapshotCodecRoundTrip(t *testing.T) {
	objs := []*etcd.Object[obj]{
		{Key: "/a/b", Value: obj{Name: "b", Gen: 3, Tier: "gold"}, ModRevision: 12345678901, CreateRevision: 7},
		{Key: "", Value: obj{}, ModRevision: 0, CreateRevision: 0},
		{Key: "deleted", ModRevision: 1 << 40, CreateRevision: 1 << 39, ValueUnknown: true},
		{Key: strings.Repeat("k", 300), Value: obj{Name: strings.Repeat("v", 1000)}, ModRevision: 1, CreateRevision: 1},
	}
	plain := &snapCountingCodec{}
	for _, tc := range []struct {
		name  string
		codec etcd.Codec[obj]
		check func(t *testing.T, decodes int)
	}{
		{"JSONCodec", etcd.JSONCodec[obj]{}, nil},
		{"Decode", plain, func(t *testing.T, decodes int) {
			require.Zero(t, plain.decodes.Load(), "obj is encoded field by field: the Codec is not used")
		}},
		{"DecodeInto", snapIntoCodec{&snapCountingCodec{}}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			src := newSource(t, etcd.Options[obj]{Client: client(t), Prefix: "/a/", Codec: tc.codec})
			codec := src.SnapshotCodec()
			dst := []byte("header")
			decodes := 0
			for _, o := range objs {
				start := len(dst)
				var err error
				dst, err = codec.AppendEncode(dst, o)
				require.NoError(t, err)
				require.Equal(t, "header", string(dst[:6]), "appends")
				got, err := codec.Decode(dst[start:])
				require.NoError(t, err)
				require.Equal(t, o, got)
				if !o.ValueUnknown {
					decodes++
				}
				// Every strict prefix of the encoding is refused, as is a
				// trailing byte.
				for n := start; n < len(dst); n++ {
					_, err := codec.Decode(dst[start:n])
					require.Error(t, err, "%d of %d bytes", n-start, len(dst)-start)
				}
				_, err = codec.Decode(append(dst[start:len(dst):len(dst)], 0))
				require.Error(t, err, "a trailing byte")
			}
			if tc.check != nil {
				tc.check(t, decodes)
			}
			if into, ok := tc.codec.(snapIntoCodec); ok {
				require.Zero(t, into.intos.Load()+into.decodes.Load(), "obj is encoded field by field: the Codec is not used")
			}
		})
	}
}

// The value's bytes are the decoded value's own: the informer reuses its
// buffer, and RawCodec keeps what it is given.
func TestSnapshotCodecCopiesValue(t *testing.T) {
	src, err := etcd.New(etcd.Options[[]byte]{Client: client(t), Codec: etcd.RawCodec{}})
	require.NoError(t, err)
	codec := src.SnapshotCodec()
	buf, err := codec.AppendEncode(nil, &etcd.Object[[]byte]{Key: "k", Value: []byte("value"), ModRevision: 2, CreateRevision: 2})
	require.NoError(t, err)
	got, err := codec.Decode(buf)
	require.NoError(t, err)
	clear(buf)
	require.Equal(t, "value", string(got.Value))
	require.Equal(t, "k", got.Key)
}

// anyObj holds an interface: its values are encoded with the source's
// Codec, not field by field.
type anyObj struct {
	Name  string `json:"name"`
	Extra any    `json:"extra,omitempty"`
}

type anyCountingCodec struct {
	decodes, intos *atomic.Int64
}

func (c anyCountingCodec) Decode(data []byte) (anyObj, error) {
	c.decodes.Add(1)
	var v anyObj
	return v, json.Unmarshal(data, &v)
}

func (anyCountingCodec) Encode(v anyObj) ([]byte, error) { return json.Marshal(v) }

type anyIntoCodec struct{ anyCountingCodec }

func (c anyIntoCodec) DecodeInto(data []byte, v *anyObj) error {
	c.intos.Add(1)
	return json.Unmarshal(data, v)
}

// A value the field-by-field encoding cannot hold goes through the Codec:
// Decode, or DecodeInto when it has it, on a copy of the bytes.
func TestSnapshotCodecFallsBackToTheCodec(t *testing.T) {
	o := &etcd.Object[anyObj]{Key: "k", Value: anyObj{Name: "n", Extra: "x"}, ModRevision: 3, CreateRevision: 2}
	for _, into := range []bool{false, true} {
		base := anyCountingCodec{decodes: new(atomic.Int64), intos: new(atomic.Int64)}
		var codec etcd.Codec[anyObj] = base
		if into {
			codec = anyIntoCodec{base}
		}
		src, err := etcd.New(etcd.Options[anyObj]{Client: client(t), Codec: codec})
		require.NoError(t, err)
		sc := src.SnapshotCodec()
		require.Contains(t, sc.Format(), "/v2/")
		require.Contains(t, sc.Format(), fmt.Sprintf("%T", codec), "the codec's type")
		buf, err := sc.AppendEncode(nil, o)
		require.NoError(t, err)
		got, err := sc.Decode(buf)
		require.NoError(t, err)
		clear(buf)
		require.Equal(t, o, got)
		if into {
			require.Equal(t, int64(1), base.intos.Load())
			require.Zero(t, base.decodes.Load())
		} else {
			require.Equal(t, int64(1), base.decodes.Load())
		}
		for n := range len(buf) {
			_, err := sc.Decode(buf[:n])
			require.Error(t, err)
		}
	}
}

type failingCodec struct{ etcd.JSONCodec[anyObj] }

func (failingCodec) Encode(anyObj) ([]byte, error) { return nil, errors.New("no") }

func TestSnapshotCodecErrorsAndFormat(t *testing.T) {
	src, err := etcd.New(etcd.Options[anyObj]{Client: client(t), Codec: failingCodec{}})
	require.NoError(t, err)
	_, err = src.SnapshotCodec().AppendEncode(nil, &etcd.Object[anyObj]{Key: "k"})
	require.ErrorContains(t, err, "no")
	buf, err := src.SnapshotCodec().AppendEncode(nil, &etcd.Object[anyObj]{Key: "k", ValueUnknown: true})
	require.NoError(t, err, "a value not known is not encoded")
	_, err = src.SnapshotCodec().Decode(buf)
	require.NoError(t, err)
	_, err = src.SnapshotCodec().Decode([]byte{0x02, 0, 0, 0}) // an unknown flag
	require.Error(t, err)

	jsonSrc := newSource(t, etcd.Options[obj]{Client: client(t)})
	f := jsonSrc.SnapshotCodec().Format()
	require.Contains(t, f, "etcd.Object[")
	require.Contains(t, f, "obj]")
	require.Contains(t, f, "/v2/values:")
	require.Contains(t, f, "Name string;Gen int;Tier string;", "the layout of the value")
	other := newSource(t, etcd.Options[obj]{Client: client(t), Codec: &snapCountingCodec{}})
	require.Equal(t, f, other.SnapshotCodec().Format(), "values encoded field by field: the Codec does not matter")
}

func TestSnapshotIdentity(t *testing.T) {
	c := client(t)
	prefix := newPrefix(t)
	identity := func(t *testing.T, s informer.SnapshotSource[*etcd.Object[obj]]) string {
		t.Helper()
		id, err := s.SnapshotIdentity(t.Context())
		require.NoError(t, err)
		return id
	}
	base := identity(t, newSource(t, etcd.Options[obj]{Client: c, Prefix: prefix}))
	require.Contains(t, base, "etcd")
	require.Contains(t, base, prefix)
	require.Equal(t, base, identity(t, newSource(t, etcd.Options[obj]{Client: client(t), Prefix: prefix})),
		"another source and client over the same cluster and prefix")
	require.Equal(t, base, identity(t, newSource(t, etcd.Options[obj]{Client: c, Prefix: prefix, PageSize: 7, WatchBuffer: 3})),
		"options that change no object")
	for name, opts := range map[string]etcd.Options[obj]{
		"another prefix": {Client: c, Prefix: prefix + "x/"},
		"no prefix":      {Client: c},
		"stripped keys":  {Client: c, Prefix: prefix, StripPrefix: true},
		"a filter":       {Client: c, Prefix: prefix, Filter: func(string, obj) bool { return true }},
		"a transform":    {Client: c, Prefix: prefix, Transform: func(_ context.Context, _ string, b []byte) ([]byte, error) { return b, nil }},
	} {
		require.NotEqual(t, base, identity(t, newSource(t, opts)), name)
	}

	// Another cluster (the default token gives every embedded member the
	// same cluster ID: these two differ).
	other := etcdtest.New(t, etcdtest.Config{ClusterToken: "other-cluster"})
	otherID := identity(t, newSource(t, etcd.Options[obj]{Client: other.NewTestClient(t), Prefix: prefix}))
	require.NotEqual(t, base, otherID, "another cluster")
	third := etcdtest.New(t, etcdtest.Config{ClusterToken: "third-cluster"})
	require.NotEqual(t, otherID, identity(t, newSource(t, etcd.Options[obj]{Client: third.NewTestClient(t), Prefix: prefix})))

	// A sharded source: not the same as the whole prefix, the same whatever
	// its slice.
	sharded := func(shards ...int) string {
		s, err := etcd.NewSharded(etcd.ShardedOptions[obj]{Source: newSource(t, etcd.Options[obj]{Client: c, Prefix: prefix}),
			Slices: newFixedSlices(t, shards...)})
		require.NoError(t, err)
		return identity(t, s)
	}
	require.NotEqual(t, base, sharded(0))
	require.Equal(t, sharded(0), sharded(1, 2))

	// An unreachable cluster: an error, no identity.
	cli := client(t)
	require.NoError(t, cli.Close())
	ctx, cancel := context.WithTimeout(t.Context(), 100*time.Millisecond) // the client retries the closed connection
	defer cancel()
	_, err := newSource(t, etcd.Options[obj]{Client: cli, Prefix: prefix}).SnapshotIdentity(ctx)
	require.Error(t, err)
}
