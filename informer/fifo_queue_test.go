package informer

import (
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestEntryQueueModel checks entryQueue against a slice across many chunk
// boundaries, including addressing by sequence number and slot zeroing.
func TestEntryQueueModel(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	var q entryQueue[int, *int]
	var model []int // keys; key == sequence number
	next := 0
	for step := range 20000 {
		if rng.IntN(100) < 52 || len(model) == 0 {
			for range rng.IntN(3*chunkLen) + 1 {
				v := next
				seq := q.push(queueEntry[int, *int]{key: next, deltaSlot: deltaSlot[*int]{first: Delta[*int]{Object: &v}}})
				require.Equal(t, uint64(next), seq)
				model = append(model, next)
				next++
			}
		} else {
			for range min(len(model), rng.IntN(3*chunkLen)+1) {
				e := q.popFront()
				require.Equal(t, model[0], e.key, "step %d", step)
				require.Equal(t, model[0], *e.first.Object)
				model = model[1:]
			}
		}
		require.Equal(t, len(model), q.len())
		if len(model) > 0 {
			i := rng.IntN(len(model))
			require.Equal(t, model[i], q.at(uint64(model[i])).key)
		}
		// Chunks hold only what is needed (plus the partly used front one).
		require.LessOrEqual(t, q.chunks.Len(), len(model)/chunkLen+2)
	}
	// Popped slots of the front chunk are zero.
	if c, ok := q.chunks.Peek(); ok {
		for i := uint64(0); i < q.head&chunkMask; i++ {
			require.Nil(t, c[i].first.Object)
		}
	}
}
