package informer_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ginformer/ginformer/informer"
	"github.com/ginformer/ginformer/source/memory"
)

// item is the object type of the informer tests.
type item struct {
	Name  string
	Group string
	V     int
}

func itemKey(it *item) (string, error) {
	if it.Name == "" {
		return "", errors.New("item without a name")
	}
	return it.Name, nil
}

var byGroup = informer.Index[*item]{Name: "group", Func: func(dst []string, it *item) ([]string, error) {
	if it.Group == "bad" {
		return dst, errors.New("bad group")
	}
	return append(dst, it.Group), nil
}}

func newSource(t *testing.T) *memory.Store[string, *item] {
	t.Helper()
	src, err := memory.New(memory.Options[string, *item]{KeyFunc: itemKey})
	require.NoError(t, err)
	t.Cleanup(src.Close)
	return src
}

func put(t *testing.T, src *memory.Store[string, *item], name, group string, v int) {
	t.Helper()
	_, err := src.Put(&item{Name: name, Group: group, V: v})
	require.NoError(t, err)
}

func newInformer(t *testing.T, src informer.Source[*item], mod func(*informer.Options[string, *item])) *informer.SharedInformer[string, *item] {
	t.Helper()
	opts := informer.Options[string, *item]{Source: src, KeyFunc: itemKey, Indexes: []informer.Index[*item]{byGroup}, Name: "items"}
	if mod != nil {
		mod(&opts)
	}
	inf, err := informer.NewSharedInformer(opts)
	require.NoError(t, err)
	return inf
}

// start runs inf until the test ends (or stop is called) and checks that Run
// returned nil and left nothing behind.
func start(t *testing.T, inf *informer.SharedInformer[string, *item]) (stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- inf.Run(ctx) }()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cancel()
			// A stop before the goroutine reached Run: Run refuses the done
			// context and starts nothing.
			if err := <-done; !errors.Is(err, context.Canceled) {
				require.NoError(t, err)
			}
		})
	}
	t.Cleanup(stop)
	return stop
}

// calls records a handler's calls as strings; it is a Handler.
type calls struct {
	mu   sync.Mutex
	log  []string
	gate chan struct{} // non-nil: every call waits to receive from it
}

func (c *calls) add(s string) {
	if c.gate != nil {
		<-c.gate
	}
	c.mu.Lock()
	c.log = append(c.log, s)
	c.mu.Unlock()
}
func (c *calls) OnAdd(it *item, initial bool) {
	if initial {
		c.add(fmt.Sprintf("add* %s=%d", it.Name, it.V))
		return
	}
	c.add(fmt.Sprintf("add %s=%d", it.Name, it.V))
}
func (c *calls) OnUpdate(old, it *item) {
	c.add(fmt.Sprintf("update %s=%d->%d", it.Name, old.V, it.V))
}
func (c *calls) OnDelete(d informer.Deletion[string, *item]) {
	s := fmt.Sprintf("delete %s=%d", d.Key, d.Object.V)
	if d.FinalStateUnknown {
		s += "?"
	}
	c.add(s)
}
func (c *calls) got() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.log)
}
func (c *calls) reset() {
	c.mu.Lock()
	c.log = nil
	c.mu.Unlock()
}

func TestNewSharedInformerValidates(t *testing.T) {
	_, err := informer.NewSharedInformer(informer.Options[string, *item]{KeyFunc: itemKey})
	require.ErrorIs(t, err, informer.ErrInvalidOptions)
	_, err = informer.NewSharedInformer(informer.Options[string, *item]{Source: newSource(t)})
	require.ErrorIs(t, err, informer.ErrInvalidOptions)
	_, err = informer.NewSharedInformer(informer.Options[string, *item]{Source: newSource(t), KeyFunc: itemKey,
		Indexes: []informer.Index[*item]{byGroup, byGroup}})
	require.ErrorIs(t, err, informer.ErrIndexExists)
	// Bad list and watch options fail at construction, not at Run.
	_, err = informer.NewSharedInformer(informer.Options[string, *item]{Source: newSource(t), KeyFunc: itemKey,
		ListWatch: informer.ListWatchOptions{StreamingListTimeout: -1}})
	require.ErrorIs(t, err, informer.ErrInvalidOptions)
}

