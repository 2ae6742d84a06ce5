package natskv_test

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"sync/atomic"
	"testing"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"

	"github.com/ginformer/ginformer/source/natskv"
	"github.com/ginformer/ginformer/source/natskv/natstest"
	"github.com/ginformer/ginformer/source/sourcetest"
)

// obj is the test value: a name, a generation and a tier.
type obj struct {
	Name string `json:"name"`
	Gen  int    `json:"gen"`
	Tier string `json:"tier,omitempty"`
}

var bucketN atomic.Int64

// conn returns a connection to s and its JetStream, closed after the test.
func conn(t testing.TB, s *natstest.Server) (*nats.Conn, jetstream.JetStream) {
	t.Helper()
	nc, err := s.Connect()
	require.NoError(t, err)
	t.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	require.NoError(t, err)
	return nc, js
}

// newBucket creates a bucket no other test uses, keeping history (64
// revisions per key) unless cfg says otherwise.
func newBucket(t testing.TB, js jetstream.JetStream, cfg jetstream.KeyValueConfig) jetstream.KeyValue {
	t.Helper()
	cfg.Bucket = fmt.Sprintf("b%d", bucketN.Add(1))
	if cfg.History == 0 {
		cfg.History = jetstream.KeyValueMaxHistory
	}
	kv, err := js.CreateKeyValue(t.Context(), cfg)
	require.NoError(t, err)
	return kv
}

func newSource(t testing.TB, opts natskv.Options[obj]) *natskv.Source[obj] {
	t.Helper()
	s, err := natskv.New(opts)
	require.NoError(t, err)
	return s
}

// writer writes objs to a bucket and returns the revisions as versions.
type writer struct {
	js jetstream.JetStream
	kv jetstream.KeyValue
}

func rev(r uint64, err error) (string, error) {
	if err != nil {
		return "", err
	}
	return strconv.FormatUint(r, 10), nil
}

func (w writer) put(ctx context.Context, o obj) (string, error) {
	b, _ := json.Marshal(o)
	return rev(w.kv.Put(ctx, o.Name, b))
}

func (w writer) get(ctx context.Context, name string) (obj, uint64, error) {
	e, err := w.kv.Get(ctx, name)
	if err != nil {
		return obj{}, 0, err
	}
	var o obj
	return o, e.Revision(), json.Unmarshal(e.Value(), &o)
}

func (w writer) create(ctx context.Context, name string) (string, error) {
	b, _ := json.Marshal(obj{Name: name, Gen: 1})
	return rev(w.kv.Create(ctx, name, b))
}

func (w writer) update(ctx context.Context, name string) (string, error) {
	o, r, err := w.get(ctx, name)
	if err != nil {
		return "", fmt.Errorf("update %s: %w", name, err)
	}
	o.Gen++
	b, _ := json.Marshal(o)
	return rev(w.kv.Update(ctx, name, b, r))
}

func (w writer) del(ctx context.Context, name string) (string, error) {
	if _, err := w.kv.Get(ctx, name); err != nil {
		return "", fmt.Errorf("delete %s: %w", name, err)
	}
	return rev(natstest.Delete(ctx, w.js, w.kv.Bucket(), name))
}

func (w writer) purge(ctx context.Context, name string) (string, error) {
	return rev(natstest.Purge(ctx, w.js, w.kv.Bucket(), name))
}

func compareVersions(a, b string) int {
	x, err1 := strconv.ParseUint(a, 10, 64)
	y, err2 := strconv.ParseUint(b, 10, 64)
	if err1 != nil || err2 != nil {
		panic(fmt.Sprintf("bad versions %q %q", a, b))
	}
	return cmp.Compare(x, y)
}

// harness builds a conformance harness for a source over w's bucket.
func harness(src *natskv.Source[obj], w writer) sourcetest.Harness[*natskv.Object[obj]] {
	return sourcetest.Harness[*natskv.Object[obj]]{
		Source:     src,
		Create:     w.create,
		Update:     w.update,
		Delete:     w.del,
		Name:       func(o *natskv.Object[obj]) string { return o.Key },
		Generation: func(o *natskv.Object[obj]) int { return o.Value.Gen },
		Compact: func(ctx context.Context) error {
			_, err := natstest.Compact(ctx, w.js, w.kv.Bucket())
			return err
		},
		CompareVersions:  compareVersions,
		DisableReadExact: true,
		Equal:            sameObject,
	}
}

// sameObject compares two objects field by field, the times as instants
// (a snapshot's Created comes back in the local time zone).
func sameObject(a, b *natskv.Object[obj]) bool {
	return a.Key == b.Key && a.Value == b.Value && a.Revision == b.Revision && a.Created.Equal(b.Created) &&
		a.ValueUnknown == b.ValueUnknown
}
