package natskv_test

import (
	"context"
	"errors"
	"log/slog"
	"maps"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"

	"github.com/ginformer/ginformer/informer"
	"github.com/ginformer/ginformer/source/natskv"
)

// errorRecorder is an informer.Metrics that counts errors by class.
type errorRecorder struct {
	informer.NoopMetrics
	mu     sync.Mutex
	errors map[informer.ErrorClass]int64
}

func newErrorRecorder() *errorRecorder {
	return &errorRecorder{errors: map[informer.ErrorClass]int64{}}
}

func (m *errorRecorder) Error(_ string, class informer.ErrorClass) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.errors[class]++
}

func (m *errorRecorder) count(class informer.ErrorClass) int64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.errors[class]
}

func (m *errorRecorder) counts() map[informer.ErrorClass]int64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	return maps.Clone(m.errors)
}

// waitFor polls cond every 10 ms until it holds or 30 s pass.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		require.True(t, time.Now().Before(deadline), "%s: not within 30s", what)
		time.Sleep(10 * time.Millisecond)
	}
}

// A value that does not decode, in the initial list and then in the
// watch, reaches the informer: its metrics under class decode, Health's
// last error and counts, its ErrorHandler. The source still counts it, and
// the informer goes on serving.
func TestInformerSeesBadValues(t *testing.T) {
	src, w := fixture(t, jetstream.KeyValueConfig{}, natskv.Options[obj]{})
	ctx := t.Context()
	ok(t)(w.create(ctx, "a"))
	_, err := w.kv.Put(ctx, "bad", []byte("{"))
	require.NoError(t, err)
	m := newErrorRecorder()
	var mu sync.Mutex
	var handled []error
	inf, _ := startInformer(t, src, func(o *informer.Options[string, object]) {
		o.Metrics = m
		o.Logger = logr.FromSlogHandler(slog.DiscardHandler)
		o.ErrorHandler = func(_ context.Context, err error) {
			mu.Lock()
			defer mu.Unlock()
			handled = append(handled, err)
		}
	})
	require.Equal(t, int64(1), m.count(informer.ErrorClassDecode))
	h := inf.Health()
	require.Equal(t, map[informer.ErrorClass]int64{informer.ErrorClassDecode: 1}, h.Errors)
	require.ErrorIs(t, h.LastError, informer.ErrDecode)
	require.ErrorIs(t, h.LastError, natskv.ErrDecode)
	var de *natskv.DecodeError
	require.ErrorAs(t, h.LastError, &de)
	require.Equal(t, "bad", de.Key)

	// In the watch: the key's bad value is reported, a good one is cached.
	_, err = w.kv.Put(ctx, "a", []byte("not json"))
	require.NoError(t, err)
	v := ok(t)(w.put(ctx, obj{Name: "b", Gen: 3}))
	wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	require.NoError(t, inf.WaitForVersion(wctx, v))
	_, found := inf.Lister().Get("a")
	require.False(t, found, "a bad value deletes the key's previous state")
	got, found := inf.Lister().Get("b")
	require.True(t, found)
	require.Equal(t, 3, got.Value.Gen)
	require.Equal(t, map[informer.ErrorClass]int64{informer.ErrorClassDecode: 2}, m.counts())
	require.Equal(t, int64(2), inf.Health().Errors[informer.ErrorClassDecode])
	require.Equal(t, uint64(2), src.DecodeErrors())
	mu.Lock()
	defer mu.Unlock()
	require.Len(t, handled, 2)
	for _, err := range handled {
		require.True(t, errors.Is(err, informer.ErrDecode), "%v", err)
	}
}
