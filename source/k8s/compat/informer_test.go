package compat_test

// The behaviours client-go's tools/cache/shared_informer_test.go checks,
// run against the compat informer over client-go's own fake apiserver
// endpoint (tools/cache/testing.FakeControllerSource). Time is real: where
// client-go steps a fake clock, these tests wait on events.

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/cache"

	"github.com/ginformer/ginformer/informer"
	"github.com/ginformer/ginformer/source/k8s/compat"
)

func labelKeys(obj any) ([]string, error) {
	var res []string
	for k := range obj.(*corev1.Pod).Labels {
		res = append(res, k)
	}
	return res, nil
}

func names(objs []any) []string {
	var out []string
	for _, o := range objs {
		out = append(out, o.(*corev1.Pod).Name)
	}
	slices.Sort(out)
	return out
}

// TestIndexer: indexes given at construction and added after Run are
// queryable, including for objects added later.
func TestIndexer(t *testing.T) {
	src := newSource(t)
	src.Add(pod("pod1", "a", "a-val", "b", "b-val1"))
	src.Add(pod("pod2", "b", "b-val2"))
	inf := newInformer(t, src, time.Second, cache.Indexers{"labels": labelKeys})
	run(t, inf)
	waitSynced(t, inf)

	res, err := inf.GetIndexer().ByIndex("labels", "a")
	require.NoError(t, err)
	require.Equal(t, []string{"pod1"}, names(res))

	src.Add(pod("pod3", "a", "a-val2"))
	require.Eventually(t, func() bool {
		res, _ := inf.GetIndexer().ByIndex("labels", "a")
		return slices.Equal(names(res), []string{"pod1", "pod3"})
	}, wait, time.Millisecond)

	require.NoError(t, inf.AddIndexers(cache.Indexers{"labels-again": labelKeys}))
	res, err = inf.GetIndexer().ByIndex("labels-again", "a")
	require.NoError(t, err)
	require.Equal(t, []string{"pod1", "pod3"}, names(res), "a new index covers the cache at once")
	for _, idx := range []string{"labels", "labels-again"} {
		got := inf.GetIndexer().ListIndexFuncValues(idx)
		slices.Sort(got)
		require.Equal(t, []string{"a", "b"}, got, idx)
	}
	keys, err := inf.GetIndexer().IndexKeys("labels", "b")
	require.NoError(t, err)
	slices.Sort(keys)
	require.Equal(t, []string{"pod1", "pod2"}, keys)
	same, err := inf.GetIndexer().Index("labels", pod("x", "b", ""))
	require.NoError(t, err)
	require.Equal(t, []string{"pod1", "pod2"}, names(same))
	require.Len(t, inf.GetIndexer().GetIndexers(), 2)

	err = inf.AddIndexers(cache.Indexers{"labels": labelKeys})
	require.ErrorIs(t, err, informer.ErrIndexExists, "a taken name is refused")
	_, err = inf.GetIndexer().ByIndex("nope", "a")
	require.ErrorIs(t, err, informer.ErrIndexNotFound)
}

// TestStoreView: the Store view reads the cache by object and by key, and
// refuses writes.
func TestStoreView(t *testing.T) {
	src := newSource(t)
	p1 := pod("pod1")
	p1.Namespace = "ns"
	src.Add(p1)
	src.Add(pod("pod2"))
	inf := newInformer(t, src, 0, nil)
	run(t, inf)
	waitSynced(t, inf)
	st := inf.GetStore()
	keys := st.ListKeys()
	slices.Sort(keys)
	require.Equal(t, []string{"ns/pod1", "pod2"}, keys)
	require.Equal(t, []string{"pod1", "pod2"}, names(st.List()))
	obj, ok, err := st.GetByKey("ns/pod1")
	require.NoError(t, err)
	require.True(t, ok)
	require.Equal(t, "pod1", obj.(*corev1.Pod).Name)
	_, ok, err = st.Get(pod("pod2"))
	require.NoError(t, err)
	require.True(t, ok)
	_, ok, _ = st.GetByKey("pod1")
	require.False(t, ok, "wrong namespace")
	require.Error(t, st.Add(pod("x")), "writes are refused")
	require.NotEmpty(t, inf.LastSyncResourceVersion())
	require.True(t, inf.GetController().HasSynced())
}

