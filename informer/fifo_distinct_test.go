package informer

import (
	"math/rand/v2"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestKeysDistinct checks keysDistinct against a map, for sizes on both
// sides of one partition and of several, with one duplicate anywhere (or
// none).
func TestKeysDistinct(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, n := range []int{0, 1, 2, 3, distinctPart - 1, distinctPart + 1, 5000, 70_000} {
		keys := make([]NamespacedKey, n)
		for i := range keys {
			keys[i] = NamespacedKey{Namespace: "ns-" + strconv.Itoa(i%7), Name: strconv.Itoa(i)}
		}
		key := func(i int) NamespacedKey { return keys[i] }
		assert.True(t, keysDistinct(n, key), "n=%d, none", n)
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
			assert.False(t, keysDistinct(n, key), "n=%d, keys %d and %d", n, i, j)
			keys[j] = saved
		}
	}
	assert.False(t, keysDistinct(3, func(int) int { return 7 }))
	assert.True(t, keysDistinct(1<<12, func(i int) int { return i }))
}