func TestInformerInitialListThenEventsInOrder(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		src := newSource(t)
		put(t, src, "a", "g1", 1)
		put(t, src, "b", "g1", 1)
		inf := newInformer(t, src, nil)
		h := &calls{}
		reg, err := inf.AddHandler(h, informer.HandlerOptions{})
		require.NoError(t, err)
		start(t, inf)
		require.NoError(t, informer.WaitForSync(t.Context(), inf, reg))
		assert.True(t, inf.HasSynced())
		assert.True(t, reg.HasSynced())
		assert.ElementsMatch(t, []string{"add* a=1", "add* b=1"}, h.got(), "the first list arrives as initial adds")
		h.reset()

		put(t, src, "c", "g2", 1)
		put(t, src, "a", "g2", 2)
		put(t, src, "a", "g2", 3)
		src.Delete("b")
		synctest.Wait()
		assert.Equal(t, []string{"add c=1", "update a=1->2", "update a=2->3", "delete b=1"}, h.got())

		lister := inf.Lister()
		assert.Equal(t, 2, lister.Len())
		got, ok := lister.Get("a")
		require.True(t, ok)
		assert.Equal(t, 3, got.V)
		keys, err := lister.IndexKeys("group", "g2")
		require.NoError(t, err)
		assert.ElementsMatch(t, []string{"a", "c"}, slices.Collect(keys))
		assert.Equal(t, src.Version(), inf.LastSyncVersion())
		assert.Zero(t, inf.QueueDepth())
		assert.Zero(t, reg.Backlog())
	})
}

func TestInformerRunTwice(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		inf := newInformer(t, newSource(t), nil)
		start(t, inf)
		synctest.Wait()
		require.ErrorIs(t, inf.Run(t.Context()), informer.ErrAlreadyStarted)
	})
}

func TestInformerWaitForSyncHonoursContext(t *testing.T) {
	src := newSource(t)
	inf := newInformer(t, src, nil) // never started
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	require.ErrorIs(t, informer.WaitForSync(ctx, inf), context.Canceled)
}

// TestInformerLateHandlerNoGapNoDuplicate adds a handler while a writer is
// busy and checks, per key, that the handler's story is complete: it starts
// with an add, every update's old state is exactly the state delivered
// before it, and it ends at the source's final state.
func TestInformerLateHandlerNoGapNoDuplicate(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		src := newSource(t)
		for i := range 20 {
			put(t, src, fmt.Sprint("k", i), "g", 0)
		}
		inf := newInformer(t, src, func(o *informer.Options[string, *item]) { o.BatchSize = 3 })
		start(t, inf)
		require.NoError(t, informer.WaitForSync(t.Context(), inf))

		var wg sync.WaitGroup
		wg.Go(func() {
			for v := 1; v <= 50; v++ {
				for i := range 20 {
					_, _ = src.Put(&item{Name: fmt.Sprint("k", i), Group: "g", V: v})
				}
				if v%10 == 0 {
					runtimeYield()
				}
			}
		})
		runtimeYield()
		story := &storyHandler{last: map[string]int{}}
		reg, err := inf.AddHandler(story, informer.HandlerOptions{})
		require.NoError(t, err)
		wg.Wait()
		synctest.Wait()
		require.True(t, reg.HasSynced())
		story.mu.Lock()
		defer story.mu.Unlock()
		assert.Empty(t, story.errs)
		for i := range 20 {
			assert.Equal(t, 50, story.last[fmt.Sprint("k", i)], "k%d ends at the final state", i)
		}
	})
}

func runtimeYield() { time.Sleep(time.Microsecond) } // lets other goroutines of the bubble run

type storyHandler struct {
	mu   sync.Mutex
	last map[string]int
	errs []string
}

