package informer

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The direct hand-off (see process.go): a lone watch event is processed on
// the reflector's goroutine, a busy stream is queued for the processing
// loop, and either way handlers see what the queue's rules give.

// directKey keys the objects of these tests: "key:version".
func directKey(obj string) (string, error) {
	k, _, _ := strings.Cut(obj, ":")
	return k, nil
}

// gates makes the index function of an informer wait, for the objects it
// holds a gate for, until the gate is closed.
type gates struct {
	mu sync.Mutex
	m  map[string]chan struct{}
}

func (g *gates) add(obj string) chan struct{} {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.m == nil {
		g.m = map[string]chan struct{}{}
	}
	ch := make(chan struct{})
	g.m[obj] = ch
	return ch
}

func (g *gates) index() Index[string] {
	return Index[string]{Name: "gated", Func: func(dst []string, obj string) ([]string, error) {
		g.mu.Lock()
		ch := g.m[obj]
		g.mu.Unlock()
		if ch != nil {
			<-ch
		}
		return append(dst, "all"), nil
	}}
}

// directFixture is a running informer over a scriptSource whose watch
// stream the test feeds (buffer events), with one recording handler.
type directFixture struct {
	inf    *SharedInformer[string, string]
	w      *WatchStream[string]
	h      *recorder
	gates  *gates
	cancel context.CancelFunc
	done   chan error
}

func newDirectFixture(t *testing.T, buffer int, list ...string) *directFixture {
	t.Helper()
	return newDirectFixtureResync(t, buffer, 0, list...)
}

// newDirectFixtureResync is newDirectFixture with the informer's resync
// period.
func newDirectFixtureResync(t *testing.T, buffer int, resync time.Duration, list ...string) *directFixture {
	t.Helper()
	src := newScriptSource()
	src.listFn = func(int, ListOptions) (ListPage[string], error) {
		return ListPage[string]{Items: list, Version: "1"}, nil
	}
	src.watchFn = func(ctx context.Context, _ int, opts WatchOptions) (Watcher[string], error) {
		w := NewWatchStream[string](ctx, buffer)
		src.streams <- w
		return w, nil
	}
	fx := &directFixture{h: &recorder{}, gates: &gates{}, done: make(chan error, 1)}
	inf, err := NewSharedInformer(Options[string, string]{
		Source: src, KeyFunc: directKey, Indexes: []Index[string]{fx.gates.index()}, Name: "direct",
		ListWatch: ListWatchOptions{DisableStreamingList: true}, ResyncPeriod: resync,
	})
	require.NoError(t, err)
	_, err = inf.AddHandler(fx.h, HandlerOptions{})
	require.NoError(t, err)
	fx.inf = inf
	ctx, cancel := context.WithCancel(context.Background())
	fx.cancel = cancel
	go func() { fx.done <- inf.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		<-fx.done
	})
	fx.w = <-src.streams
	synctest.Wait()
	require.True(t, inf.HasSynced())
	return fx
}

// send sends obj as an event of type t at version v (blocks like
// WatchStream.Send).
func (fx *directFixture) send(t EventType, obj, v string) {
	fx.w.Send(Event[string]{Type: t, Object: obj, Version: v})
}

// sendAsync sends from another goroutine and returns a channel closed once
// the send has returned.
func (fx *directFixture) sendAsync(t EventType, obj, v string) <-chan struct{} {
	sent := make(chan struct{})
	go func() {
		defer close(sent)
		fx.send(t, obj, v)
	}()
	return sent
}

func isClosed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// A lone event is processed on the reflector's goroutine: while its index
// function runs, the reflector reads nothing more from the stream, nothing
// is queued, and the version is received but not applied.
func TestDirectHandOffLoneEvent(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fx := newDirectFixture(t, 0)
		gate := fx.gates.add("a:2")
		fx.send(EventAdded, "a:2", "2")
		synctest.Wait() // the reflector's goroutine is in the index function
		assert.Equal(t, "2", fx.inf.LastSyncVersion(), "received")
		applied, _ := fx.inf.appliedVersion()
		assert.Equal(t, "1", applied, "not applied yet")
		assert.Zero(t, fx.inf.QueueDepth(), "not queued")
		sent := fx.sendAsync(EventAdded, "b:3", "3")
		synctest.Wait()
		assert.False(t, isClosed(sent), "the reflector is busy applying a:2: it reads nothing more")

		close(gate)
		synctest.Wait()
		assert.True(t, isClosed(sent))
		assert.Equal(t, []string{"add a:2", "add b:3"}, fx.h.got())
		applied, _ = fx.inf.appliedVersion()
		assert.Equal(t, "3", applied)
		assert.Zero(t, fx.inf.QueueDepth())
	})
}

// A busy stream is queued: events that are already waiting when the
// reflector comes back for them go to the processing loop, so the reflector
// goes on reading while the loop is in an index function.
func TestDirectHandOffBusyStreamQueues(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fx := newDirectFixture(t, 8)
		ga := fx.gates.add("a:2")
		gb := fx.gates.add("b:3")
		fx.send(EventAdded, "a:2", "2") // lone: applied by the reflector, which waits in the gate
		synctest.Wait()
		fx.send(EventAdded, "b:3", "3") // buffered: waiting when the reflector comes back
		fx.send(EventAdded, "c:4", "4")
		close(ga)
		synctest.Wait() // b:3 and c:4 were queued; the loop waits in b:3's gate
		assert.Equal(t, "4", fx.inf.LastSyncVersion(), "the reflector read on while the loop was busy")
		applied, _ := fx.inf.appliedVersion()
		assert.Equal(t, "2", applied)
		fx.send(EventModified, "c:5", "5") // the loop holds a batch: queued, even though the reflector waited for it
		synctest.Wait()
		assert.Equal(t, "5", fx.inf.LastSyncVersion())
		close(gb)
		synctest.Wait()
		assert.Equal(t, []string{"add a:2", "add b:3", "add c:4", "update c:4->c:5"}, fx.h.got())
		applied, _ = fx.inf.appliedVersion()
		assert.Equal(t, "5", applied)
	})
}