// TestListenerResyncPeriods: handlers get OnUpdate(obj, obj) for every
// cached object at their own resync period; a period of zero means never.
func TestListenerResyncPeriods(t *testing.T) {
	src := newSource(t)
	src.Add(pod("pod1"))
	src.Add(pod("pod2"))
	inf := newInformer(t, src, time.Second, nil)
	noResync, resync, dflt := newRecorder(), newRecorder(), newRecorder()
	_, err := inf.AddEventHandlerWithResyncPeriod(noResync, 0)
	require.NoError(t, err)
	_, err = inf.AddEventHandlerWithResyncPeriod(resync, time.Second)
	require.NoError(t, err)
	_, err = inf.AddEventHandler(dflt) // the informer's: 1s
	require.NoError(t, err)
	run(t, inf)
	initial := []event{{op: "add", name: "pod1", initial: true}, {op: "add", name: "pod2", initial: true}}
	for _, r := range []*recorder{noResync, resync, dflt} {
		r.expectSet(t, initial...)
	}
	resyncs := []event{{op: "update", name: "pod1", same: true}, {op: "update", name: "pod2", same: true}}
	resync.expectSet(t, resyncs...)
	dflt.expectSet(t, resyncs...)
	resync.expectSet(t, resyncs...)
	noResync.empty(t)
}

// TestSharedInformerWatchDisruption: changes the watch missed are seen
// after the watch breaks and the informer relists.
func TestSharedInformerWatchDisruption(t *testing.T) {
	src := newSource(t)
	src.Add(pod("pod1"))
	src.Add(pod("pod2"))
	src.Add(pod("pod4"))
	inf := newInformer(t, src, 0, nil)
	r := newRecorder()
	_, err := inf.AddEventHandler(r)
	require.NoError(t, err)
	run(t, inf)
	r.expectSet(t, event{op: "add", name: "pod1", initial: true}, event{op: "add", name: "pod2", initial: true}, event{op: "add", name: "pod4", initial: true})

	// Changes only a relist can see.
	src.AddDropWatch(pod("pod3"))
	src.ModifyDropWatch(pod("pod2", "v", "2"))
	src.DeleteDropWatch(pod("pod4"))
	r.empty(t)
	src.ResetWatch() // a lost connection: the next watch is too old
	r.expectSet(t,
		event{op: "add", name: "pod3"},
		event{op: "update", name: "pod2"},
		event{op: "tombstone", name: "pod4"},
	)
	obj, ok, _ := inf.GetStore().GetByKey("pod2")
	require.True(t, ok)
	require.Equal(t, "2", obj.(*corev1.Pod).Labels["v"])
}

// TestSharedInformerErrorHandling: a failing list reaches the watch error
// handler.
func TestSharedInformerErrorHandling(t *testing.T) {
	src := newSource(t)
	src.Add(pod("pod1"))
	src.ListError = errors.New("Access Denied")
	inf := newInformer(t, src, time.Second, nil)
	errCh := make(chan error, 100)
	require.NoError(t, inf.SetWatchErrorHandler(func(r *cache.Reflector, err error) {
		select {
		case errCh <- err:
		default:
		}
	}))
	run(t, inf)
	select {
	case err := <-errCh:
		require.Contains(t, err.Error(), "Access Denied")
	case <-time.After(wait):
		t.Fatal("no call of the watch error handler")
	}
}

// TestSharedInformerStartRace: setters race Run without data races; after
// the start they are refused.
func TestSharedInformerStartRace(t *testing.T) {
	src := newSource(t)
	inf := newInformer(t, src, time.Second, nil)
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() {
		for ctx.Err() == nil {
			_ = inf.SetTransform(func(i any) (any, error) { return i, nil })
			_ = inf.SetWatchErrorHandler(func(*cache.Reflector, error) {})
		}
	})
	stop := run(t, inf)
	waitSynced(t, inf)
	require.ErrorIs(t, inf.SetTransform(nil), informer.ErrAlreadyStarted)
	require.ErrorIs(t, inf.SetWatchErrorHandler(nil), informer.ErrAlreadyStarted)
	cancel()
	wg.Wait()
	stop()
}

// TestSharedInformerTransformer: the transform applies before caching and
// delivery.
func TestSharedInformerTransformer(t *testing.T) {
	src := newSource(t)
	src.Add(pod("pod1"))
	src.Add(pod("pod2"))
	inf := newInformer(t, src, 0, nil)
	require.NoError(t, inf.SetTransform(func(obj any) (any, error) {
		p := obj.(*corev1.Pod)
		p.Name = strings.ToUpper(p.Name)
		return p, nil
	}))
	r := newRecorder()
	_, err := inf.AddEventHandler(r)
	require.NoError(t, err)
	run(t, inf)
	r.expectSet(t, event{op: "add", name: "POD1", initial: true}, event{op: "add", name: "POD2", initial: true})
	_, ok, _ := inf.GetStore().GetByKey("POD1")
	require.True(t, ok)
}