func (s *storyHandler) OnAdd(it *item, _ bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.last[it.Name]; ok {
		s.errs = append(s.errs, "duplicate add of "+it.Name)
	}
	s.last[it.Name] = it.V
}
func (s *storyHandler) OnUpdate(old, it *item) {
	s.mu.Lock()
	defer s.mu.Unlock()
	prev, ok := s.last[it.Name]
	switch {
	case !ok:
		s.errs = append(s.errs, "update before add of "+it.Name)
	case prev != old.V:
		s.errs = append(s.errs, fmt.Sprintf("gap on %s: had %d, update from %d", it.Name, prev, old.V))
	case it.V <= old.V:
		s.errs = append(s.errs, fmt.Sprintf("duplicate on %s: %d -> %d", it.Name, old.V, it.V))
	}
	s.last[it.Name] = it.V
}
func (s *storyHandler) OnDelete(d informer.Deletion[string, *item]) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.last, d.Key)
}

func TestInformerRemoveReturnsAtOnceAndDoneWaitsForTheHandler(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		src := newSource(t)
		put(t, src, "a", "g", 1)
		inf := newInformer(t, src, nil)
		h := &calls{gate: make(chan struct{})}
		reg, err := inf.AddHandler(h, informer.HandlerOptions{})
		require.NoError(t, err)
		start(t, inf)
		synctest.Wait() // the handler is now blocked in OnAdd
		reg.Remove()    // does not wait for the call in progress
		synctest.Wait()
		select {
		case <-reg.Done():
			t.Fatal("Done closed while the handler was still running")
		default:
		}
		close(h.gate)
		<-reg.Done()
		put(t, src, "b", "g", 1)
		synctest.Wait()
		assert.Equal(t, []string{"add* a=1"}, h.got(), "nothing after removal")
		reg.Remove() // idempotent
	})
}

// Remove from inside the handler's own call must not deadlock.
func TestInformerRemoveFromInsideTheHandler(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		src := newSource(t)
		inf := newInformer(t, src, nil)
		var reg *informer.Registration[string, *item]
		var mu sync.Mutex
		var got []string
		ready := make(chan struct{})
		reg, err := inf.AddHandler(informer.HandlerFuncs[string, *item]{AddFunc: func(it *item, _ bool) {
			<-ready
			mu.Lock()
			got = append(got, it.Name)
			mu.Unlock()
			reg.Remove()
		}}, informer.HandlerOptions{})
		require.NoError(t, err)
		close(ready)
		start(t, inf)
		require.NoError(t, informer.WaitForSync(t.Context(), inf))
		put(t, src, "a", "g", 1)
		put(t, src, "b", "g", 1)
		<-reg.Done()
		mu.Lock()
		defer mu.Unlock()
		assert.Equal(t, []string{"a"}, got, "the first call removed the handler")
	})
}

func TestInformerRemoveBeforeRunClosesDone(t *testing.T) {
	inf := newInformer(t, newSource(t), nil)
	reg, err := inf.AddHandler(&calls{}, informer.HandlerOptions{})
	require.NoError(t, err)
	reg.Remove()
	<-reg.Done()
}

func TestInformerPerHandlerResync(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		src := newSource(t)
		put(t, src, "a", "g", 1)
		put(t, src, "b", "g", 1)
		inf := newInformer(t, src, nil)
		fast, never, slow := &calls{}, &calls{}, &calls{}
		_, err := inf.AddHandler(fast, informer.HandlerOptions{ResyncPeriod: 10 * time.Second})
		require.NoError(t, err)
		_, err = inf.AddHandler(never, informer.HandlerOptions{})
		require.NoError(t, err)
		_, err = inf.AddHandler(slow, informer.HandlerOptions{ResyncPeriod: 30 * time.Second})
		require.NoError(t, err)
		start(t, inf)
		require.NoError(t, informer.WaitForSync(t.Context(), inf))
		time.Sleep(35 * time.Second)
		synctest.Wait()
		countResyncs := func(c *calls) int {
			n := 0
			for _, s := range c.got() {
				if s == "update a=1->1" {
					n++
				}
			}
			return n
		}
		assert.Equal(t, 3, countResyncs(fast), "every 10 s")
		assert.Equal(t, 1, countResyncs(slow), "every 30 s")
		assert.Equal(t, 0, countResyncs(never), "no resync period, no resync")
	})
}

