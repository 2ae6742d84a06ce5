package natskv_test

import (
	"context"
	"errors"
	"log/slog"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"

	"github.com/ginformer/ginformer/informer"
	"github.com/ginformer/ginformer/source/natskv"
	"github.com/ginformer/ginformer/source/natskv/natstest"
)

func TestNewValidates(t *testing.T) {
	_, js := conn(t, srv)
	for name, opts := range map[string]natskv.Options[obj]{
		"no JetStream":          {Bucket: "b"},
		"no bucket":             {JetStream: js},
		"negative ContinueTTL":  {JetStream: js, Bucket: "b", ContinueTTL: -1},
		"negative MaxContinues": {JetStream: js, Bucket: "b", MaxContinues: -1},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := natskv.New(opts)
			require.ErrorIs(t, err, informer.ErrInvalidOptions)
		})
	}
}

func TestCompareVersions(t *testing.T) {
	_, js := conn(t, srv)
	s := newSource(t, natskv.Options[obj]{JetStream: js, Bucket: "b"})
	c, err := s.CompareVersions("9", "10")
	require.NoError(t, err)
	require.Equal(t, -1, c)
	c, err = s.CompareVersions("10", "10")
	require.NoError(t, err)
	require.Zero(t, c)
	_, err = s.CompareVersions("x", "1")
	require.ErrorIs(t, err, informer.ErrInvalidVersion)
	_, err = s.CompareVersions("1", "-1")
	require.ErrorIs(t, err, informer.ErrInvalidVersion)
}

// fixture is a source over a new bucket and a writer for it.
func fixture(t *testing.T, cfg jetstream.KeyValueConfig, opts natskv.Options[obj]) (*natskv.Source[obj], writer) {
	t.Helper()
	_, js := conn(t, srv)
	w := writer{js: js, kv: newBucket(t, js, cfg)}
	opts.JetStream, opts.Bucket = js, w.kv.Bucket()
	return newSource(t, opts), w
}

// ok returns a function that fails t on an error and returns the version.
func ok(t *testing.T) func(v string, err error) string {
	return func(v string, err error) string {
		t.Helper()
		require.NoError(t, err)
		return v
	}
}

// next returns the next event that is not a bookmark, within 10 s.
func next(t *testing.T, w informer.Watcher[*natskv.Object[obj]]) informer.Event[*natskv.Object[obj]] {
	t.Helper()
	timer := time.NewTimer(10 * time.Second)
	defer timer.Stop()
	for {
		select {
		case ev, ok := <-w.Events():
			require.True(t, ok, "watch closed")
			if ev.Type != informer.EventBookmark {
				return ev
			}
		case <-timer.C:
			t.Fatal("no event within 10s")
		}
	}
}

func TestFutureVersions(t *testing.T) {
	src, w := fixture(t, jetstream.KeyValueConfig{}, natskv.Options[obj]{})
	ctx := t.Context()
	ok(t)(w.create(ctx, "a"))
	_, err := src.Watch(ctx, informer.WatchOptions{Version: "100"})
	require.ErrorIs(t, err, informer.ErrVersionTooLarge)
	_, err = src.Watch(ctx, informer.WatchOptions{Version: "100", SendInitialEvents: true})
	require.ErrorIs(t, err, informer.ErrVersionTooLarge)
	for _, mode := range []informer.ReadMode{informer.ReadNotOlderThan, informer.ReadExact} {
		_, err = src.List(ctx, informer.ListOptions{Mode: mode, Version: "100"})
		require.ErrorIs(t, err, informer.ErrVersionTooLarge, "%v", mode)
	}
	_, err = src.Watch(ctx, informer.WatchOptions{Version: "x"})
	require.ErrorIs(t, err, informer.ErrInvalidOptions)
	_, err = src.Watch(ctx, informer.WatchOptions{})
	require.ErrorIs(t, err, informer.ErrInvalidOptions)
}

// ReadExact is served at the latest revision only.
func TestReadExact(t *testing.T) {
	src, w := fixture(t, jetstream.KeyValueConfig{}, natskv.Options[obj]{})
	ctx := t.Context()
	v1 := ok(t)(w.create(ctx, "a"))
	v2 := ok(t)(w.create(ctx, "b"))
	p, err := src.List(ctx, informer.ListOptions{Mode: informer.ReadExact, Version: v2})
	require.NoError(t, err)
	require.Equal(t, v2, p.Version)
	require.Len(t, p.Items, 2)
	_, err = src.List(ctx, informer.ListOptions{Mode: informer.ReadExact, Version: v1})
	require.ErrorIs(t, err, errors.ErrUnsupported)
}

