package informer_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ginformer/ginformer/informer"
	"github.com/ginformer/ginformer/source/memory"
)

// gatedSource is a memory store whose lists (plain or streaming) wait, once
// armed, until the gate is opened: a test makes its changes while the
// reflector is stuck in a relist, then lets the relist read them all at once.
// Embedding the store keeps its ObjectVersion.
type gatedSource struct {
	*memory.Store[string, *item]
	mu    sync.Mutex
	gate  chan struct{} // nil: lists pass
	lists chan struct{} // a list reached the gate
}

func (s *gatedSource) wait(ctx context.Context) error {
	s.mu.Lock()
	gate := s.gate
	s.mu.Unlock()
	if gate == nil {
		return nil
	}
	select {
	case s.lists <- struct{}{}:
	default:
	}
	select {
	case <-gate:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (s *gatedSource) List(ctx context.Context, opts informer.ListOptions) (informer.ListPage[*item], error) {
	if opts.Continue == "" {
		if err := s.wait(ctx); err != nil {
			return informer.ListPage[*item]{}, err
		}
	}
	return s.Store.List(ctx, opts)
}

func (s *gatedSource) Watch(ctx context.Context, opts informer.WatchOptions) (informer.Watcher[*item], error) {
	if opts.SendInitialEvents {
		if err := s.wait(ctx); err != nil {
			return nil, err
		}
	}
	return s.Store.Watch(ctx, opts)
}

// noteCounter records the notifications a handler receives after the
// initial sync, by kind and key.
type noteCounter struct {
	mu                     sync.Mutex
	synced                 bool
	adds, updates, deletes map[string]int
	unknownDeletes         int
	initial                int
	target                 int
	reached                chan struct{}
	reachedOnce            sync.Once
}

func newNoteCounter() *noteCounter {
	return &noteCounter{adds: map[string]int{}, updates: map[string]int{}, deletes: map[string]int{}, reached: make(chan struct{})}
}

func (c *noteCounter) note(m map[string]int, key string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.synced {
		c.initial++
		return
	}
	m[key]++
	if c.target > 0 && len(c.adds)+len(c.updates)+len(c.deletes) >= c.target {
		c.reachedOnce.Do(func() { close(c.reached) })
	}
}

func (c *noteCounter) OnAdd(it *item, _ bool) { c.note(c.adds, it.Name) }
func (c *noteCounter) OnUpdate(_, it *item)   { c.note(c.updates, it.Name) }
func (c *noteCounter) OnDelete(d informer.Deletion[string, *item]) {
	if d.FinalStateUnknown {
		c.mu.Lock()
		c.unknownDeletes++
		c.mu.Unlock()
	}
	c.note(c.deletes, d.Key)
}

func keysOf(m map[string]int) map[string]bool {
	out := make(map[string]bool, len(m))
	for k, n := range m {
		if n != 1 {
			out[fmt.Sprintf("%s×%d", k, n)] = true
			continue
		}
		out[k] = true
	}
	return out
}

// TestRelistDeliversOnlyChanges: with a source that knows its objects'
// versions (the memory store), a relist of 10k objects of which 1% changed
// delivers exactly the updated, added and deleted objects, and a reader
// polling the cache meanwhile sees the relist all at once or not at all.
func TestRelistDeliversOnlyChanges(t *testing.T) {
	for _, streaming := range []bool{false, true} {
		t.Run(fmt.Sprint("streaming=", streaming), func(t *testing.T) {
			const n, changed, added, deleted = 10_000, 100, 20, 30
			store, err := memory.New(memory.Options[string, *item]{KeyFunc: itemKey})
			require.NoError(t, err)
			t.Cleanup(store.Close)
			src := &gatedSource{Store: store, lists: make(chan struct{}, 1)}
			for i := range n {
				_, err := store.Put(&item{Name: fmt.Sprint("k", i), Group: "g", V: 1})
				require.NoError(t, err)
			}
			inf := newInformer(t, src, func(o *informer.Options[string, *item]) {
				o.ListWatch.DisableStreamingList = !streaming
				o.ListWatch.PageSize = 500
				o.ListWatch.Backoff = informer.Backoff{Initial: time.Millisecond, Max: time.Millisecond}
				o.ErrorHandler = func(context.Context, error) {}
			})
			h := newNoteCounter()
			reg, err := inf.AddHandler(h, informer.HandlerOptions{})
			require.NoError(t, err)
			start(t, inf)
			waitCh(t, reg.Synced(), "initial sync")
			h.mu.Lock()
			require.Equal(t, n, h.initial)
			h.synced = true
			h.target = changed + added + deleted
			h.mu.Unlock()

			// The reader: every consistent snapshot must be all before or
			// all after the relist.
			readerDone := make(chan struct{})
			stopReader := make(chan struct{})
			var before, after, torn atomic.Int64
			go func() {
				defer close(readerDone)
				for {
					select {
					case <-stopReader:
						return
					default:
					}
					v2, gone := 0, 0
					present := map[string]bool{}
					for _, it := range inf.Lister().List() {
						if it.V == 2 {
							v2++
						}
						present[it.Name] = true
					}
					for i := range deleted {
						if !present[fmt.Sprint("k", n-1-i)] {
							gone++
						}
					}
					switch {
					case v2 == 0 && gone == 0:
						before.Add(1)
					case v2 == changed+added && gone == deleted:
						after.Add(1)
					default:
						torn.Add(1)
					}
				}
			}()

			// Hold the next list, break the watch (version expired: a
			// relist), and change the source while the relist waits.
			src.mu.Lock()
			src.gate = make(chan struct{})
			src.mu.Unlock()
			store.BreakWatches(fmt.Errorf("test: %w", informer.ErrExpired))
			waitCh(t, src.lists, "the relist to reach the source")
			for i := range changed {
				_, err := store.Put(&item{Name: fmt.Sprint("k", i), Group: "g", V: 2})
				require.NoError(t, err)
			}
			for i := range added {
				_, err := store.Put(&item{Name: fmt.Sprint("new", i), Group: "g", V: 2})
				require.NoError(t, err)
			}
			for i := range deleted {
				_, existed := store.Delete(fmt.Sprint("k", n-1-i))
				require.True(t, existed)
			}
			store.CompactAll() // the old version is gone for good
			src.mu.Lock()
			close(src.gate)
			src.gate = nil
			src.mu.Unlock()

			waitCh(t, h.reached, "the relist's notifications")
			// A last write through the watch: once the handler has it, every
			// notification of the relist has been delivered.
			_, err = store.Put(&item{Name: "sentinel", Group: "g", V: 3})
			require.NoError(t, err)
			require.Eventually(t, func() bool {
				h.mu.Lock()
				defer h.mu.Unlock()
				return h.adds["sentinel"] == 1
			}, 10*time.Second, time.Millisecond)
			require.Eventually(t, func() bool { return after.Load() > 0 }, 10*time.Second, time.Millisecond,
				"the reader never saw the relist")
			close(stopReader)
			<-readerDone

			h.mu.Lock()
			defer h.mu.Unlock()
			wantUpdated, wantAdded, wantDeleted := map[string]bool{}, map[string]bool{"sentinel": true}, map[string]bool{}
			for i := range changed {
				wantUpdated[fmt.Sprint("k", i)] = true
			}
			for i := range added {
				wantAdded[fmt.Sprint("new", i)] = true
			}
			for i := range deleted {
				wantDeleted[fmt.Sprint("k", n-1-i)] = true
			}
			assert.Equal(t, wantUpdated, keysOf(h.updates), "updates: exactly the changed objects, once each")
			assert.Equal(t, wantAdded, keysOf(h.adds), "adds: exactly the new objects")
			assert.Equal(t, wantDeleted, keysOf(h.deletes), "deletes: exactly the deleted objects")
			assert.Equal(t, deleted, h.unknownDeletes, "deletions seen by a relist have an unknown final state")
			assert.Zero(t, torn.Load(), "a reader saw part of the relist (%d before, %d after)", before.Load(), after.Load())
			assert.Equal(t, n-deleted+added+1, inf.Lister().Len())
			t.Logf("reader snapshots: %d before, %d after, %d torn", before.Load(), after.Load(), torn.Load())
		})
	}
}

// TestRelistWithoutObjectVersion: an ObjectVersion returning "" turns the
// source's off: a relist delivers every object again, as client-go does.
func TestRelistWithoutObjectVersion(t *testing.T) {
	store := newSource(t)
	src := &gatedSource{Store: store, lists: make(chan struct{}, 1)}
	const n = 50
	for i := range n {
		_, err := store.Put(&item{Name: fmt.Sprint("k", i), Group: "g", V: 1})
		require.NoError(t, err)
	}
	inf := newInformer(t, src, func(o *informer.Options[string, *item]) {
		o.ObjectVersion = func(*item) string { return "" }
		o.ListWatch.Backoff = informer.Backoff{Initial: time.Millisecond, Max: time.Millisecond}
		o.ErrorHandler = func(context.Context, error) {}
	})
	h := newNoteCounter()
	reg, err := inf.AddHandler(h, informer.HandlerOptions{})
	require.NoError(t, err)
	start(t, inf)
	waitCh(t, reg.Synced(), "initial sync")
	h.mu.Lock()
	h.synced, h.target = true, n
	h.mu.Unlock()
	store.BreakWatches(fmt.Errorf("test: %w", informer.ErrExpired))
	waitCh(t, h.reached, "an update for every object")
	h.mu.Lock()
	defer h.mu.Unlock()
	assert.Len(t, h.updates, n)
	assert.Empty(t, h.adds)
	assert.Empty(t, h.deletes)
}

func waitCh[E any](t *testing.T, ch <-chan E, what string) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(20 * time.Second):
		t.Fatalf("timed out waiting for %s", what)
	}
}
