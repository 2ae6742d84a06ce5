package sourcetest_test

import (
	"cmp"
	"context"
	"encoding/binary"
	"errors"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ginformer/ginformer/informer"
	"github.com/ginformer/ginformer/source/memory"
	"github.com/ginformer/ginformer/source/sourcetest"
)

// env is a full harness over a memory store, which a mutation changes.
type env struct {
	s *memory.Store[string, item]
	h sourcetest.Harness[item]

	mu        sync.Mutex // guards compacted
	compacted string     // the version of the last Compact
}

// newEnv returns an env whose harness uses every optional part of the kit.
func newEnv(t *testing.T) *env {
	e := &env{}
	s, err := memory.New(memory.Options[string, item]{
		KeyFunc: func(i item) (string, error) { return i.name, nil },
		Codec:   itemCodec{},
	})
	require.NoError(t, err)
	t.Cleanup(s.Close)
	e.s = s
	h := minimalHarness(t)
	// minimalHarness writes to its own store: rebuild the writes over s.
	write := func(name string, delta int, mustExist bool) (string, error) {
		cur, _, ok := s.Get(name)
		if ok != mustExist {
			return "", errors.New(name + ": wrong existence")
		}
		return s.Put(item{name: name, gen: cur.gen + delta})
	}
	h.Source = s
	h.Create = func(_ context.Context, name string) (string, error) { return write(name, 1, false) }
	h.Update = func(_ context.Context, name string) (string, error) { return write(name, 1, true) }
	h.Delete = func(_ context.Context, name string) (string, error) {
		v, ok := s.Delete(name)
		if !ok {
			return "", errors.New(name + ": not found")
		}
		return v, nil
	}
	h.Compact = func(context.Context) error {
		e.mu.Lock()
		e.compacted = s.Version()
		e.mu.Unlock()
		s.CompactAll()
		return nil
	}
	h.Bookmark = func(context.Context) error { s.RequestBookmarks(); return nil }
	h.CompareVersions = func(a, b string) int { return cmp.Compare(rev(a), rev(b)) }
	h.DisableReadExact, h.DisableStreamingList = false, false
	h.WaitTimeout = time.Second // a missing event fails fast
	e.h = h
	return e
}

// rev parses a memory version; -1 when it is not one.
func rev(v string) int64 {
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		return -1
	}
	return n
}

func (e *env) head() string { return e.s.Version() }

func (e *env) lastCompacted() string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.compacted
}

// source replaces the harness's source with list and watch functions (nil:
// the store's).
func (e *env) source(list func(context.Context, informer.ListOptions) (informer.ListPage[item], error),
	watch func(context.Context, informer.WatchOptions) (informer.Watcher[item], error),
) {
	if list == nil {
		list = e.s.List
	}
	if watch == nil {
		watch = e.s.Watch
	}
	e.h.Source = informer.SourceFuncs[item]{ListFunc: list, WatchFunc: watch, StreamingList: true}
}

// mapEvents makes the store's watches pass each event through fn, which
// returns the events to forward; fn runs on one goroutine per watch.
func (e *env) mapEvents(fn func(ev informer.Event[item]) []informer.Event[item]) {
	e.source(nil, func(ctx context.Context, o informer.WatchOptions) (informer.Watcher[item], error) {
		w, err := e.s.Watch(ctx, o)
		if err != nil {
			return nil, err
		}
		return rewatch(ctx, w, fn), nil
	})
}

// perWatch is mapEvents with a fresh fn per watch, for fns with state.
func (e *env) perWatch(newFn func() func(ev informer.Event[item]) []informer.Event[item]) {
	e.source(nil, func(ctx context.Context, o informer.WatchOptions) (informer.Watcher[item], error) {
		w, err := e.s.Watch(ctx, o)
		if err != nil {
			return nil, err
		}
		return rewatch(ctx, w, newFn()), nil
	})
}

