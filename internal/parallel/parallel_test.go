package parallel_test

import (
	"errors"
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/ginformer/ginformer/internal/parallel"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// TestChunksCoversEachIndexOnce: every index is in exactly one call, each
// call's range is within one chunk, and no two calls share a worker at once.
func TestChunksCoversEachIndexOnce(t *testing.T) {
	for _, tc := range []struct{ n, chunk, workers int }{
		{0, 16, 4}, {1, 16, 4}, {15, 16, 4}, {16, 16, 4}, {17, 16, 4},
		{1000, 16, 4}, {1000, 1, 8}, {1000, 0, 3}, {1000, 32, 1}, {1000, 400, 0}, {7, 3, 100},
	} {
		t.Run(fmt.Sprintf("n=%d/chunk=%d/workers=%d", tc.n, tc.chunk, tc.workers), func(t *testing.T) {
			seen := make([]atomic.Int32, tc.n)
			busy := make([]atomic.Bool, max(1, tc.workers))
			err := parallel.Chunks(tc.n, tc.chunk, tc.workers, func(w, lo, hi int) error {
				require.Less(t, w, len(busy))
				assert.False(t, busy[w].Swap(true), "worker %d used twice at once", w)
				defer busy[w].Store(false)
				assert.Less(t, lo, hi)
				assert.LessOrEqual(t, hi-lo, max(1, tc.chunk))
				for i := lo; i < hi; i++ {
					seen[i].Add(1)
				}
				return nil
			})
			require.NoError(t, err)
			for i := range seen {
				assert.Equal(t, int32(1), seen[i].Load(), "index %d", i)
			}
		})
	}
}

// TestForFirstError: an error stops the loop and is returned; with one
// worker the calls run in order, so the first failing index is the last one
// called.
func TestForFirstError(t *testing.T) {
	errBad := errors.New("bad")
	for _, workers := range []int{1, 4} {
		var calls atomic.Int32
		err := parallel.For(10_000, workers, func(i int) error {
			calls.Add(1)
			if i == 10 {
				return fmt.Errorf("index %d: %w", i, errBad)
			}
			return nil
		})
		require.ErrorIs(t, err, errBad)
		if workers == 1 {
			assert.Equal(t, int32(11), calls.Load())
		}
	}
}

func ExampleFor() {
	squares := make([]int, 5)
	_ = parallel.For(len(squares), 4, func(i int) error {
		squares[i] = i * i
		return nil
	})
	fmt.Println(squares)
	// Output: [0 1 4 9 16]
}
