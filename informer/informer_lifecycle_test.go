package informer_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ginformer/ginformer/informer"
)

func TestInformerHandlerSyncStates(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		src := newSource(t)
		put(t, src, "a", "g", 1)
		inf := newInformer(t, src, nil)
		gate := make(chan struct{})
		slow := &calls{gate: gate}
		reg, err := inf.AddHandler(slow, informer.HandlerOptions{})
		require.NoError(t, err)
		assert.False(t, inf.HasSynced())
		assert.False(t, reg.HasSynced())
		start(t, inf)
		require.NoError(t, informer.WaitForSync(t.Context(), inf))
		synctest.Wait()
		assert.True(t, inf.HasSynced())
		assert.False(t, reg.HasSynced(), "the handler has not processed its initial add yet")
		close(gate)
		require.NoError(t, informer.WaitForSync(t.Context(), reg))

		// A handler added after the informer synced syncs once it has
		// processed the current contents.
		late := &calls{}
		lateReg, err := inf.AddHandler(late, informer.HandlerOptions{})
		require.NoError(t, err)
		require.NoError(t, informer.WaitForSync(t.Context(), lateReg))
		assert.Equal(t, []string{"add* a=1"}, late.got())
	})
}

func TestInformerAddAndRemoveOnStoppedInformer(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		inf := newInformer(t, newSource(t), nil)
		reg, err := inf.AddHandler(&calls{}, informer.HandlerOptions{})
		require.NoError(t, err)
		stop := start(t, inf)
		synctest.Wait()
		stop()
		_, err = inf.AddHandler(&calls{}, informer.HandlerOptions{})
		require.ErrorIs(t, err, informer.ErrClosed)
		reg.Remove() // does not block on a stopped informer
		reg.Remove()
	})
}

func TestInformerRemoveBeforeRun(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		src := newSource(t)
		put(t, src, "a", "g", 1)
		inf := newInformer(t, src, nil)
		h := &calls{}
		reg, err := inf.AddHandler(h, informer.HandlerOptions{})
		require.NoError(t, err)
		reg.Remove()
		start(t, inf)
		synctest.Wait()
		assert.Empty(t, h.got())
	})
}

func TestInformerSameHandlerRegisteredTwice(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		src := newSource(t)
		inf := newInformer(t, src, nil)
		h := &calls{}
		r1, err := inf.AddHandler(h, informer.HandlerOptions{})
		require.NoError(t, err)
		_, err = inf.AddHandler(h, informer.HandlerOptions{})
		require.NoError(t, err)
		start(t, inf)
		require.NoError(t, informer.WaitForSync(t.Context(), inf))
		put(t, src, "a", "g", 1)
		synctest.Wait()
		assert.Equal(t, []string{"add a=1", "add a=1"}, h.got(), "each registration delivers")
		r1.Remove()
		h.reset()
		put(t, src, "b", "g", 1)
		synctest.Wait()
		assert.Equal(t, []string{"add b=1"}, h.got(), "removing one registration leaves the other")
	})
}

func TestInformerAddAndRemoveWhileActive(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		src := newSource(t)
		inf := newInformer(t, src, nil)
		start(t, inf)
		var wg sync.WaitGroup
		wg.Go(func() {
			for i := range 200 {
				_, _ = src.Put(&item{Name: fmt.Sprint("k", i%10), Group: "g", V: i})
				if i%20 == 0 {
					runtimeYield()
				}
			}
		})
		for range 20 {
			reg, err := inf.AddHandler(&calls{}, informer.HandlerOptions{Coalesce: true})
			require.NoError(t, err)
			runtimeYield()
			reg.Remove()
		}
		wg.Wait()
		synctest.Wait()
	})
}

