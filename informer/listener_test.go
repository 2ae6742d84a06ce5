package informer

import (
	"context"
	"errors"
	"runtime"
	"sync"
	"testing"
	"testing/synctest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func note(kind noteKind, key, obj string) notification[string, string] {
	return notification[string, string]{kind: kind, key: key, obj: obj}
}

func TestNotificationMergeRules(t *testing.T) {
	add, upd, del := noteAdd, noteUpdate, noteDelete
	tests := []struct {
		name string
		in   []notification[string, string]
		want notification[string, string]
	}{
		{"add+update=add of newest", []notification[string, string]{note(add, "k", "v1"), {kind: upd, key: "k", old: "v1", obj: "v2"}},
			note(add, "k", "v2")},
		{"add+delete=nothing", []notification[string, string]{note(add, "k", "v1"), note(del, "k", "v1")},
			notification[string, string]{kind: noteNone, key: "k"}},
		{"update+update keeps first old", []notification[string, string]{{kind: upd, key: "k", old: "v1", obj: "v2"}, {kind: upd, key: "k", old: "v2", obj: "v3"}},
			notification[string, string]{kind: upd, key: "k", old: "v1", obj: "v3"}},
		{"update+delete=delete", []notification[string, string]{{kind: upd, key: "k", old: "v1", obj: "v2"}, note(del, "k", "v2")},
			note(del, "k", "v2")},
		{"delete+add=replaced", []notification[string, string]{note(del, "k", "v1"), note(add, "k", "w1")},
			notification[string, string]{kind: noteReplaced, key: "k", old: "v1", obj: "w1"}},
		{"replaced+update", []notification[string, string]{note(del, "k", "v1"), note(add, "k", "w1"), {kind: upd, key: "k", old: "w1", obj: "w2"}},
			notification[string, string]{kind: noteReplaced, key: "k", old: "v1", obj: "w2"}},
		{"replaced+delete=delete", []notification[string, string]{note(del, "k", "v1"), note(add, "k", "w1"), note(del, "k", "w1")},
			note(del, "k", "w1")},
		{"add+delete+add=add", []notification[string, string]{note(add, "k", "v1"), note(del, "k", "v1"), note(add, "k", "v2")},
			note(add, "k", "v2")},
		{"delete unknown then delete known keeps known", []notification[string, string]{{kind: del, key: "k", obj: "v1"}, {kind: del, key: "k", obj: "v0", unknown: true}},
			note(del, "k", "v1")},
		{"delete known... then unknown replaced by known", []notification[string, string]{{kind: del, key: "k", obj: "v0", unknown: true}, {kind: del, key: "k", obj: "v1"}},
			note(del, "k", "v1")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := tt.in[0]
			for _, n := range tt.in[1:] {
				p.merge(n)
			}
			assert.Equal(t, tt.want, p)
		})
	}
}

// recorder is a Handler[string, string] that logs calls and can be stalled.
type recorder struct {
	mu    sync.Mutex
	calls []string
	gate  chan struct{} // if non-nil, each call waits for a receive from it
	panic string        // a call whose object equals this panics
}

func (r *recorder) log(s, obj string) {
	if r.gate != nil {
		<-r.gate
	}
	r.mu.Lock()
	r.calls = append(r.calls, s)
	r.mu.Unlock()
	if obj != "" && obj == r.panic {
		panic("boom on " + obj)
	}
}
func (r *recorder) OnAdd(obj string, initial bool) {
	if initial {
		r.log("add* "+obj, obj)
		return
	}
	r.log("add "+obj, obj)
}
func (r *recorder) OnUpdate(old, new string) { r.log("update "+old+"->"+new, new) }
func (r *recorder) OnDelete(d Deletion[string, string]) {
	s := "delete " + d.Key + "=" + d.Object
	if d.FinalStateUnknown {
		s += "?"
	}
	r.log(s, d.Object)
}
func (r *recorder) got() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.calls...)
}

func startListener(t *testing.T, l *listener[string, string]) (stop func()) {
	ctx, cancel := context.WithCancel(t.Context())
	var wg sync.WaitGroup
	wg.Go(func() { l.run(ctx) })
	return func() { cancel(); wg.Wait() }
}

