package informer

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
)

// fakeSeqs stands for the DeltaFIFO's sequence numbers.
type fakeSeqs struct {
	mu             sync.Mutex
	tail, finished uint64
}

func (f *fakeSeqs) get() (uint64, uint64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.tail, f.finished
}

func (f *fakeSeqs) set(tail, finished uint64) {
	f.mu.Lock()
	f.tail, f.finished = tail, finished
	f.mu.Unlock()
}

// intComparer orders decimal versions.
type intComparer struct{}

func (intComparer) CompareVersions(a, b string) (int, error) {
	x, err1 := strconv.Atoi(a)
	y, err2 := strconv.Atoi(b)
	if err1 != nil || err2 != nil {
		return 0, fmt.Errorf("not ints: %q %q", a, b) // no ErrInvalidVersion: the tracker adds it
	}
	return x - y, nil // any sign, not just -1/0/+1
}

// orderedScript is a scriptSource with decimal versions, ordered.
type orderedScript struct {
	*scriptSource
	intComparer
}

// waitAsync starts a wait and returns its result channel.
func waitAsync(ctx context.Context, wait func(context.Context, string) error, version string) chan error {
	ch := make(chan error, 1)
	go func() { ch <- wait(ctx, version) }()
	return ch
}

func requirePending(t *testing.T, ch chan error) {
	t.Helper()
	synctest.Wait()
	select {
	case err := <-ch:
		t.Fatalf("wait returned early: %v", err)
	default:
	}
}

// A version is applied once the FIFO has finished every entry below the
// tail it was recorded with; versions recorded at the same tail are applied
// together.
func TestVersionTrackerMarks(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		seqs := &fakeSeqs{}
		vt := newVersionTracker("t", intComparer{}, seqs.get, nil)
		vt.record("10") // nothing queued: applied at once
		require.NoError(t, vt.wait(t.Context(), "10"))

		seqs.set(2, 0) // two entries queued
		vt.record("11")
		vt.record("12") // same tail: coalesced with 11
		seqs.set(3, 0)
		vt.record("13")
		w11, w12, w13 := waitAsync(t.Context(), vt.wait, "11"), waitAsync(t.Context(), vt.wait, "12"), waitAsync(t.Context(), vt.wait, "13")
		wlater := waitAsync(t.Context(), vt.wait, "14") // not received yet
		requirePending(t, w11)
		assert.Equal(t, 2, vt.pending.Len(), "11 and 12 share one mark")

		seqs.set(3, 1)
		vt.advanceTo(1) // entry 1 is still in flight
		requirePending(t, w12)
		seqs.set(3, 2)
		vt.advanceTo(2)
		require.NoError(t, <-w11)
		require.NoError(t, <-w12)
		requirePending(t, w13)
		v, at := vt.current()
		assert.Equal(t, "12", v)
		assert.Equal(t, time.Now(), at)

		// The batch finished, and no advance followed: the next record
		// sees it and applies everything at once.
		seqs.set(3, 3)
		vt.record("14")
		require.NoError(t, <-w13)
		require.NoError(t, <-wlater)
		assert.Zero(t, vt.pending.Len())
	})
}

// With a comparer, any later version satisfies a wait, and the comparer's
// errors are classified as ErrInvalidVersion.
func TestVersionTrackerOrdered(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		seqs := &fakeSeqs{}
		vt := newVersionTracker("t", intComparer{}, seqs.get, nil)
		w5 := waitAsync(t.Context(), vt.wait, "5")
		requirePending(t, w5)
		seqs.set(1, 0)
		vt.record("7") // queued
		requirePending(t, w5)
		seqs.set(1, 1)
		vt.advanceTo(1)
		require.NoError(t, <-w5)
		require.NoError(t, vt.wait(t.Context(), "7"))
		require.ErrorIs(t, vt.wait(t.Context(), "x"), ErrInvalidVersion)

		vt.record("3") // a relist at an older version: the cache is older now
		v, _ := vt.current()
		assert.Equal(t, "3", v)
		w4 := waitAsync(t.Context(), vt.wait, "4")
		requirePending(t, w4)
		vt.stop()
		require.ErrorIs(t, <-w4, ErrClosed)
		require.NoError(t, vt.wait(t.Context(), "2"), "applied before the stop")
	})
}

// appliedVersion follows the cache, including a relist at an older version.
func TestAppliedVersion(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		src := newScriptSource() // lists a, b at "10"
		inf, err := NewSharedInformer(Options[string, string]{Source: orderedScript{scriptSource: src}, KeyFunc: func(s string) (string, error) { return s, nil }})
		require.NoError(t, err)
		v, at := inf.appliedVersion()
		assert.Empty(t, v)
		assert.True(t, at.IsZero())

		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan error, 1)
		go func() { done <- inf.Run(ctx) }()
		require.NoError(t, inf.WaitForVersion(ctx, "10"))
		v, at = inf.appliedVersion()
		assert.Equal(t, "10", v)
		assert.Equal(t, time.Now(), at)

		w := <-src.streams
		time.Sleep(time.Second) // synctest's clock
		w.Send(Event[string]{Type: EventAdded, Object: "c", Version: "11"})
		require.NoError(t, inf.WaitForVersion(ctx, "11"))
		v, at = inf.appliedVersion()
		assert.Equal(t, "11", v)
		assert.Equal(t, time.Now(), at)

		// A relist at an older version.
		src.mu.Lock()
		src.listFn = func(int, ListOptions) (ListPage[string], error) {
			return ListPage[string]{Items: []string{"a"}, Version: "9"}, nil
		}
		src.mu.Unlock()
		w.Send(Event[string]{Type: EventError, Err: fmt.Errorf("gone: %w", ErrExpired)})
		synctest.Wait() // relisted: WaitForVersion("9") would return at once, "11" is later
		v, _ = inf.appliedVersion()
		assert.Equal(t, "9", v)
		assert.Equal(t, 1, inf.Lister().Len())

		cancel()
		require.NoError(t, <-done)
	})
}