// rewatch wraps a watcher, passing each event through fn.
func rewatch(ctx context.Context, inner informer.Watcher[item], fn func(informer.Event[item]) []informer.Event[item]) informer.Watcher[item] {
	out := informer.NewWatchStream[item](ctx, 10)
	go func() {
		defer out.Close()
		defer inner.Stop()
		for {
			select {
			case ev, ok := <-inner.Events():
				if !ok {
					return
				}
				for _, e := range fn(ev) {
					if !out.Send(e) {
						return
					}
				}
			case <-out.Done():
				return
			}
		}
	}()
	return out
}

// pullWatch is a watch that reads the store's history only as its consumer
// takes events: for each event it opens a watch from the last version
// delivered, takes one event and stops it, so a consumer that does not read
// falls behind the history. onExpired decides what happens when the history
// it needs was compacted: go on from resume, or end.
func (e *env) pullWatch(onExpired func(out *informer.WatchStream[item], err error) (resume string, goOn bool)) {
	e.source(nil, func(ctx context.Context, o informer.WatchOptions) (informer.Watcher[item], error) {
		if o.SendInitialEvents {
			return e.s.Watch(ctx, o)
		}
		probe, err := e.s.Watch(ctx, o) // validates o.Version
		if err != nil {
			return nil, err
		}
		probe.Stop()
		out := informer.NewWatchStream[item](ctx, 0)
		go func() {
			defer out.Close()
			wctx := out.Context()
			if o.Timeout > 0 {
				var cancel context.CancelFunc
				wctx, cancel = context.WithTimeout(wctx, o.Timeout)
				defer cancel()
			}
			cursor := o.Version
			for {
				ev, ok, err := takeOne(wctx, e.s, cursor)
				if err == nil && ok && ev.Type == informer.EventError {
					err = ev.Err
				}
				switch {
				case errors.Is(err, informer.ErrExpired):
					resume, goOn := onExpired(out, err)
					if !goOn {
						return
					}
					cursor = resume
					continue
				case err != nil:
					out.Send(informer.Event[item]{Type: informer.EventError, Err: err})
					return
				case !ok:
					return
				}
				cursor = ev.Version
				if !out.Send(ev) {
					return
				}
			}
		}()
		return out, nil
	})
}

// takeOne opens a watch from version, takes its first event and stops it.
func takeOne(ctx context.Context, s *memory.Store[string, item], version string) (informer.Event[item], bool, error) {
	w, err := s.Watch(ctx, informer.WatchOptions{Version: version})
	if err != nil {
		return informer.Event[item]{}, false, err
	}
	defer w.Stop()
	ev, ok := <-w.Events()
	return ev, ok, nil
}

// chanWatcher is a Watcher over a channel its producer closes; Stop cancels
// the producer's context.
type chanWatcher struct {
	ch   chan informer.Event[item]
	stop context.CancelFunc
}

func (w *chanWatcher) Events() <-chan informer.Event[item] { return w.ch }
func (w *chanWatcher) Stop()                               { w.stop() }

// bookmarkAhead makes Harness.Bookmark put, ahead of every open watch's
// undelivered events, a Bookmark at the store's current version: a source
// answering a progress request with its head revision instead of the
// revision the watch has delivered.
func (e *env) bookmarkAhead() {
	var mu sync.Mutex
	injects := map[chan chan struct{}]struct{}{}
	e.h.Bookmark = func(ctx context.Context) error {
		mu.Lock()
		defer mu.Unlock()
		for in := range injects {
			done := make(chan struct{})
			select {
			case in <- done:
				<-done
			case <-ctx.Done():
				return ctx.Err()
			}
		}
		return nil
	}
	e.source(nil, func(ctx context.Context, o informer.WatchOptions) (informer.Watcher[item], error) {
		ctx, stop := context.WithCancel(ctx)
		inner, err := e.s.Watch(ctx, o)
		if err != nil {
			stop()
			return nil, err
		}
		w := &chanWatcher{ch: make(chan informer.Event[item]), stop: stop}
		in := make(chan chan struct{})
		mu.Lock()
		injects[in] = struct{}{}
		mu.Unlock()
		go func() {
			defer close(w.ch)
			defer inner.Stop()
			defer func() {
				mu.Lock()
				delete(injects, in)
				mu.Unlock()
			}()
			var queue []informer.Event[item]
			events := inner.Events()
			for {
				var send chan informer.Event[item]
				var head informer.Event[item]
				if len(queue) > 0 {
					send, head = w.ch, queue[0]
				}
				select {
				case send <- head:
					queue = queue[1:]
				case ev, ok := <-events:
					if !ok {
						events = nil
						if len(queue) == 0 {
							return
						}
						continue
					}
					queue = append(queue, ev)
				case done := <-in:
					queue = append([]informer.Event[item]{{Type: informer.EventBookmark, Version: e.head()}}, queue...)
					close(done)
				case <-ctx.Done():
					return
				}
				if events == nil && len(queue) == 0 {
					return
				}
			}
		}()
		return w, nil
	})
}