// A handler added while the reflector applies an event directly (AddHandler
// does not wait for index functions: they run with no lock held) receives
// that event exactly once: in its snapshot if the commit came first, else
// as a notification.
func TestDirectHandOffAddHandlerDuringEvent(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fx := newDirectFixture(t, 0, "x:1")
		gate := fx.gates.add("a:2")
		fx.send(EventAdded, "a:2", "2")
		synctest.Wait()
		late := &recorder{}
		reg, err := fx.inf.AddHandler(late, HandlerOptions{})
		require.NoError(t, err)
		close(gate)
		fx.send(EventModified, "a:3", "3")
		synctest.Wait()
		require.True(t, reg.HasSynced())
		assert.Equal(t, []string{"add* x:1", "add a:2", "update a:2->a:3"}, late.got())
		assert.Equal(t, []string{"add* x:1", "add a:2", "update a:2->a:3"}, fx.h.got())
	})
}

// Run waits for a direct hand-off in progress when its context ends, as it
// waits for the processing loop.
func TestDirectHandOffShutdownWaits(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fx := newDirectFixture(t, 0)
		gate := fx.gates.add("a:2")
		fx.send(EventAdded, "a:2", "2")
		synctest.Wait()
		fx.cancel()
		synctest.Wait()
		select {
		case err := <-fx.done:
			t.Fatalf("Run returned (%v) while the reflector was applying an event", err)
		default:
		}
		close(gate)
		require.NoError(t, <-fx.done)
		fx.done <- nil // for the cleanup
	})
}

// Ordering model: a random mix of lone events (the test waits until
// everything is idle before sending: applied directly) and bursts (sent
// into a buffered stream at once: queued), with a handler added part way
// and periodic resyncs (queued for the loop) now and then. Each handler must
// see, per key, exactly the events of that key in order (the late one: from
// its snapshot on; resyncs as updates from the state delivered to itself),
// and the cache must end as the source.
func TestDirectHandOffOrderingModel(t *testing.T) {
	for seed := range uint64(20) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				rng := rand.New(rand.NewPCG(seed, 3))
				fx := newDirectFixtureResync(t, 16, time.Second)
				keys := []string{"a", "b", "c", "d"}
				state := map[string]int{} // version per key; absent: deleted
				var late *recorder
				lateAt := rng.IntN(150)
				v := 1
				for step := range 150 {
					if step == lateAt {
						late = &recorder{}
						_, err := fx.inf.AddHandler(late, HandlerOptions{})
						require.NoError(t, err)
					}
					n := 1
					if rng.IntN(3) == 0 {
						n = 1 + rng.IntN(12) // a burst
					}
					for range n {
						k := keys[rng.IntN(len(keys))]
						v++
						obj := k + ":" + strconv.Itoa(v)
						switch _, ok := state[k]; {
						case !ok:
							fx.send(EventAdded, obj, strconv.Itoa(v))
							state[k] = v
						case rng.IntN(4) == 0:
							fx.send(EventDeleted, k+":"+strconv.Itoa(state[k]), strconv.Itoa(v))
							delete(state, k)
						default:
							fx.send(EventModified, obj, strconv.Itoa(v))
							state[k] = v
						}
					}
					if n == 1 || rng.IntN(2) == 0 {
						synctest.Wait() // idle again: the next event is a lone one
					}
					if rng.IntN(10) == 0 {
						time.Sleep(time.Second) // a resync is due
					}
				}
				synctest.Wait()
				for k, ver := range state {
					got, ok := fx.inf.Lister().Get(k)
					require.True(t, ok, k)
					require.Equal(t, k+":"+strconv.Itoa(ver), got)
				}
				require.Equal(t, len(state), fx.inf.Lister().Len())
				checkStories(t, fx.h.got(), state)
				checkStories(t, late.got(), state)
				resyncs := 0
				for _, c := range fx.h.got() {
					if old, obj, ok := strings.Cut(strings.TrimPrefix(c, "update "), "->"); ok && old == obj {
						resyncs++
					}
				}
				require.NotZero(t, resyncs, "the model resynced")
			})
		})
	}
}

// checkStories checks a handler's calls per key: each add finds the key
// absent, each update's old state is the state last delivered and each
// delete carries it, and the key ends at the final state (absent: deleted).
func checkStories(t *testing.T, calls []string, final map[string]int) {
	t.Helper()
	last := map[string]string{}
	for _, c := range calls {
		verb, rest, _ := strings.Cut(c, " ")
		switch verb {
		case "add", "add*":
			k, _ := directKey(rest)
			_, seen := last[k]
			require.False(t, seen, "add of a key present: %q", c)
			last[k] = rest
		case "update":
			old, obj, _ := strings.Cut(rest, "->")
			k, _ := directKey(obj)
			require.Equal(t, last[k], old, "update from a state not delivered: %q", c)
			last[k] = obj
		case "delete":
			k, obj, _ := strings.Cut(rest, "=")
			require.Equal(t, last[k], obj, "delete of a state not delivered: %q", c)
			delete(last, k)
		default:
			t.Fatalf("unexpected call %q", c)
		}
	}
	require.Len(t, last, len(final))
	for k, v := range final {
		require.Equal(t, k+":"+strconv.Itoa(v), last[k], k)
	}
}
