package compat_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"
	fcache "k8s.io/client-go/tools/cache/testing"

	"github.com/ginformer/ginformer/informer"
	"github.com/ginformer/ginformer/source/k8s/compat"
)

const wait = 10 * time.Second

func pod(name string, labels ...string) *corev1.Pod {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, UID: types.UID("uid-" + name), Labels: map[string]string{}}}
	for i := 0; i+1 < len(labels); i += 2 {
		p.Labels[labels[i]] = labels[i+1]
	}
	return p
}

// newSource returns client-go's fake apiserver endpoint, shut down at the
// end of the test.
func newSource(t *testing.T) *fcache.FakeControllerSource {
	src := fcache.NewFakeControllerSource()
	t.Cleanup(src.Shutdown)
	return src
}

// newInformer builds a compat informer over src with a quick backoff and
// plain lists (the fake does not serve streaming lists).
func newInformer(t *testing.T, src cache.ListerWatcher, resync time.Duration, indexers cache.Indexers) *compat.Informer {
	t.Helper()
	inf, err := compat.New(compat.Options{
		ListerWatcher: src,
		ExampleObject: &corev1.Pod{},
		ResyncPeriod:  resync,
		Indexers:      indexers,
		ListWatch: informer.ListWatchOptions{
			DisableStreamingList: true,
			Backoff:              informer.Backoff{Initial: 10 * time.Millisecond, Max: 50 * time.Millisecond},
		},
	})
	require.NoError(t, err)
	return inf
}

// run runs inf until the test ends, and waits for it to return.
func run(t *testing.T, inf cache.SharedInformer) (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { inf.RunWithContext(ctx) })
	stop = func() { cancel(); wg.Wait() }
	t.Cleanup(stop)
	return stop
}

// waitSynced waits for inf to sync.
func waitSynced(t *testing.T, inf cache.SharedInformer) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	require.True(t, cache.WaitForCacheSync(ctx.Done(), inf.HasSynced), "informer did not sync")
}

// event is one call received by a recorder.
type event struct {
	op      string // add, update, delete, tombstone
	name    string
	initial bool
	same    bool // update with old == new (a resync)
}

// recorder is a cache.ResourceEventHandler sending every call to a channel.
type recorder struct {
	ch chan event
}

func newRecorder() *recorder { return &recorder{ch: make(chan event, 1000)} }

func (r *recorder) OnAdd(obj any, initial bool) {
	r.ch <- event{op: "add", name: obj.(*corev1.Pod).Name, initial: initial}
}

func (r *recorder) OnUpdate(old, new any) {
	r.ch <- event{op: "update", name: new.(*corev1.Pod).Name, same: old == new}
}

func (r *recorder) OnDelete(obj any) {
	if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		r.ch <- event{op: "tombstone", name: d.Obj.(*corev1.Pod).Name}
		return
	}
	r.ch <- event{op: "delete", name: obj.(*corev1.Pod).Name}
}

// next returns the next event, failing after a wait.
func (r *recorder) next(t *testing.T) event {
	t.Helper()
	select {
	case e := <-r.ch:
		return e
	case <-time.After(wait):
		t.Fatal("no event")
		return event{}
	}
}

// expectSet receives len(want) events and checks they are want, in any
// order.
func (r *recorder) expectSet(t *testing.T, want ...event) {
	t.Helper()
	var got []event
	for range want {
		got = append(got, r.next(t))
	}
	require.ElementsMatch(t, want, got)
}

// empty checks that no event is pending.
func (r *recorder) empty(t *testing.T) {
	t.Helper()
	select {
	case e := <-r.ch:
		t.Fatalf("unexpected event %+v", e)
	default:
	}
}