// TestSharedInformerRemoveHandler: handles are removed one by one;
// removing twice, or after the informer stopped, is fine; a handle of
// another informer is refused.
func TestSharedInformerRemoveHandler(t *testing.T) {
	src := newSource(t)
	src.Add(pod("pod1"))
	inf := newInformer(t, src, time.Second, nil)
	other := newInformer(t, newSource(t), time.Second, nil)
	h1, err := inf.AddEventHandler(&cache.ResourceEventHandlerFuncs{})
	require.NoError(t, err)
	h2, err := inf.AddEventHandler(&cache.ResourceEventHandlerFuncs{})
	require.NoError(t, err)
	foreign, err := other.AddEventHandler(&cache.ResourceEventHandlerFuncs{})
	require.NoError(t, err)

	require.Error(t, inf.RemoveEventHandler(foreign), "a foreign handle")
	require.NoError(t, inf.RemoveEventHandler(h2))
	require.NoError(t, inf.RemoveEventHandler(h2), "removing twice")
	require.NoError(t, cache.ShutDownEventHandler(inf, h2))
	stop := run(t, inf)
	waitSynced(t, inf)
	stop()
	require.True(t, inf.IsStopped())
	require.NoError(t, inf.RemoveEventHandler(h1), "after the informer stopped")
	require.NoError(t, other.RemoveEventHandler(foreign))
}

// TestSharedInformerMultipleRegistration: one handler added twice is two
// registrations, each delivered to and removable on its own.
func TestSharedInformerMultipleRegistration(t *testing.T) {
	src := newSource(t)
	src.Add(pod("pod1"))
	inf := newInformer(t, src, 0, nil)
	r := newRecorder()
	h1, err := inf.AddEventHandler(r)
	require.NoError(t, err)
	_, err = inf.AddEventHandler(r)
	require.NoError(t, err)
	run(t, inf)
	r.expectSet(t, event{op: "add", name: "pod1", initial: true}, event{op: "add", name: "pod1", initial: true})
	require.NoError(t, cache.ShutDownEventHandler(inf, h1))
	src.Add(pod("pod2"))
	require.Equal(t, event{op: "add", name: "pod2"}, r.next(t))
	r.empty(t)
}

// TestRemoveWhileActive: a removed handler receives nothing more, while
// the others go on.
func TestRemoveWhileActive(t *testing.T) {
	src := newSource(t)
	inf := newInformer(t, src, 0, nil)
	removed, kept := newRecorder(), newRecorder()
	h, err := inf.AddEventHandler(removed)
	require.NoError(t, err)
	_, err = inf.AddEventHandler(kept)
	require.NoError(t, err)
	run(t, inf)
	waitSynced(t, inf)
	src.Add(pod("pod1"))
	require.Equal(t, event{op: "add", name: "pod1"}, removed.next(t))
	require.Equal(t, event{op: "add", name: "pod1"}, kept.next(t))
	require.NoError(t, cache.ShutDownEventHandler(inf, h))
	src.Add(pod("pod2"))
	require.Equal(t, event{op: "add", name: "pod2"}, kept.next(t))
	removed.empty(t)
}

// TestAddWhileActive: a handler added to a running informer first gets the
// cache's contents as initial adds, then later changes; its registration
// syncs only once it has processed them.
func TestAddWhileActive(t *testing.T) {
	src := newSource(t)
	inf := newInformer(t, src, 0, nil)
	r1 := newRecorder()
	h1, err := inf.AddEventHandler(r1)
	require.NoError(t, err)
	require.False(t, h1.HasSynced(), "synced before Run")
	run(t, inf)
	waitSynced(t, inf)
	src.Add(pod("pod1"))
	require.Equal(t, event{op: "add", name: "pod1"}, r1.next(t))
	select {
	case <-h1.HasSyncedChecker().Done():
		require.True(t, h1.HasSynced())
	case <-time.After(wait):
		t.Fatal("not synced")
	}

	block := make(chan struct{})
	r2 := newRecorder()
	h2, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) { <-block; r2.OnAdd(obj, false) },
	})
	require.NoError(t, err)
	require.False(t, h2.HasSynced(), "synced before processing its initial adds")
	close(block)
	src.Add(pod("pod2"))
	r2.expectSet(t, event{op: "add", name: "pod1"}, event{op: "add", name: "pod2"})
	require.Eventually(t, h2.HasSynced, wait, time.Millisecond)
	require.Equal(t, event{op: "add", name: "pod2"}, r1.next(t))
}

