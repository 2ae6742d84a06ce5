package informer_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ginformer/ginformer/informer"
)

// Regression: AddHandler racing with shutdown. Run must not return while a
// handler goroutine that a concurrent AddHandler started is still running
// (or not yet started), and the race detector must stay quiet
// (client-go: TestSharedInformerHandlerAbuse).
func TestInformerAddHandlerDuringShutdown(t *testing.T) {
	src := newSource(t)
	for i := range 2000 {
		put(t, src, fmt.Sprintf("k%04d", i), "g", i)
	}
	for range 20 {
		inf := newInformer(t, src, nil)
		ctx, cancel := context.WithCancel(context.Background())
		runDone := make(chan error, 1)
		go func() { runDone <- inf.Run(ctx) }()
		require.NoError(t, informer.WaitForSync(t.Context(), inf))

		var wg sync.WaitGroup
		var regs sync.Map
		for i := range 8 {
			wg.Go(func() {
				reg, err := inf.AddHandler(informer.HandlerFuncs[string, *item]{AddFunc: func(*item, bool) {}}, informer.HandlerOptions{})
				if err == nil {
					regs.Store(i, reg)
				}
			})
		}
		cancel()
		require.NoError(t, <-runDone)
		wg.Wait()
		regs.Range(func(_, v any) bool {
			reg := v.(*informer.Registration[string, *item])
			select {
			case <-reg.Done():
			default:
				t.Errorf("Run returned while a handler it accepted had not exited")
			}
			return true
		})
	}
}

// Regression: a handler added after Run with its own resync period; its
// period must be published before the reflector's goroutine can read it.
func TestInformerLateHandlerResync(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		src := newSource(t)
		put(t, src, "a", "g", 1)
		inf := newInformer(t, src, func(o *informer.Options[string, *item]) { o.ResyncPeriod = time.Second })
		start(t, inf)
		require.NoError(t, informer.WaitForSync(t.Context(), inf))
		h := &calls{}
		reg, err := inf.AddHandler(h, informer.HandlerOptions{ResyncPeriod: 2 * time.Second})
		require.NoError(t, err)
		require.NoError(t, informer.WaitForSync(t.Context(), reg))
		time.Sleep(5 * time.Second)
		synctest.Wait()
		assert.Contains(t, h.got(), "update a=1->1", "the late handler resynced")
	})
}

// Regression: stopping drops queued notifications. Run returns within the
// handler's in-flight call, however long its backlog.
func TestInformerStopDropsQueuedNotifications(t *testing.T) {
	for _, coalesce := range []bool{false, true} {
		t.Run(fmt.Sprintf("coalesce=%v", coalesce), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				src := newSource(t)
				inf := newInformer(t, src, nil)
				var delivered atomic.Int32
				entered := make(chan struct{}, 1)
				release := make(chan struct{})
				_, err := inf.AddHandler(informer.HandlerFuncs[string, *item]{
					AddFunc: func(*item, bool) {
						if delivered.Add(1) == 1 {
							entered <- struct{}{}
							<-release
						}
					},
				}, informer.HandlerOptions{Coalesce: coalesce})
				require.NoError(t, err)
				ctx, cancel := context.WithCancel(context.Background())
				runDone := make(chan error, 1)
				go func() { runDone <- inf.Run(ctx) }()
				require.NoError(t, informer.WaitForSync(t.Context(), inf))
				for i := range 1000 {
					put(t, src, fmt.Sprintf("k%04d", i), "g", i)
				}
				<-entered // the handler is in its first call
				synctest.Wait()
				cancel()
				synctest.Wait()
				select {
				case <-runDone:
					t.Fatal("Run returned before the in-flight handler call ended")
				default:
				}
				close(release)
				require.NoError(t, <-runDone)
				assert.Equal(t, int32(1), delivered.Load(), "the backlog was dropped, not delivered")
			})
		})
	}
}