func TestInformerTransformIsAppliedBeforeCaching(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		src := newSource(t)
		put(t, src, "a", "g", 1)
		inf := newInformer(t, src, func(o *informer.Options[string, *item]) {
			o.Transform = func(it *item) (*item, error) {
				c := *it
				c.Group = "stripped"
				return &c, nil
			}
		})
		h := &calls{}
		_, err := inf.AddHandler(h, informer.HandlerOptions{})
		require.NoError(t, err)
		start(t, inf)
		require.NoError(t, informer.WaitForSync(t.Context(), inf))
		put(t, src, "b", "g", 1)
		src.Delete("a")
		synctest.Wait()
		for _, it := range inf.Lister().All() {
			assert.Equal(t, "stripped", it.Group)
		}
		keys, err := inf.Lister().IndexKeys("group", "stripped")
		require.NoError(t, err)
		n := 0
		for range keys {
			n++
		}
		assert.Equal(t, 1, n)
		assert.Equal(t, []string{"add* a=1", "add b=1", "delete a=1"}, h.got())
	})
}

func TestInformerWatchDisruptionResumesWithoutRelist(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		src := newSource(t)
		put(t, src, "a", "g", 1)
		var relists int
		var mu sync.Mutex
		inf := newInformer(t, src, func(o *informer.Options[string, *item]) {
			o.Metrics = relistCounter{n: &relists, mu: &mu}
		})
		h := &calls{}
		_, err := inf.AddHandler(h, informer.HandlerOptions{})
		require.NoError(t, err)
		start(t, inf)
		require.NoError(t, informer.WaitForSync(t.Context(), inf))
		time.Sleep(2 * time.Second) // a watch that has lived a while
		src.DropWatches()
		put(t, src, "a", "g", 2)
		put(t, src, "b", "g", 1)
		time.Sleep(time.Second)
		synctest.Wait()
		assert.Equal(t, []string{"add* a=1", "update a=1->2", "add b=1"}, h.got())
		mu.Lock()
		defer mu.Unlock()
		assert.Equal(t, 1, relists, "a dropped watch is resumed, not relisted")
	})
}

type relistCounter struct {
	informer.NoopMetrics
	mu *sync.Mutex
	n  *int
}

func (r relistCounter) Relisted(string) { r.mu.Lock(); *r.n++; r.mu.Unlock() }

func TestInformerListErrorsAreReportedAndRetried(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		src := newSource(t)
		put(t, src, "a", "g", 1)
		src.FailNextList(fmt.Errorf("no route: %w", informer.ErrTransient))
		var mu sync.Mutex
		var errs []error
		inf := newInformer(t, src, func(o *informer.Options[string, *item]) {
			o.ListWatch.DisableStreamingList = true
			o.ErrorHandler = func(_ context.Context, err error) { mu.Lock(); errs = append(errs, err); mu.Unlock() }
		})
		start(t, inf)
		require.NoError(t, informer.WaitForSync(t.Context(), inf))
		assert.Equal(t, 1, inf.Lister().Len())
		mu.Lock()
		defer mu.Unlock()
		require.Len(t, errs, 1)
		assert.True(t, errors.Is(errs[0], informer.ErrTransient))
	})
}