// TestStateSharedInformer: IsStopped and HasSynced over the life cycle;
// adding a handler to a stopped informer is refused; a second Run returns.
func TestStateSharedInformer(t *testing.T) {
	src := newSource(t)
	src.Add(pod("pod1"))
	inf := newInformer(t, src, time.Second, nil)
	require.False(t, inf.IsStopped())
	require.False(t, inf.HasSynced())
	stop := run(t, inf)
	waitSynced(t, inf)
	require.False(t, inf.IsStopped())
	stop()
	require.True(t, inf.IsStopped())
	inf.Run(make(chan struct{})) // returns at once: an informer runs once
	_, err := inf.AddEventHandler(newRecorder())
	require.ErrorIs(t, err, informer.ErrClosed)
	require.True(t, strings.HasSuffix(err.Error(), "was not added to shared informer because it has stopped already"), err.Error())
}

// TestSharedInformerHandlerAbuse: handlers added and removed concurrently
// with a stream of events; the race detector watches.
func TestSharedInformerHandlerAbuse(t *testing.T) {
	src := newSource(t)
	inf := newInformer(t, src, 0, nil)
	run(t, inf)
	waitSynced(t, inf)
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			var regs []cache.ResourceEventHandlerRegistration
			for i := 0; ctx.Err() == nil; i++ {
				if i%3 != 2 || len(regs) == 0 {
					h, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{AddFunc: func(any) {}})
					if assert.NoError(t, err) {
						regs = append(regs, h)
					}
					continue
				}
				assert.NoError(t, inf.RemoveEventHandler(regs[0]))
				regs = regs[1:]
			}
			for _, h := range regs {
				assert.NoError(t, inf.RemoveEventHandler(h))
			}
		})
	}
	for i := range 200 {
		src.Add(pod("p" + string(rune('a'+i%26)) + string(rune('a'+i/26))))
	}
	cancel()
	wg.Wait()
}

// TestRemoveFromHandler: a handler may remove itself without deadlock.
func TestRemoveFromHandler(t *testing.T) {
	src := newSource(t)
	src.Add(pod("pod1"))
	inf := newInformer(t, src, 0, nil)
	var h cache.ResourceEventHandlerRegistration
	done := make(chan struct{})
	var err error
	// h is set before run starts the informer, so before the handler reads it.
	h, err = inf.AddEventHandler(cache.ResourceEventHandlerFuncs{AddFunc: func(any) {
		assert.NoError(t, inf.RemoveEventHandler(h))
		close(done)
	}})
	require.NoError(t, err)
	run(t, inf)
	select {
	case <-done:
	case <-time.After(wait):
		t.Fatal("handler not called")
	}
}

// TestEventPanics: a panicking handler does not stop the informer or the
// other handlers (client-go crashes the process by default instead; see
// the package documentation).
func TestEventPanics(t *testing.T) {
	src := newSource(t)
	src.Add(pod("pod1"))
	inf := newInformer(t, src, 0, nil)
	_, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{AddFunc: func(any) { panic("boom") }})
	require.NoError(t, err)
	r := newRecorder()
	_, err = inf.AddEventHandler(r)
	require.NoError(t, err)
	run(t, inf)
	require.Equal(t, event{op: "add", name: "pod1", initial: true}, r.next(t))
	src.Add(pod("pod2"))
	require.Equal(t, event{op: "add", name: "pod2"}, r.next(t))
}

// TestDeletes: observed deletions pass the object; a typed tombstone is
// passed as cache.DeletedFinalStateUnknown (see WatchDisruption).
func TestDeletes(t *testing.T) {
	src := newSource(t)
	src.Add(pod("pod1"))
	inf := newInformer(t, src, 0, nil)
	r := newRecorder()
	_, err := inf.AddEventHandler(r)
	require.NoError(t, err)
	run(t, inf)
	require.Equal(t, event{op: "add", name: "pod1", initial: true}, r.next(t))
	src.Modify(pod("pod1", "x", "y"))
	require.Equal(t, event{op: "update", name: "pod1"}, r.next(t))
	src.Delete(pod("pod1"))
	require.Equal(t, event{op: "delete", name: "pod1"}, r.next(t))
}

// TestNewSharedIndexInformer: the drop-in constructor has client-go's
// signature and gives a working informer.
func TestNewSharedIndexInformer(t *testing.T) {
	src := newSource(t)
	src.Add(pod("pod1", "a", "1"))
	var newInformer func(cache.ListerWatcher, runtime.Object, time.Duration, cache.Indexers) cache.SharedIndexInformer = compat.NewSharedIndexInformer
	inf := newInformer(src, &corev1.Pod{}, 0, cache.Indexers{"labels": labelKeys})
	run(t, inf)
	waitSynced(t, inf)
	res, err := inf.GetIndexer().ByIndex("labels", "a")
	require.NoError(t, err)
	require.Equal(t, []string{"pod1"}, names(res))
}