func TestListenerEveryEventInOrder(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := &recorder{}
		l := newListener[string, string](h, "h", false, 0, nil)
		stop := startListener(t, l)
		l.enqueue(note(noteAdd, "a", "a1"), notification[string, string]{kind: noteUpdate, key: "a", old: "a1", obj: "a2"},
			notification[string, string]{kind: noteAdd, key: "b", obj: "b1", initial: true}, note(noteDelete, "a", "a2"), notification[string, string]{kind: noteSynced})
		synctest.Wait()
		assert.Equal(t, []string{"add a1", "update a1->a2", "add* b1", "delete a=a2"}, h.got())
		select {
		case <-l.synced:
		default:
			t.Error("sync marker not delivered")
		}
		stop()
	})
}

func TestListenerCoalescingStalledHandler(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := &recorder{gate: make(chan struct{})}
		l := newListener[string, string](h, "h", true, 0, nil)
		stop := startListener(t, l)
		l.enqueue(note(noteAdd, "x", "x0")) // taken by the goroutine, which then stalls in the handler
		synctest.Wait()
		l.enqueue(
			note(noteAdd, "a", "a1"),
			notification[string, string]{kind: noteUpdate, key: "a", old: "a1", obj: "a2"},
			note(noteAdd, "b", "b1"), note(noteDelete, "b", "b1"), // never seen: cancels out
			notification[string, string]{kind: noteUpdate, key: "x", old: "x0", obj: "x1"},
			note(noteDelete, "x", "x1"), // update then delete: delete, never lost
			note(noteAdd, "c", "c1"),
		)
		assert.Equal(t, 4, l.backlog(), "one entry per distinct key (b's cancelled entry included)")
		close(h.gate)
		synctest.Wait()
		assert.Equal(t, []string{"add x0", "add a2", "delete x=x1", "add c1"}, h.got())
		assert.Equal(t, 0, l.backlog())
		stop()
	})
}

func TestListenerCoalescingMemoryIsBoundedByKeys(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		gate := make(chan struct{})
		h := &recorder{gate: gate}
		l := newListener[string, string](h, "h", true, 0, nil)
		stop := startListener(t, l)
		keys := make([]string, 100)
		for i := range keys {
			keys[i] = string(rune('A'+i%26)) + string(rune('a'+i/26))
		}
		l.enqueue(note(noteAdd, "first", "v"))
		synctest.Wait() // the handler is now stalled
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		for i := range 1_000_000 {
			k := keys[i%len(keys)]
			switch i % 3 {
			case 0:
				l.enqueue(note(noteAdd, k, k))
			case 1:
				l.enqueue(notification[string, string]{kind: noteUpdate, key: k, old: k, obj: k})
			case 2:
				l.enqueue(note(noteDelete, k, k))
			}
		}
		runtime.GC()
		runtime.ReadMemStats(&after)
		assert.LessOrEqual(t, l.backlog(), len(keys))
		growth := int64(after.HeapAlloc) - int64(before.HeapAlloc)
		assert.Less(t, growth, int64(1<<20), "heap grew by %d bytes for 10^6 events", growth)
		close(gate)
		synctest.Wait()
		stop()
	})
}

func TestListenerRecoversPanics(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := &recorder{panic: "bad"}
		var errs []error
		l := newListener[string, string](h, "h", false, 0, func(name string, err error) { errs = append(errs, err) })
		stop := startListener(t, l)
		l.enqueue(note(noteAdd, "a", "bad"), note(noteAdd, "b", "good"))
		synctest.Wait()
		stop()
		assert.Equal(t, []string{"add bad", "add good"}, h.got(), "the next notification is still delivered")
		require.Len(t, errs, 1)
		assert.True(t, errors.Is(errs[0], ErrHandlerPanic))
		assert.Contains(t, errs[0].Error(), "boom on bad")
	})
}

