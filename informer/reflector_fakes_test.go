package informer

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
)

// scriptSource is a Source[string] whose answers the test scripts. Each List
// and Watch call is recorded and answered by listFn / watchFn; a watchFn that
// returns a *WatchStream hands it to the test through the streams channel.
type scriptSource struct {
	mu      sync.Mutex
	lists   []ListOptions
	watches []WatchOptions
	listFn  func(n int, opts ListOptions) (ListPage[string], error)
	watchFn func(ctx context.Context, n int, opts WatchOptions) (Watcher[string], error)
	streams chan *WatchStream[string]
}

func newScriptSource() *scriptSource {
	s := &scriptSource{streams: make(chan *WatchStream[string], 16)}
	s.listFn = func(int, ListOptions) (ListPage[string], error) {
		return ListPage[string]{Items: []string{"a", "b"}, Version: "10"}, nil
	}
	s.watchFn = func(ctx context.Context, _ int, opts WatchOptions) (Watcher[string], error) {
		if opts.SendInitialEvents {
			return nil, fmt.Errorf("no streaming: %w", errors.ErrUnsupported)
		}
		w := NewWatchStream[string](ctx, 0)
		s.streams <- w
		return w, nil
	}
	return s
}

func (s *scriptSource) List(_ context.Context, opts ListOptions) (ListPage[string], error) {
	s.mu.Lock()
	s.lists = append(s.lists, opts)
	n := len(s.lists)
	fn := s.listFn
	s.mu.Unlock()
	return fn(n, opts)
}

func (s *scriptSource) Watch(ctx context.Context, opts WatchOptions) (Watcher[string], error) {
	s.mu.Lock()
	s.watches = append(s.watches, opts)
	n := len(s.watches)
	fn := s.watchFn
	s.mu.Unlock()
	return fn(ctx, n, opts)
}

func (s *scriptSource) listCalls() []ListOptions {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]ListOptions(nil), s.lists...)
}

func (s *scriptSource) watchCalls() []WatchOptions {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]WatchOptions(nil), s.watches...)
}

// applierStore is a recordStore that applies watch events itself, as the
// informer's store does, and records the versions it is given.
type applierStore struct {
	recordStore
	versions []string
}

func (s *applierStore) applyEvent(t EventType, obj string, version string, _ bool) error {
	var err error
	switch t {
	case EventAdded:
		err = s.Add(obj)
	case EventModified:
		err = s.Update(obj)
	default:
		err = s.Delete(obj)
	}
	if version != "" {
		s.recordVersion(version)
	}
	return err
}

func (s *applierStore) recordVersion(v string) {
	s.mu.Lock()
	s.versions = append(s.versions, v)
	s.mu.Unlock()
}

func (s *applierStore) recorded() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.versions...)
}

// recordStore is a ReflectorStore[string] that records every call as a line.
type recordStore struct {
	mu      sync.Mutex
	ops     []string
	failAdd error
}

func (s *recordStore) rec(op string) {
	s.mu.Lock()
	s.ops = append(s.ops, op)
	s.mu.Unlock()
}
func (s *recordStore) Add(obj string) error {
	s.rec("add " + obj)
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.failAdd
}
func (s *recordStore) Update(obj string) error { s.rec("update " + obj); return nil }
func (s *recordStore) Delete(obj string) error { s.rec("delete " + obj); return nil }
func (s *recordStore) Replace(objs []string, version string) error {
	s.rec(fmt.Sprintf("replace [%s] @%s", strings.Join(objs, " "), version))
	return nil
}
func (s *recordStore) Resync() error { s.rec("resync"); return nil }
func (s *recordStore) calls() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.ops...)
}
func (s *recordStore) count(op string) int {
	n := 0
	for _, o := range s.calls() {
		if o == op {
			n++
		}
	}
	return n
}