// bookmarkNext makes every bookmark of a plain watch that has delivered
// every change (its version is the store's) carry the next version instead:
// the version the next write will get, which a reflector resuming from it
// skips. A bookmark with changes still on their way is left alone, so the
// fault shows only on an idle watch.
func (e *env) bookmarkNext() {
	e.mapEvents(func(ev informer.Event[item]) []informer.Event[item] {
		if ev.Type == informer.EventBookmark && !ev.InitialEventsEnd && rev(ev.Version) == rev(e.head()) {
			ev.Version = strconv.FormatInt(rev(ev.Version)+1, 10)
		}
		return []informer.Event[item]{ev}
	})
}

// panickyStop is a Watcher whose second Stop panics.
type panickyStop struct {
	informer.Watcher[item]
	stopped chan struct{}
}

func (w *panickyStop) Stop() { close(w.stopped); w.Watcher.Stop() }

// itemCodec is the snapshot codec of items (encoding/json sees none of
// their fields): the generation as a uvarint, then the name.
type itemCodec struct{}

func (itemCodec) Format() string { return "sourcetest.item/1" }

func (itemCodec) AppendEncode(dst []byte, i item) ([]byte, error) {
	return append(binary.AppendUvarint(dst, uint64(i.gen)), i.name...), nil
}

func (itemCodec) Decode(data []byte) (item, error) {
	gen, n := binary.Uvarint(data)
	if n <= 0 {
		return item{}, errors.New("itemCodec: bad generation")
	}
	return item{name: string(data[n:]), gen: int(gen)}, nil
}

// snapshotSource is the store with a snapshot codec and identity of a
// mutation's choosing.
type snapshotSource struct {
	*memory.Store[string, item]
	codec    informer.Codec[item]
	identity func() string
}

func (s snapshotSource) SnapshotIdentity(context.Context) (string, error) { return s.identity(), nil }
func (s snapshotSource) SnapshotCodec() informer.Codec[item]              { return s.codec }

// snapshotWith makes the harness's source the store with codec and
// identity (nil: the store's).
func (e *env) snapshotWith(codec informer.Codec[item], identity func() string) {
	if codec == nil {
		codec = e.s.SnapshotCodec()
	}
	if identity == nil {
		identity = func() string { id, _ := e.s.SnapshotIdentity(context.Background()); return id }
	}
	e.h.Source = snapshotSource{Store: e.s, codec: codec, identity: identity}
}

// codecFuncs is a codec of items made of functions; nil ones are
// itemCodec's.
type codecFuncs struct {
	encode func(dst []byte, i item) ([]byte, error)
	decode func(data []byte) (item, error)
}

func (codecFuncs) Format() string { return "sourcetest.item/mutated" }

func (c codecFuncs) AppendEncode(dst []byte, i item) ([]byte, error) {
	if c.encode == nil {
		return itemCodec{}.AppendEncode(dst, i)
	}
	return c.encode(dst, i)
}

func (c codecFuncs) Decode(data []byte) (item, error) {
	if c.decode == nil {
		return itemCodec{}.Decode(data)
	}
	return c.decode(data)
}
