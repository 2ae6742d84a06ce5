package informer_test

import (
	"context"
	"runtime"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ginformer/ginformer/informer"
)

// feedSource is a Source whose list is empty and whose single watch is fed
// by the test through the returned stream channel.
func feedSource() (informer.Source[*item], chan *informer.WatchStream[*item]) {
	streams := make(chan *informer.WatchStream[*item], 1)
	return orderedFuncs{informer.SourceFuncs[*item]{
		ListFunc: func(context.Context, informer.ListOptions) (informer.ListPage[*item], error) {
			return informer.ListPage[*item]{Version: "0"}, nil
		},
		WatchFunc: func(ctx context.Context, _ informer.WatchOptions) (informer.Watcher[*item], error) {
			w := informer.NewWatchStream[*item](ctx, 1024)
			select {
			case streams <- w:
				return w, nil
			case <-ctx.Done(): // a watch the test no longer takes, at stop
				return nil, ctx.Err()
			}
		},
	}}, streams
}

// TestInformerCoalescingHandlerKeepsHeapBounded stalls a coalescing handler
// while 10^6 events over 100 keys flow through the informer: the handler's
// backlog stays at most one entry per key and the heap does not grow with
// the number of events. Then the handler is released and sees each key's
// final state, deletions included. Every wait is bounded (see
// failBefore), so a broken guarantee fails the test with a message instead
// of hanging it.
func TestInformerCoalescingHandlerKeepsHeapBounded(t *testing.T) {
	events := 1_000_000
	if testing.Short() {
		events = 100_000
	}
	const keys = 100
	ctx, bound := failBefore(t)
	src, streams := feedSource()
	inf := newInformer(t, src, nil)
	gate := make(chan struct{})
	release := sync.OnceFunc(func() { close(gate) })
	stalled := &finalState{gate: gate, state: map[string]int{}}
	reg, err := inf.AddHandler(stalled, informer.HandlerOptions{Name: "stalled", Coalesce: true})
	require.NoError(t, err)
	start(t, inf)
	// Cleanups run last-in first-out: a failure while the handler is
	// stalled releases it before start's cleanup waits for Run, which
	// waits for the handler.
	t.Cleanup(release)
	require.NoError(t, informer.WaitForSync(ctx, inf), "not synced within %v", bound)
	var w *informer.WatchStream[*item]
	select {
	case w = <-streams:
	case <-ctx.Done():
		t.Fatalf("no watch within %v", bound)
	}
	// A feed the informer stopped taking: Send returns false at the bound.
	defer context.AfterFunc(ctx, w.Stop)()

	names := make([]string, keys)
	for i := range names {
		names[i] = "k" + strconv.Itoa(i)
	}
	send := func(typ informer.EventType, i, v int) {
		ev := informer.Event[*item]{Type: typ, Object: &item{Name: names[i], Group: "g", V: v}, Version: strconv.Itoa(v)}
		if !w.Send(ev) {
			t.Fatalf("event %d (%s %s) not taken within %v", v, typ, names[i], bound)
		}
	}
	// Warm up: every key exists once and the handler is stuck on the first.
	for i := range keys {
		send(informer.EventAdded, i, i)
	}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	maxBacklog := 0
	for v := keys; v < events; v++ {
		i := v % keys
		switch {
		case v%1000 == 999: // now and then a key is deleted and created again
			send(informer.EventDeleted, i, v)
			v++
			send(informer.EventAdded, i, v)
		default:
			send(informer.EventModified, i, v)
		}
		if v%50_000 == 0 {
			maxBacklog = max(maxBacklog, reg.Backlog())
		}
	}
	// The last word on keys 0..9: deleted.
	for i := range 10 {
		send(informer.EventDeleted, i, events+i)
	}
	require.NoError(t, inf.WaitForVersion(ctx, strconv.Itoa(events+9)), "the last event not applied within %v", bound)
	runtime.GC()
	runtime.ReadMemStats(&after)
	growth := int64(after.HeapAlloc) - int64(before.HeapAlloc)
	t.Logf("%d events: heap %d -> %d bytes (growth %d), max backlog %d", events, before.HeapAlloc, after.HeapAlloc, growth, maxBacklog)
	assert.LessOrEqual(t, maxBacklog, keys, "at most one pending entry per key")
	assert.LessOrEqual(t, reg.Backlog(), keys)
	assert.Less(t, growth, int64(4<<20), "heap must not grow with the number of events")

	release()
	require.NoError(t, informer.WaitForSync(ctx, reg), "the released handler not synced within %v", bound)
	for reg.Backlog() > 0 {
		if ctx.Err() != nil {
			t.Fatalf("the released handler's backlog not drained within %v: %d left", bound, reg.Backlog())
		}
		runtime.Gosched()
	}
	stalled.mu.Lock()
	defer stalled.mu.Unlock()
	cache := inf.Lister()
	assert.Equal(t, cache.Len(), len(stalled.state), "the handler's view equals the cache")
	for name, v := range stalled.state {
		got, ok := cache.Get(name)
		require.True(t, ok, name)
		assert.Equal(t, got.V, v, name)
	}
	for i := range 10 {
		_, ok := stalled.state[names[i]]
		assert.False(t, ok, "deletion of %s not lost", names[i])
	}
}

// failBefore returns a context that ends before go test's -timeout would
// stop the test binary with a panic (at 90% of the time left), or after
// 10 minutes without -timeout, and that bound, for the messages.
func failBefore(t *testing.T) (context.Context, time.Duration) {
	bound := 10 * time.Minute
	if d, ok := t.Deadline(); ok {
		bound = time.Until(d) * 9 / 10
	}
	ctx, cancel := context.WithTimeout(t.Context(), bound)
	t.Cleanup(cancel)
	return ctx, bound.Round(time.Second)
}

// finalState is a handler that tracks the state it was told, after waiting
// for gate to close.
type finalState struct {
	gate  chan struct{}
	mu    sync.Mutex
	state map[string]int
}

func (f *finalState) OnAdd(it *item, _ bool) {
	<-f.gate
	f.mu.Lock()
	f.state[it.Name] = it.V
	f.mu.Unlock()
}
func (f *finalState) OnUpdate(_, it *item) {
	<-f.gate
	f.mu.Lock()
	f.state[it.Name] = it.V
	f.mu.Unlock()
}
func (f *finalState) OnDelete(d informer.Deletion[string, *item]) {
	<-f.gate
	f.mu.Lock()
	delete(f.state, d.Key)
	f.mu.Unlock()
}