func TestInformerHandlerPanicIsRecovered(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		src := newSource(t)
		var mu sync.Mutex
		var errs []error
		inf := newInformer(t, src, func(o *informer.Options[string, *item]) {
			o.ErrorHandler = func(_ context.Context, err error) { mu.Lock(); errs = append(errs, err); mu.Unlock() }
		})
		var seen []string
		_, err := inf.AddHandler(informer.HandlerFuncs[string, *item]{AddFunc: func(it *item, _ bool) {
			seen = append(seen, it.Name)
			if it.Name == "boom" {
				panic("handler exploded")
			}
		}}, informer.HandlerOptions{Name: "fragile"})
		require.NoError(t, err)
		start(t, inf)
		put(t, src, "boom", "g", 1)
		synctest.Wait()
		put(t, src, "after", "g", 1)
		synctest.Wait()
		assert.Equal(t, []string{"boom", "after"}, seen)
		mu.Lock()
		defer mu.Unlock()
		require.Len(t, errs, 1)
		assert.ErrorIs(t, errs[0], informer.ErrHandlerPanic)
		assert.Contains(t, errs[0].Error(), "fragile")
	})
}

// atomicityProbe checks, after every batch the informer commits, that the
// cache never mixes generations: all items have the same V.
type atomicityProbe struct {
	informer.NoopMetrics
	lister  func() informer.Lister[string, *item]
	mu      sync.Mutex
	batches int
	mixed   []string
}

func (p *atomicityProbe) ProcessingLatency(string, time.Duration) {
	l := p.lister()
	vs := map[int]int{}
	for _, it := range l.All() {
		vs[it.V]++
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.batches++
	if len(vs) > 1 {
		p.mixed = append(p.mixed, fmt.Sprint(vs))
	}
}

func TestInformerRelistIsAtomic(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		src := newSource(t)
		for i := range 100 {
			put(t, src, fmt.Sprint("k", i), "g", 1)
		}
		probe := &atomicityProbe{}
		inf := newInformer(t, src, func(o *informer.Options[string, *item]) {
			o.BatchSize = 7
			o.Metrics = probe
			o.ListWatch.DisableStreamingList = true
		})
		probe.lister = inf.Lister
		h := &calls{}
		_, err := inf.AddHandler(h, informer.HandlerOptions{})
		require.NoError(t, err)
		start(t, inf)
		require.NoError(t, informer.WaitForSync(t.Context(), inf))
		synctest.Wait()
		h.reset()

		// The watch breaks (transient); while the reflector backs off,
		// every object changes and the history is compacted, so the
		// re-watch finds its version expired and the changes can only come
		// back through a relist. (An expired version would relist at once,
		// and a watch racing the writes could deliver some of them.)
		src.BreakWatches(nil)
		synctest.Wait()
		for i := range 100 {
			put(t, src, fmt.Sprint("k", i), "g", 2)
		}
		src.CompactAll()
		time.Sleep(time.Minute)
		synctest.Wait()
		for _, it := range inf.Lister().All() {
			require.Equal(t, 2, it.V)
		}
		assert.Len(t, h.got(), 100, "one update per object")
		probe.mu.Lock()
		defer probe.mu.Unlock()
		assert.Empty(t, probe.mixed, "no batch left the cache mixing the old and the new list")
	})
}

