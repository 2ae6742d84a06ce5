package distinct

import (
	"math/rand/v2"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
)

// nsKey is a struct key, as the informer's NamespacedKey.
type nsKey struct{ ns, name string }

// TestKeys checks Keys against a map, for sizes on both
// sides of one partition and of several, with one duplicate anywhere (or
// none).
func TestKeys(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, n := range []int{0, 1, 2, 3, partSize - 1, partSize + 1, 5000, 70_000} {
		keys := make([]nsKey, n)
		for i := range keys {
			keys[i] = nsKey{"ns-" + strconv.Itoa(i%7), strconv.Itoa(i)}
		}
		key := func(i int) nsKey { return keys[i] }
		assert.True(t, Keys(n, key), "n=%d, none", n)
		for range 5 {
			if n < 2 {
				break
			}
			i, j := rng.IntN(n), rng.IntN(n)
			if i == j {
				continue
			}
			saved := keys[j]
			keys[j] = keys[i]
			assert.False(t, Keys(n, key), "n=%d, keys %d and %d", n, i, j)
			keys[j] = saved
		}
	}
	assert.False(t, Keys(3, func(int) int { return 7 }))
	assert.True(t, Keys(1<<12, func(i int) int { return i }))
}
