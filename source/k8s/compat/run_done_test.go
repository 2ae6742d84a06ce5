package compat_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"k8s.io/client-go/tools/cache"

	"github.com/ginformer/ginformer/informer"
)

// TestRunWithDoneContext: as with client-go, an informer whose stop channel
// is closed (or context done) before Run stops for good: IsStopped, no
// handler added afterwards, and the handlers added before are shut down.
func TestRunWithDoneContext(t *testing.T) {
	// Run's goroutine may cancel its context after the engine started (as
	// in client-go): either way the informer has stopped.
	for name, run := range map[string]func(inf cache.SharedInformer){
		"Run": func(inf cache.SharedInformer) {
			stop := make(chan struct{})
			close(stop)
			inf.Run(stop)
		},
		"RunWithContext": func(inf cache.SharedInformer) {
			ctx, cancel := context.WithCancel(context.Background())
			cancel()
			inf.RunWithContext(ctx)
		},
	} {
		t.Run(name, func(t *testing.T) {
			src := newSource(t)
			src.Add(pod("pod1"))
			inf := newInformer(t, src, 0, nil)
			reg, err := inf.AddEventHandler(newRecorder())
			require.NoError(t, err)
			run(inf)
			require.True(t, inf.IsStopped())
			_, err = inf.AddEventHandler(newRecorder())
			require.ErrorIs(t, err, informer.ErrClosed)
			select {
			case <-reg.(interface{ ShutdownChan() <-chan struct{} }).ShutdownChan():
			case <-time.After(wait):
				t.Fatal("the handler added before Run was not shut down")
			}
			require.NoError(t, cache.ShutDownEventHandler(inf, reg))
		})
	}
}

// TestAddNilEventHandler: a nil handler is refused when added, not found
// out by a panic on the handler's goroutine at the first event.
func TestAddNilEventHandler(t *testing.T) {
	inf := newInformer(t, newSource(t), 0, nil)
	var typedNil *cache.ResourceEventHandlerFuncs
	for name, h := range map[string]cache.ResourceEventHandler{"nil": nil, "typed nil": typedNil} {
		t.Run(name, func(t *testing.T) {
			reg, err := inf.AddEventHandler(h)
			require.ErrorIs(t, err, informer.ErrInvalidOptions)
			require.Nil(t, reg)
		})
	}
	require.Error(t, inf.RemoveEventHandler(nil))
}
