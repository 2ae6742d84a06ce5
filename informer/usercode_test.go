package informer

import (
	"errors"
	"runtime"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestUserCodeCallsAllocateNothing: calling key, index and transform
// functions through safecall.Call, which recovers their panics, adds no
// allocation when they do not panic.
func TestUserCodeCallsAllocateNothing(t *testing.T) {
	p := pod("ns", "a")
	t.Run("DeltaFIFO key", func(t *testing.T) {
		f, err := NewDeltaFIFO(DeltaFIFOOptions[NamespacedKey, *testPod]{KeyFunc: podKey})
		require.NoError(t, err)
		assert.Zero(t, testing.AllocsPerRun(100, func() { _, _ = f.keyOf(p) }))
	})
	t.Run("Indexer update", func(t *testing.T) {
		s := newTestIndexer(testIndexes()[0]) // the namespace index allocates nothing
		require.NoError(t, s.Add(p))
		assert.Zero(t, testing.AllocsPerRun(100, func() {
			if err := s.Update(p); err != nil {
				t.Fatal(err)
			}
		}))
	})
	t.Run("transform", func(t *testing.T) {
		ts := &transformingStore[NamespacedKey, *testPod]{transform: func(p *testPod) (*testPod, error) { return p, nil }}
		assert.Zero(t, testing.AllocsPerRun(100, func() { _, _ = ts.apply(p) }))
	})
}

// TestUserCodePanicsBecomeErrors: a panic in user code comes back wrapped in
// the function's sentinel, with the panic value and the stack.
func TestUserCodePanicsBecomeErrors(t *testing.T) {
	boom := func(*testPod) { panic("boom") }
	f, err := NewDeltaFIFO(DeltaFIFOOptions[NamespacedKey, *testPod]{KeyFunc: func(p *testPod) (NamespacedKey, error) {
		boom(p)
		return NamespacedKey{}, nil
	}})
	require.NoError(t, err)
	s := newTestIndexer(Index[*testPod]{Name: "boom", Func: func(dst []string, p *testPod) ([]string, error) {
		boom(p)
		return dst, nil
	}})
	ts := &transformingStore[NamespacedKey, *testPod]{transform: func(p *testPod) (*testPod, error) {
		var m map[string]int
		//lint:ignore SA5000 the panic of a runtime error is what this transform is for
		m["x"]++
		return p, nil
	}}
	tests := []struct {
		name     string
		call     func() error
		sentinel error
		prefix   string
	}{
		{"DeltaFIFO key", func() error { return f.Add(pod("ns", "a")) }, ErrKeyFunc, "informer: key function failed: panic: boom\n"},
		{"index", func() error { return s.Add(pod("ns", "a")) }, ErrIndexFunc, `index "boom", key ns/a: informer: index function failed: panic: boom` + "\n"},
		{"transform", func() error { _, err := ts.apply(pod("ns", "a")); return err }, ErrTransform, "informer: transform function failed: panic: assignment to entry in nil map\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.call()
			require.ErrorIs(t, err, tt.sentinel)
			assert.Regexp(t, `^\Q`+tt.prefix+`\E(?s:.*)goroutine \d+ `, err.Error(), "sentinel, panic value, then the stack")
			if tt.name == "transform" {
				var re runtime.Error
				assert.True(t, errors.As(err, &re), "a runtime error panic unwraps to it")
			}
		})
	}
}
