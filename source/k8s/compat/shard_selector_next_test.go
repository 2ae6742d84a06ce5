//go:build clientgo_next

package compat_test

import (
	"fmt"
	"slices"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/sharding"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"

	"github.com/ginformer/ginformer/informer"
)

// optionsRecorder wraps a ListerWatcher and keeps the shard selector of
// every request.
type optionsRecorder struct {
	cache.ListerWatcher
	mu        sync.Mutex
	selectors []string
}

func (r *optionsRecorder) record(o metav1.ListOptions) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.selectors = append(r.selectors, o.ShardSelector)
}

func (r *optionsRecorder) List(o metav1.ListOptions) (runtime.Object, error) {
	r.record(o)
	return r.ListerWatcher.List(o)
}

func (r *optionsRecorder) Watch(o metav1.ListOptions) (watch.Interface, error) {
	r.record(o)
	return r.ListerWatcher.Watch(o)
}

func (r *optionsRecorder) seen() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.selectors)
}

// TestShardSelector: with a shard selector, the selector goes with every
// list and watch request, and as the fake server does not apply it (no
// ShardInfo in its lists), the informer filters client-side: only the
// shard's objects are cached and handed on, from the list and from the
// watch. It cannot be set after Run.
func TestShardSelector(t *testing.T) {
	sel, err := sharding.NewShardRangeSelector("object.metadata.uid", 0, 2)
	require.NoError(t, err)
	in := func(p *corev1.Pod) bool {
		ok, err := sel.Matches(p)
		require.NoError(t, err)
		return ok
	}
	src := newSource(t)
	var want []string
	for i := range 20 {
		p := pod(fmt.Sprintf("listed-%d", i))
		src.Add(p)
		if in(p) {
			want = append(want, p.Name)
		}
	}
	require.NotEmpty(t, want)
	require.Less(t, len(want), 20)
	lw := &optionsRecorder{ListerWatcher: src}
	inf := newInformer(t, lw, 0, nil)
	require.NoError(t, inf.SetShardSelector(sel))
	rec := newRecorder()
	_, err = inf.AddEventHandler(rec)
	require.NoError(t, err)
	run(t, inf)
	waitSynced(t, inf)

	var initial []event
	for _, n := range want {
		initial = append(initial, event{op: "add", name: n, initial: true})
	}
	rec.expectSet(t, initial...)
	require.ElementsMatch(t, want, inf.GetStore().ListKeys())

	// Watched: objects out of the shard are dropped; one in the shard,
	// added last, shows that those before it were seen and dropped.
	var last *corev1.Pod
	var watched []event
	for i := 0; last == nil || !in(last); i++ {
		p := pod(fmt.Sprintf("watched-%d", i))
		src.Add(p)
		if in(p) {
			watched = append(watched, event{op: "add", name: p.Name})
			want = append(want, p.Name)
		}
		last = p
	}
	rec.expectSet(t, watched...)
	rec.empty(t)
	require.ElementsMatch(t, want, inf.GetStore().ListKeys())

	seen := lw.seen()
	require.GreaterOrEqual(t, len(seen), 2) // a list and a watch
	for _, s := range seen {
		require.Equal(t, sel.String(), s)
	}
	require.ErrorIs(t, inf.SetShardSelector(sharding.Everything()), informer.ErrAlreadyStarted)
}

// TestShardSelectorEverything: an empty selector, or nil, filters nothing
// and sends no selector; the last call wins.
func TestShardSelectorEverything(t *testing.T) {
	sel, err := sharding.NewShardRangeSelector("object.metadata.uid", 0, 2)
	require.NoError(t, err)
	for name, last := range map[string]sharding.Selector{"nil": nil, "Everything": sharding.Everything()} {
		t.Run(name, func(t *testing.T) {
			src := newSource(t)
			for i := range 10 {
				src.Add(pod(fmt.Sprintf("p-%d", i)))
			}
			lw := &optionsRecorder{ListerWatcher: src}
			inf := newInformer(t, lw, 0, nil)
			require.NoError(t, inf.SetShardSelector(sel))
			require.NoError(t, inf.SetShardSelector(last))
			run(t, inf)
			waitSynced(t, inf)
			require.Len(t, inf.GetStore().ListKeys(), 10)
			for _, s := range lw.seen() {
				require.Empty(t, s)
			}
		})
	}
}
