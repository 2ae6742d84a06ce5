package workqueue_test

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ginformer/ginformer/informer"
	"github.com/ginformer/ginformer/source/memory"
	"github.com/ginformer/ginformer/workqueue"
)

type pod struct {
	Namespace, Name string
	Phase           string
}

func podKey(p *pod) (informer.NamespacedKey, error) {
	return informer.NamespacedKey{Namespace: p.Namespace, Name: p.Name}, nil
}

// An informer over the memory source feeds a controller through Handler:
// adds, updates and deletes each queue the object's key.
func TestHandlerFeedsController(t *testing.T) {
	src, err := memory.New(memory.Options[informer.NamespacedKey, *pod]{KeyFunc: podKey})
	require.NoError(t, err)
	defer src.Close()
	_, _ = src.Put(&pod{"default", "a", "Pending"})
	_, _ = src.Put(&pod{"default", "b", "Pending"})

	inf, err := informer.NewSharedInformer(informer.Options[informer.NamespacedKey, *pod]{Source: src, KeyFunc: podKey})
	require.NoError(t, err)

	var mu sync.Mutex
	var seen []string // "key phase", phase "gone" once deleted
	reconcile := func(ctx context.Context, key informer.NamespacedKey) error {
		phase := "gone"
		if p, ok := inf.Lister().Get(key); ok {
			phase = p.Phase
		}
		mu.Lock()
		seen = append(seen, key.String()+" "+phase)
		mu.Unlock()
		return nil
	}
	c, err := workqueue.NewController(reconcile, workqueue.ControllerOptions{Workers: 2})
	require.NoError(t, err)
	reg, err := inf.AddHandler(workqueue.Handler(c.Queue(), podKey), informer.HandlerOptions{Name: "enqueue"})
	require.NoError(t, err)

	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { _ = inf.Run(ctx) })
	require.NoError(t, informer.WaitForSync(ctx, inf, reg))
	wg.Go(func() { _ = c.Run(ctx) })

	has := func(want string) func() bool {
		return func() bool {
			mu.Lock()
			defer mu.Unlock()
			return slices.Contains(seen, want)
		}
	}
	require.Eventually(t, has("default/a Pending"), 5*time.Second, time.Millisecond)
	require.Eventually(t, has("default/b Pending"), 5*time.Second, time.Millisecond)
	_, _ = src.Put(&pod{"default", "a", "Running"})
	require.Eventually(t, has("default/a Running"), 5*time.Second, time.Millisecond)
	src.Delete(informer.NamespacedKey{Namespace: "default", Name: "b"})
	require.Eventually(t, has("default/b gone"), 5*time.Second, time.Millisecond)
	cancel()
	wg.Wait()
}

func TestHandlerKeyErrors(t *testing.T) {
	q, err := workqueue.New[string](workqueue.Options{})
	require.NoError(t, err)
	defer q.ShutDown()
	failing := func(s string) (string, error) {
		if s == "bad" {
			return "", errors.New("no key")
		}
		return s, nil
	}
	h := workqueue.Handler(q, failing)
	h.OnAdd("bad", false)
	h.OnUpdate("x", "bad")
	require.Equal(t, 0, q.Len(), "objects without a key are not queued")
	h.OnAdd("a", true)
	h.OnUpdate("a", "b")
	h.OnDelete(informer.Deletion[string, string]{Key: "c", Object: "whatever"})
	require.Equal(t, 3, q.Len())

	none := workqueue.Handler[string, string](q, nil)
	none.OnAdd("z", false)
	none.OnDelete(informer.Deletion[string, string]{Key: "d"})
	require.Equal(t, 4, q.Len(), "nil key: only deletions")
}