func TestContinueTokens(t *testing.T) {
	src, w := fixture(t, jetstream.KeyValueConfig{}, natskv.Options[obj]{})
	ctx := t.Context()
	for _, n := range []string{"a", "b", "c"} {
		ok(t)(w.create(ctx, n))
	}
	p, err := src.List(ctx, informer.ListOptions{Limit: 1})
	require.NoError(t, err)
	require.NotEmpty(t, p.Continue)
	// A page can be read again with its token.
	p2, err := src.List(ctx, informer.ListOptions{Limit: 1, Continue: p.Continue})
	require.NoError(t, err)
	p2again, err := src.List(ctx, informer.ListOptions{Limit: 1, Continue: p.Continue})
	require.NoError(t, err)
	require.Equal(t, p2.Items[0].Key, p2again.Items[0].Key)
	for _, tok := range []string{"x", "1.2", "1.abc.0", "1.abc.1", p.Continue + "0"} {
		_, err := src.List(ctx, informer.ListOptions{Continue: tok})
		require.ErrorIs(t, err, informer.ErrExpired, "token %q", tok)
	}
}

// A continue token expires after ContinueTTL.
func TestContinueTTL(t *testing.T) {
	src, w := fixture(t, jetstream.KeyValueConfig{}, natskv.Options[obj]{ContinueTTL: time.Nanosecond})
	ctx := t.Context()
	ok(t)(w.create(ctx, "a"))
	ok(t)(w.create(ctx, "b"))
	p, err := src.List(ctx, informer.ListOptions{Limit: 1})
	require.NoError(t, err)
	deadline := time.Now().Add(time.Millisecond)
	for time.Now().Before(deadline) { // spin past the TTL without sleeping
	}
	_, err = src.List(ctx, informer.ListOptions{Continue: p.Continue})
	require.ErrorIs(t, err, informer.ErrExpired)
}

// Deletes and purges arrive as Deleted events carrying the previous value:
// from the stream for a key the watch has not seen yet (a delete keeps the
// history), from the watch itself for one it has (a purge removes the
// history, so the value of a key the watch has not seen is unknown).
func TestDeleteAndPurgeCarryPreviousValue(t *testing.T) {
	src, w := fixture(t, jetstream.KeyValueConfig{}, natskv.Options[obj]{})
	ctx := t.Context()
	ok(t)(w.create(ctx, "a"))
	ok(t)(w.create(ctx, "b"))
	ok(t)(w.create(ctx, "c"))
	v := ok(t)(w.update(ctx, "b"))
	wt, err := src.Watch(ctx, informer.WatchOptions{Version: v})
	require.NoError(t, err)
	defer wt.Stop()
	vb := ok(t)(w.update(ctx, "b"))
	ev := next(t, wt) // read before the purge removes b's history
	require.Equal(t, informer.EventModified, ev.Type)
	require.Equal(t, vb, ev.Version)
	vp := ok(t)(w.purge(ctx, "b"))
	vd := ok(t)(w.del(ctx, "a"))
	vc := ok(t)(w.purge(ctx, "c"))
	for _, want := range []struct {
		typ     informer.EventType
		key     string
		gen     int
		version string
	}{
		{informer.EventDeleted, "b", 3, vp},
		{informer.EventDeleted, "a", 1, vd},
		{informer.EventDeleted, "c", 0, vc},
	} {
		ev := next(t, wt)
		require.Equal(t, want.typ, ev.Type, "%+v", want)
		require.Equal(t, want.key, ev.Object.Key)
		require.Equal(t, want.gen, ev.Object.Value.Gen, "%+v", want)
		require.Equal(t, want.gen == 0, ev.Object.ValueUnknown)
		require.Equal(t, want.version, ev.Version)
	}
	// Deleting a deleted key changes nothing the consumer sees.
	_, err = natstest.Delete(ctx, w.js, w.kv.Bucket(), "a")
	require.NoError(t, err)
	vn := ok(t)(w.create(ctx, "n"))
	ev = next(t, wt)
	require.Equal(t, informer.EventAdded, ev.Type)
	require.Equal(t, vn, ev.Version)
}

// With a history of one revision per key, a marker replaces the value: a
// Deleted event then carries the key only. It is never lost.
func TestDeleteWithoutHistory(t *testing.T) {
	src, w := fixture(t, jetstream.KeyValueConfig{History: 1}, natskv.Options[obj]{})
	ctx := t.Context()
	v := ok(t)(w.create(ctx, "a"))
	wt, err := src.Watch(ctx, informer.WatchOptions{Version: v})
	require.NoError(t, err)
	defer wt.Stop()
	vd := ok(t)(w.del(ctx, "a"))
	ev := next(t, wt)
	require.Equal(t, informer.EventDeleted, ev.Type)
	require.Equal(t, "a", ev.Object.Key)
	require.True(t, ev.Object.ValueUnknown)
	require.Equal(t, vd, ev.Version)
}

