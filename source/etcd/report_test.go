package etcd_test

import (
	"context"
	"errors"
	"log/slog"
	"maps"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/stretchr/testify/require"

	"github.com/ginformer/ginformer/informer"
	"github.com/ginformer/ginformer/source/etcd"
	"github.com/ginformer/ginformer/source/etcd/etcdtest"
)

// errorRecorder is an informer.Metrics that counts errors by class, and an
// ErrorHandler that keeps the errors.
type errorRecorder struct {
	informer.NoopMetrics
	mu      sync.Mutex
	classes map[informer.ErrorClass]int64
	errs    []error
}

func newErrorRecorder() *errorRecorder {
	return &errorRecorder{classes: map[informer.ErrorClass]int64{}}
}

func (m *errorRecorder) Error(_ string, class informer.ErrorClass) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.classes[class]++
}

func (m *errorRecorder) handle(_ context.Context, err error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.errs = append(m.errs, err)
}

func (m *errorRecorder) counts() map[informer.ErrorClass]int64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	return maps.Clone(m.classes)
}

func (m *errorRecorder) errors() []error {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]error(nil), m.errs...)
}

// runReportingInformer runs an informer over src that reports to rec until
// the test ends, and waits until it has synced.
func runReportingInformer(t *testing.T, src *etcd.Source[obj], rec *errorRecorder) *informer.SharedInformer[string, *etcd.Object[obj]] {
	t.Helper()
	inf, err := informer.NewSharedInformer(informer.Options[string, *etcd.Object[obj]]{
		Name: "etcd", Source: src, KeyFunc: etcd.KeyFunc[obj],
		Metrics: rec, ErrorHandler: rec.handle, Logger: logr.FromSlogHandler(slog.DiscardHandler),
	})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(t.Context())
	var wg sync.WaitGroup
	wg.Go(func() { _ = inf.Run(ctx) })
	t.Cleanup(func() { cancel(); wg.Wait() })
	require.NoError(t, informer.WaitForSync(t.Context(), inf))
	return inf
}

// A value that does not decode, in the initial list and then in the
// watch, reaches the informer: its metrics under class decode, Health's
// last error and counts, its ErrorHandler. The source still counts it, and
// the informer goes on serving.
func TestInformerSeesBadValues(t *testing.T) {
	w := writer{c: client(t), prefix: newPrefix(t)}
	ctx := t.Context()
	_, err := w.put(ctx, obj{Name: "a", Gen: 1})
	require.NoError(t, err)
	_, err = w.putRaw(ctx, "bad", "{not json")
	require.NoError(t, err)
	src := newSource(t, etcd.Options[obj]{Client: w.c, Prefix: w.prefix, StripPrefix: true})
	rec := newErrorRecorder()
	inf := runReportingInformer(t, src, rec)
	require.Equal(t, map[informer.ErrorClass]int64{informer.ErrorClassDecode: 1}, rec.counts())
	h := inf.Health()
	require.Equal(t, map[informer.ErrorClass]int64{informer.ErrorClassDecode: 1}, h.Errors)
	require.ErrorIs(t, h.LastError, informer.ErrDecode)
	require.ErrorIs(t, h.LastError, etcd.ErrDecode)
	var de *etcd.DecodeError
	require.ErrorAs(t, h.LastError, &de)
	require.Equal(t, w.key("bad"), de.Key)

	_, err = w.putRaw(ctx, "a", "garbage")
	require.NoError(t, err)
	v, err := w.put(ctx, obj{Name: "b", Gen: 3})
	require.NoError(t, err)
	wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	require.NoError(t, inf.WaitForVersion(wctx, v))
	_, found := inf.Lister().Get("a")
	require.False(t, found, "a bad value deletes the key's previous state")
	got, found := inf.Lister().Get("b")
	require.True(t, found)
	require.Equal(t, 3, got.Value.Gen)
	require.Equal(t, map[informer.ErrorClass]int64{informer.ErrorClassDecode: 2}, rec.counts())
	require.Equal(t, int64(2), inf.Health().Errors[informer.ErrorClassDecode])
	require.Equal(t, uint64(2), src.DecodeErrors())
	require.Len(t, rec.errors(), 2)
	for _, err := range rec.errors() {
		require.ErrorIs(t, err, informer.ErrDecode)
	}
}

// A watch whose endpoint goes away moves to another one within its stream:
// the reflector neither relists nor re-watches, but the move reaches the
// informer as an error of class transient, and the cache keeps up.
func TestInformerSeesFailover(t *testing.T) {
	target := srv.Etcd().Clients[0].Addr().String()
	var proxies []*etcdtest.Proxy
	var endpoints []string
	for range 2 {
		p, err := etcdtest.NewProxy(target)
		require.NoError(t, err)
		t.Cleanup(p.Close)
		proxies = append(proxies, p)
		endpoints = append(endpoints, p.Endpoint())
	}
	cli := recommendedClient(t, endpoints)
	w := writer{c: client(t), prefix: newPrefix(t)}
	src := newSource(t, etcd.Options[obj]{Client: cli, Prefix: w.prefix, StripPrefix: true,
		LivenessInterval: 500 * time.Millisecond, LivenessTimeout: time.Second})
	rec := newErrorRecorder()
	inf := runReportingInformer(t, src, rec)
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()

	// The watch is on one of the proxies: refusing each in turn moves it
	// once, to the other.
	moved := func() bool {
		for _, err := range rec.errors() {
			if strings.Contains(err.Error(), "moved to") {
				return true
			}
		}
		return false
	}
	for i, p := range proxies {
		p.SetRefuse(true)
		v, err := w.put(ctx, obj{Name: "k", Gen: i + 1})
		require.NoError(t, err)
		require.NoError(t, inf.WaitForVersion(ctx, v), "the cache keeps up")
		p.SetRefuse(false)
		if moved() {
			break
		}
	}
	require.True(t, moved(), "no move reported: %v", rec.errors())
	require.Positive(t, rec.counts()[informer.ErrorClassTransient])
	h := inf.Health()
	require.Positive(t, h.Errors[informer.ErrorClassTransient])
	var found bool
	for _, err := range rec.errors() {
		found = found || errors.Is(err, informer.ErrTransient)
	}
	require.True(t, found)
	require.NotNil(t, h.LastError)
}