func TestInformerRelistTombstonesDeletionsItMissed(t *testing.T) {
	for _, versioned := range []bool{true, false} {
		t.Run(fmt.Sprint("versioned=", versioned), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				src := newSource(t)
				put(t, src, "stays", "g", 1)
				put(t, src, "goes", "g", 1)
				inf := newInformer(t, src, func(o *informer.Options[string, *item]) {
					o.ListWatch.DisableStreamingList = true
					if !versioned {
						o.ObjectVersion = func(*item) string { return "" }
					}
				})
				h := &calls{}
				_, err := inf.AddHandler(h, informer.HandlerOptions{})
				require.NoError(t, err)
				start(t, inf)
				require.NoError(t, informer.WaitForSync(t.Context(), inf))
				synctest.Wait()
				h.reset()
				// An outage: while the reflector waits out its backoff, a
				// key is deleted and the history compacted, so the re-watch
				// finds its version expired and relists.
				src.BreakWatches(nil)
				synctest.Wait()
				src.Delete("goes")
				src.CompactAll()
				time.Sleep(time.Minute)
				synctest.Wait()
				if versioned {
					// The memory source knows its objects' versions: the
					// relist delivers only what changed.
					assert.Equal(t, []string{"delete goes=1?"}, h.got())
					return
				}
				// As in client-go, a relist delivers an update for every listed
				// object; the deletion nobody watched arrives as a tombstone.
				assert.ElementsMatch(t, []string{"update stays=1->1", "delete goes=1?"}, h.got())
			})
		})
	}
}

func TestInformerBadObjectsAreReportedAndDeletesKept(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		src := newSource(t)
		var mu sync.Mutex
		var errs []error
		inf := newInformer(t, src, func(o *informer.Options[string, *item]) {
			o.ErrorHandler = func(_ context.Context, err error) { mu.Lock(); errs = append(errs, err); mu.Unlock() }
			o.Transform = func(it *item) (*item, error) {
				if it.Group == "untransformable" {
					return nil, errors.New("cannot transform")
				}
				return it, nil
			}
		})
		h := &calls{}
		_, err := inf.AddHandler(h, informer.HandlerOptions{})
		require.NoError(t, err)
		start(t, inf)
		require.NoError(t, informer.WaitForSync(t.Context(), inf))

		put(t, src, "x", "g", 1)
		synctest.Wait()
		put(t, src, "x", "bad", 2) // the index function refuses it: the cache keeps x=1
		synctest.Wait()
		got, _ := inf.Lister().Get("x")
		assert.Equal(t, 1, got.V)
		put(t, src, "y", "untransformable", 1)
		synctest.Wait()
		put(t, src, "x", "g", 3) // a later good value is picked up
		synctest.Wait()
		got, _ = inf.Lister().Get("x")
		assert.Equal(t, 3, got.V)
		_, ok := inf.Lister().Get("y")
		assert.False(t, ok)
		src.Delete("x")
		synctest.Wait()
		assert.Equal(t, []string{"add x=1", "update x=1->3", "delete x=3"}, h.got(), "the refused state is never shown")
		mu.Lock()
		defer mu.Unlock()
		require.Len(t, errs, 2)
		assert.ErrorIs(t, errs[0], informer.ErrIndexFunc)
		assert.ErrorIs(t, errs[1], informer.ErrTransform)
	})
}

func TestInformerKeepsNewestStorableStateOfABatch(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		src := newSource(t)
		inf := newInformer(t, src, func(o *informer.Options[string, *item]) { o.ErrorHandler = func(context.Context, error) {} })
		h := &calls{}
		_, err := inf.AddHandler(h, informer.HandlerOptions{})
		require.NoError(t, err)
		start(t, inf)
		require.NoError(t, informer.WaitForSync(t.Context(), inf))
		// Both changes reach the queue before the processing loop runs, so
		// they are popped together: x=1 is kept, x=bad refused.
		put(t, src, "x", "g", 1)
		put(t, src, "x", "bad", 2)
		synctest.Wait()
		got, ok := inf.Lister().Get("x")
		require.True(t, ok)
		assert.Equal(t, 1, got.V)
		assert.Equal(t, []string{"add x=1"}, h.got())
	})
}