func TestGroupSharesAndStopsInformersOneByOne(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		src := newSource(t)
		put(t, src, "a", "g", 1)
		g := informer.NewGroup()
		opts := informer.Options[string, *item]{Source: src, KeyFunc: itemKey, Name: "items"}
		i1, err := informer.InformerFor(g, opts)
		require.NoError(t, err)
		i2, err := informer.InformerFor(g, opts)
		require.NoError(t, err)
		assert.Same(t, i1, i2, "one informer per (name, key type, object type)")
		other, err := informer.InformerFor(g, informer.Options[string, *item]{Source: src, KeyFunc: itemKey, Name: "other"})
		require.NoError(t, err)
		assert.NotSame(t, i1, other)

		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan error, 1)
		go func() { done <- g.Run(ctx) }()
		require.NoError(t, g.WaitForSync(t.Context()))
		require.ErrorIs(t, g.Run(ctx), informer.ErrAlreadyStarted)

		// Lazily started: an informer obtained while the group runs starts at once.
		late, err := informer.InformerFor(g, informer.Options[string, *item]{Source: src, KeyFunc: itemKey, Name: "late"})
		require.NoError(t, err)
		require.NoError(t, informer.WaitForSync(t.Context(), late))

		assert.True(t, g.Stop("items"))
		assert.False(t, g.Stop("items"), "already gone")
		put(t, src, "b", "g", 1)
		synctest.Wait()
		assert.Equal(t, 1, i1.Lister().Len(), "the stopped informer no longer follows the source")
		assert.Equal(t, 2, other.Lister().Len(), "the others go on")
		fresh, err := informer.InformerFor(g, opts)
		require.NoError(t, err)
		assert.NotSame(t, i1, fresh, "a stopped informer is replaced by a fresh one")
		require.NoError(t, informer.WaitForSync(t.Context(), fresh))
		assert.Equal(t, 2, fresh.Lister().Len())

		cancel()
		require.NoError(t, <-done)
		_, err = informer.InformerFor(g, informer.Options[string, *item]{Source: src, KeyFunc: itemKey, Name: "after"})
		require.ErrorIs(t, err, informer.ErrClosed)
	})
}

func TestInformerRelistSkipsUnkeyableObjectsWithoutTouchingTheList(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		list := []*item{{Name: "a", Group: "g"}, {Name: "", Group: "g"}, {Name: "b", Group: "g"}}
		src := informer.SourceFuncs[*item]{
			ListFunc: func(context.Context, informer.ListOptions) (informer.ListPage[*item], error) {
				return informer.ListPage[*item]{Items: list, Version: "1"}, nil
			},
			WatchFunc: func(ctx context.Context, _ informer.WatchOptions) (informer.Watcher[*item], error) {
				return informer.NewWatchStream[*item](ctx, 0), nil
			},
		}
		var mu sync.Mutex
		var errs []error
		inf := newInformer(t, src, func(o *informer.Options[string, *item]) {
			o.ErrorHandler = func(_ context.Context, err error) { mu.Lock(); errs = append(errs, err); mu.Unlock() }
		})
		start(t, inf)
		require.NoError(t, informer.WaitForSync(t.Context(), inf))
		assert.Equal(t, 2, inf.Lister().Len(), "one bad object does not block the relist")
		assert.Equal(t, "", list[1].Name, "the source's slice is not modified")
		assert.Equal(t, "b", list[2].Name)
		mu.Lock()
		defer mu.Unlock()
		require.Len(t, errs, 1)
		assert.ErrorIs(t, errs[0], informer.ErrKeyFunc)
	})
}

func TestInformerAddIndexesWhileEventsFlow(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		src := newSource(t)
		inf := newInformer(t, src, func(o *informer.Options[string, *item]) { o.BatchSize = 4 })
		start(t, inf)
		require.NoError(t, informer.WaitForSync(t.Context(), inf))
		var wg sync.WaitGroup
		wg.Go(func() {
			for v := range 300 {
				_, _ = src.Put(&item{Name: fmt.Sprint("k", v%40), Group: fmt.Sprint("g", v%3), V: v})
				if v%25 == 0 {
					runtimeYield()
				}
			}
		})
		runtimeYield()
		byParity := informer.Index[*item]{Name: "parity", Func: func(dst []string, it *item) ([]string, error) {
			return append(dst, fmt.Sprint(it.V%2)), nil
		}}
		require.NoError(t, inf.AddIndexes(byParity))
		wg.Wait()
		synctest.Wait()
		for _, parity := range []string{"0", "1"} {
			keys, err := inf.Lister().IndexKeys("parity", parity)
			require.NoError(t, err)
			var got, want []string
			for k := range keys {
				got = append(got, k)
			}
			for k, it := range inf.Lister().All() {
				if fmt.Sprint(it.V%2) == parity {
					want = append(want, k)
				}
			}
			assert.ElementsMatch(t, want, got, "parity %s", parity)
		}
		assert.Equal(t, 40, inf.Lister().Len())
	})
}
