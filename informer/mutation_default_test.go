package informer

import (
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// copyInner is a cached object the mutation detector copies by reflection.
type copyInner struct{ N int }

type withDeepCopy struct{ N int }

func (w *withDeepCopy) DeepCopy() *withDeepCopy { return &withDeepCopy{N: w.N + 1} }

// TestDefaultCopy: a DeepCopy method returning T is preferred to reflection.
func TestDefaultCopy(t *testing.T) {
	assert.Equal(t, 2, defaultCopy[*withDeepCopy]()(&withDeepCopy{N: 1}).N)
	assert.Equal(t, 1, defaultCopy[withDeepCopy]()(withDeepCopy{N: 1}).N, "the method is on the pointer: reflection")
}

// TestMutationDetectorPanicMode: with Panic, a detected mutation is reported
// and then panics with the same error.
func TestMutationDetectorPanicMode(t *testing.T) {
	var reported []error
	d, err := newMutationDetector[string]("i", MutationDetectorOptions[*copyInner]{Enabled: true, Panic: true},
		func(err error) { reported = append(reported, err) })
	require.NoError(t, err)
	obj := &copyInner{N: 1}
	ws := []write[string, *copyInner]{{key: "k", obj: obj}}
	d.copyWrites(ws)
	d.committed(ws)
	d.checkAll() // unchanged: nothing
	require.Empty(t, reported)
	obj.N = 2
	want := `informer "i": cached object k was modified in place (.N: 1 -> 2): informer: cached object modified in place`
	require.PanicsWithError(t, want, d.checkAll)
	require.Len(t, reported, 1)
	assert.True(t, errors.Is(reported[0], ErrCacheMutated))
	assert.NotPanics(t, d.checkAll, "reported once")
	// Deleting it ends its tracking.
	d.copyWrites([]write[string, *copyInner]{{key: "k", del: true}})
	d.committed([]write[string, *copyInner]{{key: "k", del: true}})
	assert.Empty(t, d.records)

	t.Setenv(MutationDetectorEnv, "panic")
	d, err = newMutationDetector[string]("i", MutationDetectorOptions[*copyInner]{}, func(error) {})
	require.NoError(t, err)
	require.NotNil(t, d)
	assert.True(t, d.panics)
	assert.Equal(t, time.Second, d.interval)
}
