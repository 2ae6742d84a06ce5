package informer_test

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ginformer/ginformer/informer"
)

// relistSource lists what the test set at one fixed version, orders
// versions as integers, and hands the test each watch it opens.
type relistSource struct {
	mu      sync.Mutex
	items   []*item
	streams chan *informer.WatchStream[*item]
}

func (s *relistSource) set(items ...*item) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.items = items
}

func (s *relistSource) List(context.Context, informer.ListOptions) (informer.ListPage[*item], error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return informer.ListPage[*item]{Items: append([]*item(nil), s.items...), Version: "5"}, nil
}

func (s *relistSource) Watch(ctx context.Context, _ informer.WatchOptions) (informer.Watcher[*item], error) {
	w := informer.NewWatchStream[*item](ctx, 0)
	s.streams <- w
	return w, nil
}

func (s *relistSource) CompareVersions(a, b string) (int, error) {
	x, err1 := strconv.Atoi(a)
	y, err2 := strconv.Atoi(b)
	if err1 != nil || err2 != nil {
		return 0, fmt.Errorf("%q or %q: %w", a, b, informer.ErrInvalidVersion)
	}
	return x - y, nil
}

// A relist at the version the cache is already at (a sharded source's new
// slice on an idle store) is waited for by WaitForReceived, not by
// WaitForVersion, which finds its version reached already.
func TestWaitForReceivedWaitsForARelistAtTheSameVersion(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		src := &relistSource{streams: make(chan *informer.WatchStream[*item], 1)}
		src.set(&item{Name: "a", Group: "g"})
		gate := make(chan struct{})
		slow := informer.Index[*item]{Name: "slow", Func: func(dst []string, it *item) ([]string, error) {
			if it.Group == "slow" {
				<-gate
			}
			return append(dst, it.Group), nil
		}}
		inf := newInformer(t, src, func(o *informer.Options[string, *item]) {
			o.Indexes = append(o.Indexes, slow)
			o.ListWatch.DisableStreamingList = true
		})
		start(t, inf)
		require.NoError(t, informer.WaitForSync(t.Context(), inf))
		w := <-src.streams
		require.NoError(t, inf.WaitForReceived(t.Context()), "nothing pending: at once")

		src.set(&item{Name: "a", Group: "g"}, &item{Name: "s", Group: "slow"})
		require.True(t, w.Send(informer.Event[*item]{Type: informer.EventError,
			Err: fmt.Errorf("slice changed: %w", informer.ErrRelistRequested)}))
		synctest.Wait() // relisted; the processing loop is stuck in the index function
		require.NoError(t, inf.WaitForVersion(t.Context(), "5"), "the version was reached before the relist")
		waited := make(chan error, 1)
		go func() { waited <- inf.WaitForReceived(t.Context()) }()
		synctest.Wait()
		select {
		case err := <-waited:
			t.Fatalf("WaitForReceived returned %v before the relist was applied", err)
		default:
		}
		_, ok := inf.Lister().Get("s")
		require.False(t, ok)

		close(gate)
		require.NoError(t, <-waited)
		_, ok = inf.Lister().Get("s")
		require.True(t, ok, "the relist is in the cache once the wait returns")
		<-src.streams
	})
}

// A wait ends with its context, or with ErrClosed when the informer stops
// first; a zero informer refuses it.
func TestWaitForReceivedEnds(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		src := &relistSource{streams: make(chan *informer.WatchStream[*item], 1)}
		gate := make(chan struct{})
		slow := informer.Index[*item]{Name: "slow", Func: func(dst []string, it *item) ([]string, error) {
			if it.Group == "slow" {
				<-gate
			}
			return append(dst, it.Group), nil
		}}
		inf := newInformer(t, src, func(o *informer.Options[string, *item]) {
			o.Indexes = append(o.Indexes, slow)
			o.ListWatch.DisableStreamingList = true
		})
		stop := start(t, inf)
		require.NoError(t, informer.WaitForSync(t.Context(), inf))
		w := <-src.streams
		src.set(&item{Name: "s", Group: "slow"})
		require.True(t, w.Send(informer.Event[*item]{Type: informer.EventError,
			Err: fmt.Errorf("slice changed: %w", informer.ErrRelistRequested)}))
		synctest.Wait() // relisted; the processing loop is stuck in the index function

		ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
		defer cancel()
		err := inf.WaitForReceived(ctx)
		require.ErrorIs(t, err, context.DeadlineExceeded)
		assert.Contains(t, err.Error(), `wait for what it received: the cache is at version "5"`)

		waited := make(chan error, 1)
		go func() { waited <- inf.WaitForReceived(t.Context()) }()
		synctest.Wait()
		go stop()
		synctest.Wait() // Run waits for the processing loop, stuck in the index function
		err = <-waited
		require.ErrorIs(t, err, informer.ErrClosed)
		assert.Contains(t, err.Error(), `wait for what it received: informer stopped`)
		close(gate)
		synctest.Wait()
		_, ok := inf.Lister().Get("s")
		require.True(t, ok)
		require.NoError(t, inf.WaitForReceived(t.Context()), "everything applied: at once, even stopped")

		var zero informer.SharedInformer[string, *item]
		require.ErrorIs(t, zero.WaitForReceived(t.Context()), informer.ErrInvalidOptions)
	})
}
