package informer

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/go-logr/logr/funcr"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// closingStore is a recordStore that refuses every write with ErrClosed
// once closed; onClose, if set, runs at the first refusal (an informer's
// context ends before its store is closed).
type closingStore struct {
	recordStore
	mu      sync.Mutex
	closed  bool
	onClose func()
}

func (s *closingStore) close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closed = true
}

func (s *closingStore) refuse() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.closed {
		return nil
	}
	if s.onClose != nil {
		s.onClose()
		s.onClose = nil
	}
	return ErrClosed
}

func (s *closingStore) Add(obj string) error {
	if err := s.refuse(); err != nil {
		return err
	}
	return s.recordStore.Add(obj)
}

func (s *closingStore) Replace(objs []string, version string) error {
	if err := s.refuse(); err != nil {
		return err
	}
	return s.recordStore.Replace(objs, version)
}

func (s *closingStore) Resync() error {
	if err := s.refuse(); err != nil {
		return err
	}
	return s.recordStore.Resync()
}

// applierClosingStore is a closingStore that applies watch events itself,
// as the informer's store does.
type applierClosingStore struct{ closingStore }

func (s *applierClosingStore) applyEvent(t EventType, obj string, _ string, _ bool) error {
	if err := s.refuse(); err != nil {
		return err
	}
	return s.recordStore.Add(obj)
}

func (s *applierClosingStore) recordVersion(string) {}

// errorCounter counts the errors Metrics is told of.
type errorCounter struct {
	NoopMetrics
	mu     sync.Mutex
	errors int
}

func (m *errorCounter) Error(string, ErrorClass) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.errors++
}

// A store that refuses a write with ErrClosed is being stopped by its
// owner: the reflector stops quietly, logging no error and telling neither
// the ErrorHandler nor Metrics, whether its context ended first (an
// informer stopping while the reflector applies an event it had already
// received) or not (issue 21: "list and watch failing ... informer: closed"
// was logged at error level on every shutdown).
func TestReflectorStopsQuietlyWhenTheStoreIsClosed(t *testing.T) {
	for _, tc := range []struct {
		name      string
		applier   bool // the store applies events itself (the informer's)
		atList    bool // refused at the list's Replace, not at a watch event
		ctxEnds   bool // the context ends as the store closes
		streaming bool
	}{
		{name: "watch event, context ended", ctxEnds: true},
		{name: "watch event, store closed only"},
		{name: "watch event applied by the store, context ended", applier: true, ctxEnds: true},
		{name: "watch event applied by the store, store closed only", applier: true},
		{name: "list, context ended", atList: true, ctxEnds: true},
		{name: "list, store closed only", atList: true},
		{name: "streaming list, store closed only", atList: true, streaming: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				src := newScriptSource()
				if tc.streaming {
					src.watchFn = func(ctx context.Context, _ int, opts WatchOptions) (Watcher[string], error) {
						w := NewWatchStream[string](ctx, 4)
						if opts.SendInitialEvents {
							w.Send(Event[string]{Type: EventAdded, Object: "a"})
							w.Send(Event[string]{Type: EventBookmark, Version: "10", InitialEventsEnd: true})
						}
						src.streams <- w
						return w, nil
					}
				}
				ctx, cancel := context.WithCancel(t.Context())
				defer cancel()
				cs := &closingStore{}
				var store ReflectorStore[string] = cs
				if tc.applier {
					as := &applierClosingStore{}
					cs, store = &as.closingStore, as
				}
				if tc.ctxEnds {
					cs.onClose = cancel
				}
				var mu sync.Mutex
				var handled []error
				var logged []string
				m := &errorCounter{}
				r := newTestReflector(t, src, store, func(o *ReflectorOptions[string]) {
					o.DisableStreamingList = !tc.streaming
					o.Metrics = m
					o.ErrorHandler = func(_ context.Context, err error) {
						mu.Lock()
						defer mu.Unlock()
						handled = append(handled, err)
					}
					o.Logger = funcr.New(func(prefix, args string) {
						mu.Lock()
						defer mu.Unlock()
						logged = append(logged, args)
					}, funcr.Options{})
				})
				if tc.atList {
					cs.close()
				}
				done := make(chan error, 1)
				go func() { done <- r.Run(ctx) }()
				if !tc.atList {
					w := <-src.streams
					cs.close()
					require.True(t, w.Send(Event[string]{Type: EventAdded, Object: "c", Version: "11"}))
				}
				select {
				case err := <-done:
					require.NoError(t, err)
				case <-time.After(time.Hour):
					cancel()
					<-done
					t.Error("Run went on after its store was closed")
				}
				mu.Lock()
				defer mu.Unlock()
				assert.Empty(t, handled, "ErrorHandler")
				assert.Zero(t, m.errors, "Metrics.Error")
				for _, l := range logged {
					assert.False(t, strings.Contains(l, `"error"`) || strings.Contains(l, "closed"), "logged: %s", l)
				}
			})
		})
	}
}

// Other store errors are still reported, and the reflector goes on.
func TestReflectorReportsOtherStoreErrors(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		src, store := newScriptSource(), &recordStore{failAdd: errors.New("boom")}
		var mu sync.Mutex
		var handled []error
		r := newTestReflector(t, src, store, func(o *ReflectorOptions[string]) {
			o.DisableStreamingList = true
			o.ErrorHandler = func(_ context.Context, err error) {
				mu.Lock()
				defer mu.Unlock()
				handled = append(handled, err)
			}
		})
		stop := runReflector(t, r)
		defer stop()
		w := <-src.streams
		require.True(t, w.Send(Event[string]{Type: EventAdded, Object: "c", Version: "11"}))
		require.True(t, w.Send(Event[string]{Type: EventAdded, Object: "d", Version: "12"}), "still watching")
		synctest.Wait()
		mu.Lock()
		defer mu.Unlock()
		require.Len(t, handled, 2)
		assert.ErrorContains(t, handled[0], "boom")
	})
}