// A watch from a revision whose successors the history limit removed ends
// with ErrExpired, returned or as its first event, instead of skipping
// them.
func TestWatchGapExpires(t *testing.T) {
	src, w := fixture(t, jetstream.KeyValueConfig{History: 1}, natskv.Options[obj]{})
	ctx := t.Context()
	ok(t)(w.create(ctx, "b"))
	v := ok(t)(w.create(ctx, "a"))
	ok(t)(w.update(ctx, "a")) // removes a's first revision: v is gone, v+1 too (below)
	ok(t)(w.update(ctx, "a"))
	ok(t)(w.update(ctx, "b")) // removes b's: the stream's first revision moves up
	wt, err := src.Watch(ctx, informer.WatchOptions{Version: v})
	if err != nil {
		require.ErrorIs(t, err, informer.ErrExpired)
		return
	}
	defer wt.Stop()
	ev, ok := <-wt.Events()
	require.True(t, ok)
	require.Equal(t, informer.EventError, ev.Type)
	require.ErrorIs(t, ev.Err, informer.ErrExpired)
	_, ok = <-wt.Events()
	require.False(t, ok, "an event after the Error event")
}

// A value that does not decode is reported with its key and skipped by
// lists; in a watch, it deletes the key's previous state, so the cache
// never holds a stale value.
func TestBadValue(t *testing.T) {
	var reported []error
	src, w := fixture(t, jetstream.KeyValueConfig{}, natskv.Options[obj]{
		ErrorHandler: func(_ context.Context, err error) { reported = append(reported, err) },
		Logger:       logr.FromSlogHandler(slog.DiscardHandler),
	})
	ctx := t.Context()
	ok(t)(w.create(ctx, "a"))
	_, err := w.kv.Put(ctx, "bad", []byte("{"))
	require.NoError(t, err)
	p, err := src.List(ctx, informer.ListOptions{})
	require.NoError(t, err)
	require.Len(t, p.Items, 1)
	require.Equal(t, "a", p.Items[0].Key)
	require.Len(t, reported, 1)
	var de *natskv.DecodeError
	require.ErrorAs(t, reported[0], &de)
	require.Equal(t, "bad", de.Key)
	require.ErrorIs(t, reported[0], natskv.ErrDecode)

	wt, err := src.Watch(ctx, informer.WatchOptions{Version: p.Version})
	require.NoError(t, err)
	defer wt.Stop()
	vb, err := rev(w.kv.Put(ctx, "a", []byte("not json")))
	require.NoError(t, err)
	ev := next(t, wt)
	require.Equal(t, informer.EventDeleted, ev.Type)
	require.Equal(t, "a", ev.Object.Key)
	require.Equal(t, 1, ev.Object.Value.Gen)
	require.Equal(t, vb, ev.Version)
	// A good value after the bad one brings the key back.
	vg := ok(t)(w.put(ctx, obj{Name: "a", Gen: 7}))
	ev = next(t, wt)
	require.Equal(t, informer.EventModified, ev.Type)
	require.Equal(t, 7, ev.Object.Value.Gen)
	require.Equal(t, vg, ev.Version)
	require.Equal(t, uint64(2), src.DecodeErrors())
}

// A key written with a TTL, in a bucket that leaves markers when limits
// remove keys (LimitMarkerTTL), arrives as Deleted when it expires, with
// the value the watch saw.
func TestKeyTTLExpiryIsDeleted(t *testing.T) {
	src, w := fixture(t, jetstream.KeyValueConfig{LimitMarkerTTL: time.Second}, natskv.Options[obj]{})
	ctx := t.Context()
	p, err := src.List(ctx, informer.ListOptions{})
	require.NoError(t, err)
	wt, err := src.Watch(ctx, informer.WatchOptions{Version: p.Version})
	require.NoError(t, err)
	defer wt.Stop()
	b := []byte(`{"name":"short","gen":1}`)
	vc, err := rev(w.kv.Create(ctx, "short", b, jetstream.KeyTTL(time.Second)))
	require.NoError(t, err)
	ev := next(t, wt)
	require.Equal(t, informer.EventAdded, ev.Type)
	require.Equal(t, vc, ev.Version)
	ev = next(t, wt) // within 10 s: the TTL is 1 s
	require.Equal(t, informer.EventDeleted, ev.Type)
	require.Equal(t, "short", ev.Object.Key)
	require.Equal(t, 1, ev.Object.Value.Gen)
	require.False(t, ev.Object.ValueUnknown)
	_, err = w.kv.Get(ctx, "short")
	require.ErrorIs(t, err, jetstream.ErrKeyNotFound)
}