// TestListenerBatchBacklogAndStop: the goroutine takes everything queued at
// once; what it holds still counts in the backlog until each call starts,
// notifications queued meanwhile wait for the next batch, and a stop in the
// middle of a batch drops the rest of it.
func TestListenerBatchBacklogAndStop(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := &recorder{gate: make(chan struct{})}
		l := newListener[string, string](h, "h", false, 0, nil)
		stop := startListener(t, l)
		defer stop()
		l.enqueue(note(noteAdd, "a", "a"), note(noteAdd, "b", "b"), notification[string, string]{kind: noteSynced}, note(noteAdd, "c", "c"))
		synctest.Wait() // the goroutine took all four and waits in the call for a
		assert.Equal(t, 2, l.backlog(), "b and c; the call in progress and the marker are not counted")
		started, seq, key := l.call()
		assert.NotZero(t, started)
		assert.Equal(t, uint64(1), seq)
		assert.Equal(t, "a", key)
		l.enqueue(note(noteAdd, "d", "d"))
		assert.Equal(t, 3, l.backlog())
		h.gate <- struct{}{} // a returns; b starts
		synctest.Wait()
		assert.Equal(t, 2, l.backlog())
		l.close()
		h.gate <- struct{}{} // b returns: the marker, c and d are dropped
		<-l.done
		assert.Equal(t, []string{"add a", "add b"}, h.got())
		assert.Equal(t, 0, l.backlog())
		select {
		case <-l.synced:
			t.Error("the marker was delivered after the stop")
		default:
		}
	})
}

// TestListenerNoWakeWhileBusy: enqueues signal the goroutine only when it
// waits for work.
func TestListenerNoWakeWhileBusy(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := &recorder{gate: make(chan struct{})}
		l := newListener[string, string](h, "h", false, 0, nil)
		stop := startListener(t, l)
		defer stop()
		synctest.Wait() // idle: waits on wake
		l.enqueue(note(noteAdd, "a", "a"))
		synctest.Wait() // busy in the call for a
		for _, k := range []string{"b", "c", "d"} {
			l.enqueue(note(noteAdd, k, k))
		}
		assert.Empty(t, l.wake, "no signal while the goroutine is busy")
		close(h.gate)
		synctest.Wait()
		assert.Equal(t, []string{"add a", "add b", "add c", "add d"}, h.got())
	})
}

// TestListenerSharedBatch: two every-event listeners and a coalescing one
// receive the same batch; only a listener due for resync gets its resync
// updates; the batch goes back to its pool once every holder released it.
func TestListenerSharedBatch(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var pool sync.Pool
		due, notDue, coal := &recorder{}, &recorder{}, &recorder{}
		ls := []*listener[string, string]{
			newListener[string, string](due, "due", false, 0, nil),
			newListener[string, string](notDue, "not-due", false, 0, nil),
			newListener[string, string](coal, "coal", true, 0, nil),
		}
		for _, l := range ls {
			defer startListener(t, l)()
		}
		b := getBatch[string, string](&pool)
		b.notes = append(b.notes, note(noteAdd, "a", "a1"),
			notification[string, string]{kind: noteUpdate, key: "b", old: "b1", obj: "b1"},
			notification[string, string]{kind: noteUpdate, key: "a", old: "a1", obj: "a2"})
		b.syncs = append(b.syncs, false, true, false)
		b.nsync = 1
		// The listeners wait for work and are not woken until signalled, so
		// the count is read before any of them can release the batch.
		synctest.Wait()
		for i, l := range ls {
			require.True(t, l.enqueueBatch(b, i == 0), "idle listener %s must be signalled", l.name)
		}
		assert.Equal(t, int32(3), b.refs.Load(), "the caller's and two every-event listeners'")
		for _, l := range ls {
			l.signal()
		}
		b.release()
		synctest.Wait()
		assert.Equal(t, []string{"add a1", "update b1->b1", "update a1->a2"}, due.got())
		assert.Equal(t, []string{"add a1", "update a1->a2"}, notDue.got())
		assert.Equal(t, []string{"add a2"}, coal.got(), "coalesced: add then update")
		assert.Equal(t, int32(0), b.refs.Load())
		assert.Empty(t, b.notes, "released to the pool, cleared")
	})
}
