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

func (vt *versionTracker) waitFor(ctx context.Context, version string) error {
	if vt.cmp != nil {
		return vt.waitOrdered(ctx, version)
	}
	return vt.waitEqual(ctx, version)
}

// A version is applied once the FIFO has finished every entry below the
// tail it was recorded with; versions recorded at the same tail are applied
// together.
func TestVersionTrackerEquality(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		seqs := &fakeSeqs{}
		vt := newVersionTracker("t", nil, seqs.get, nil)
		vt.record("v0") // nothing queued: applied at once
		require.NoError(t, vt.waitFor(t.Context(), "v0"))

		seqs.set(2, 0) // two entries queued
		vt.record("a")
		vt.record("b") // same tail: coalesced with a
		seqs.set(3, 0)
		vt.record("c")
		wa, wb, wc := waitAsync(t.Context(), vt.waitFor, "a"), waitAsync(t.Context(), vt.waitFor, "b"), waitAsync(t.Context(), vt.waitFor, "c")
		wlater := waitAsync(t.Context(), vt.waitFor, "later") // not received yet
		requirePending(t, wa)
		assert.Equal(t, 2, vt.pending.Len(), "a and b share one mark")

		seqs.set(3, 1)
		vt.advance() // entry 1 is still in flight
		requirePending(t, wb)
		seqs.set(3, 2)
		vt.advance()
		require.NoError(t, <-wa)
		require.NoError(t, <-wb)
		requirePending(t, wc)
		v, at := vt.current()
		assert.Equal(t, "b", v)
		assert.Equal(t, time.Now(), at)

		// The batch finished, and no advance followed: the next record
		// sees it and applies everything at once.
		seqs.set(3, 3)
		vt.record("later")
		require.NoError(t, <-wc)
		require.NoError(t, <-wlater)
		assert.Zero(t, vt.pending.Len())
		assert.Empty(t, vt.waiters, "no waiter left behind")
	})
}

// Without a comparer only the last rememberedVersions versions are known:
// older ones no longer match, even though they were applied.
func TestVersionTrackerRemembers(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		vt := newVersionTracker("t", nil, (&fakeSeqs{}).get, nil)
		for i := range rememberedVersions + 10 {
			vt.record("v" + strconv.Itoa(i))
		}
		require.NoError(t, vt.waitFor(t.Context(), "v10"), "the oldest remembered")
		ctx, cancel := context.WithTimeout(t.Context(), time.Second)
		defer cancel()
		err := vt.waitFor(ctx, "v9")
		require.ErrorIs(t, err, context.DeadlineExceeded)
		assert.Contains(t, err.Error(), fmt.Sprintf(`the cache is at version "v%d"`, rememberedVersions+9))
		assert.Equal(t, rememberedVersions, vt.recent.Len())
		assert.Empty(t, vt.waiters, "a waiter gone on timeout leaves nothing behind")
	})
}

// With a comparer, any later version satisfies a wait, and the comparer's
// errors are classified as ErrInvalidVersion.
func TestVersionTrackerOrdered(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		seqs := &fakeSeqs{}
		vt := newVersionTracker("t", intComparer{}, seqs.get, nil)
		w5 := waitAsync(t.Context(), vt.waitFor, "5")
		requirePending(t, w5)
		seqs.set(1, 0)
		vt.record("7") // queued
		requirePending(t, w5)
		seqs.set(1, 1)
		vt.advance()
		require.NoError(t, <-w5)
		require.NoError(t, vt.waitFor(t.Context(), "7"))
		require.ErrorIs(t, vt.waitFor(t.Context(), "x"), ErrInvalidVersion)

		vt.record("3") // a relist at an older version: the cache is older now
		v, _ := vt.current()
		assert.Equal(t, "3", v)
		w4 := waitAsync(t.Context(), vt.waitFor, "4")
		requirePending(t, w4)
		vt.stop()
		require.ErrorIs(t, <-w4, ErrClosed)
		require.NoError(t, vt.waitFor(t.Context(), "2"), "applied before the stop")
	})
}

// appliedVersion follows the cache, including a relist at an older version.
func TestAppliedVersion(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		src := newScriptSource() // lists a, b at "10"; no VersionComparer
		inf, err := NewSharedInformer(Options[string, string]{Source: src, KeyFunc: func(s string) (string, error) { return s, nil }})
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
		require.NoError(t, inf.WaitForVersion(ctx, "9"))
		v, _ = inf.appliedVersion()
		assert.Equal(t, "9", v)
		assert.Equal(t, 1, inf.Lister().Len())

		cancel()
		require.NoError(t, <-done)
	})
}
