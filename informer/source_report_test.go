package informer_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/stretchr/testify/require"

	"github.com/ginformer/ginformer/informer"
	"github.com/ginformer/ginformer/source/memory"
)

// errorRecorder counts Metrics.Error calls by class, and watch restarts.
type errorRecorder struct {
	informer.NoopMetrics
	mu       sync.Mutex
	errors   map[informer.ErrorClass]int64
	restarts int64
}

func newErrorRecorder() *errorRecorder {
	return &errorRecorder{errors: map[informer.ErrorClass]int64{}}
}

func (m *errorRecorder) Error(_ string, class informer.ErrorClass) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.errors[class]++
}

func (m *errorRecorder) WatchRestarted(string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.restarts++
}

func (m *errorRecorder) counts() map[informer.ErrorClass]int64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make(map[informer.ErrorClass]int64, len(m.errors))
	for c, n := range m.errors {
		out[c] = n
	}
	return out
}

// reportingSource is a memory store whose List reports listErr and whose
// first Watch reports watchErr from a goroutine of its own, as a source
// reports what it survives.
type reportingSource struct {
	*memory.Store[string, *item]
	listErr, watchErr error
	once              sync.Once
	reported          chan struct{} // closed once the watch's report is made
}

func (s *reportingSource) List(ctx context.Context, opts informer.ListOptions) (informer.ListPage[*item], error) {
	informer.ReportSourceError(ctx, s.listErr)
	return s.Store.List(ctx, opts)
}

func (s *reportingSource) Watch(ctx context.Context, opts informer.WatchOptions) (informer.Watcher[*item], error) {
	w, err := s.Store.Watch(ctx, opts)
	if err == nil {
		s.once.Do(func() {
			go func() {
				defer close(s.reported)
				informer.ReportSourceError(ctx, s.watchErr)
			}()
		})
	}
	return w, err
}

// Without a reflector in its context, ReportSourceError reports nothing and
// says so, for the source to log the error itself.
func TestReportSourceErrorWithoutReflector(t *testing.T) {
	require.False(t, informer.ReportSourceError(t.Context(), errors.New("x")))
	require.False(t, informer.ReportSourceError(t.Context(), nil))
}

// What a source reports reaches the informer's Metrics by class, Health
// (LastError, the counts by class) and the ErrorHandler; the informer goes
// on serving. Health also counts lists and watch restarts.
func TestSourceReportsReachMetricsAndHealth(t *testing.T) {
	store := newSource(t)
	put(t, store, "a", "g", 1)
	decodeErr := fmt.Errorf("key %q: %w", "bad", informer.ErrDecode)
	disconnect := fmt.Errorf("connection lost, resumed: %w", informer.ErrTransient)
	src := &reportingSource{Store: store, listErr: decodeErr, watchErr: disconnect, reported: make(chan struct{})}
	m := newErrorRecorder()
	var mu sync.Mutex
	var handled []error
	inf := newInformer(t, src, func(o *informer.Options[string, *item]) {
		o.Metrics = m
		o.ListWatch.DisableStreamingList = true // one List, then a Watch
		o.Logger = logr.FromSlogHandler(slog.DiscardHandler)
		o.ErrorHandler = func(_ context.Context, err error) {
			mu.Lock()
			defer mu.Unlock()
			handled = append(handled, err)
		}
	})
	start(t, inf)
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	require.NoError(t, informer.WaitForSync(ctx, inf))
	select {
	case <-src.reported:
	case <-ctx.Done():
		t.Fatal("no watch within 30s")
	}

	want := map[informer.ErrorClass]int64{informer.ErrorClassDecode: 1, informer.ErrorClassTransient: 1}
	require.Equal(t, want, m.counts())
	h := inf.Health()
	require.Equal(t, want, h.Errors)
	require.Error(t, h.LastError)
	require.False(t, h.LastErrorAt.IsZero())
	require.True(t, errors.Is(h.LastError, informer.ErrDecode) || errors.Is(h.LastError, informer.ErrTransient), "%v", h.LastError)
	require.Contains(t, h.LastError.Error(), "items: ", "wrapped with the informer's name")
	require.Equal(t, int64(1), h.Lists)
	mu.Lock()
	require.Len(t, handled, 2)
	require.ErrorIs(t, errors.Join(handled...), informer.ErrDecode)
	require.ErrorIs(t, errors.Join(handled...), informer.ErrTransient)
	mu.Unlock()

	// The informer goes on: a write is cached; a dropped watch is
	// re-opened and counted.
	v, err := store.Put(&item{Name: "b", Group: "g", V: 1})
	require.NoError(t, err)
	require.NoError(t, inf.WaitForVersion(ctx, v))
	store.DropWatches()
	for inf.Health().WatchRestarts == 0 {
		select {
		case <-ctx.Done():
			t.Fatal("no watch restart within 30s")
		case <-time.After(10 * time.Millisecond):
		}
	}
	require.Equal(t, int64(1), inf.Health().Lists, "a re-watch, not a relist")
}

// A Health of an informer that met no error has no counts.
func TestHealthCountsZero(t *testing.T) {
	inf := newInformer(t, newSource(t), nil)
	h := inf.Health()
	require.Nil(t, h.Errors)
	require.Zero(t, h.Lists)
	require.Zero(t, h.WatchRestarts)
}
