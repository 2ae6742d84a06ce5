package ringbuf

import (
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestChunkedModel runs random pushes, pops, swaps and trims against a
// slice model, on a pair of queues handing items over as a producer and a
// consumer do.
func TestChunkedModel(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	var prod, cons Chunked[int]
	var modelProd, modelCons []int
	next := 0
	for step := range 20_000 {
		switch op := rng.IntN(10); {
		case op < 5:
			for range rng.IntN(200) {
				prod.Push(next)
				modelProd = append(modelProd, next)
				next++
			}
		case op < 8:
			for range rng.IntN(150) {
				v, ok := cons.Pop()
				if len(modelCons) == 0 {
					require.False(t, ok, "step %d", step)
					break
				}
				require.True(t, ok, "step %d", step)
				require.Equal(t, modelCons[0], v, "step %d", step)
				modelCons = modelCons[1:]
			}
		case op < 9:
			if cons.Len() == 0 {
				cons.Trim(rng.IntN(4))
				prod.Swap(&cons)
				modelProd, modelCons = nil, modelProd
			}
		default:
			prod.Trim(rng.IntN(3))
		}
		require.Equal(t, len(modelProd), prod.Len(), "step %d", step)
		require.Equal(t, len(modelCons), cons.Len(), "step %d", step)
	}
}

// TestChunkedReusesChunks checks that a queue filled and drained again
// allocates nothing once it has held as much, and that popped slots are
// zeroed.
func TestChunkedReusesChunks(t *testing.T) {
	var q Chunked[*int]
	fill := func() {
		for range 1000 {
			q.Push(new(int))
		}
		for range 1000 {
			_, _ = q.Pop()
		}
	}
	fill()
	require.Positive(t, q.spares)
	require.Zero(t, testing.AllocsPerRun(10, func() {
		for range 1000 {
			q.Push(nil)
		}
		for range 1000 {
			_, _ = q.Pop()
		}
	}))
	for c := q.spare; c != nil; c = c.next {
		for _, p := range c.items {
			require.Nil(t, p)
		}
	}
	q.Trim(0)
	require.Zero(t, q.spares)
	var zero Chunked[int]
	_, ok := zero.Pop()
	require.False(t, ok)
	q.Clear()
	require.Zero(t, q.Len())
}
