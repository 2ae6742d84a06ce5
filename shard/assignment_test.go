package shard_test

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ginformer/ginformer/shard"
)

func names(prefix string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("%s-%d", prefix, i)
	}
	return out
}

func randomNames(rng *rand.Rand, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("replica-%08x", rng.Uint32())
	}
	return out
}

func mustAssign(t testing.TB, n int, members []string) shard.Assignment {
	t.Helper()
	a, err := shard.Assign(n, members)
	require.NoError(t, err)
	return a
}

// TestAssignBalance checks the bound stated on Assignment: with 256 shards
// and up to 32 members, every member holds within 256/N ± 5·sqrt(256/N).
func TestAssignBalance(t *testing.T) {
	rng := rand.New(rand.NewPCG(15, 256))
	for _, n := range []int{1, 2, 3, 4, 5, 8, 10, 16, 32} {
		mean := 256 / float64(n)
		bound := 5 * math.Sqrt(mean)
		lo, hi := 256, 0
		for range 1000 / n {
			a := mustAssign(t, 0, randomNames(rng, n))
			total := 0
			for m, s := range a.All() {
				c := s.Len()
				total += c
				lo, hi = min(lo, c), max(hi, c)
				require.LessOrEqual(t, math.Abs(float64(c)-mean), bound, "member %s of %d holds %d shards", m, n, c)
			}
			require.Equal(t, 256, total)
		}
		t.Logf("N=%d: mean %.1f, observed %d..%d, bound ±%.1f", n, mean, lo, hi, bound)
	}
}

// TestAssignMinimalMovement: a join moves only shards to the newcomer, a
// leave only the leaver's shards.
func TestAssignMinimalMovement(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for range 200 {
		n := 1 + rng.IntN(12)
		members := randomNames(rng, n+1)
		before := mustAssign(t, 0, members[:n])
		after := mustAssign(t, 0, members) // members[n] joins
		moved := 0
		for s := range 256 {
			if before.Owner(s) != after.Owner(s) {
				require.Equal(t, members[n], after.Owner(s), "a join moves shards only to the newcomer")
				moved++
			}
		}
		require.Equal(t, after.Set(members[n]).Len(), moved)

		leaver := members[rng.IntN(n+1)]
		rest := slices.DeleteFunc(slices.Clone(members), func(m string) bool { return m == leaver })
		left := mustAssign(t, 0, rest)
		for s := range 256 {
			if after.Owner(s) != left.Owner(s) {
				require.Equal(t, leaver, after.Owner(s), "a leave moves only the leaver's shards")
			}
		}
	}
}

// TestAssignDeterministic pins owners so that any change of the hash, the
// weight or the tie rule (which would split a cluster of mixed versions)
// fails here, and checks that member order and duplicates do not matter.
func TestAssignDeterministic(t *testing.T) {
	members := names("replica", 3)
	a := mustAssign(t, 0, members)
	b := mustAssign(t, 0, []string{"replica-2", "replica-0", "replica-1", "replica-0", ""})
	for s := range 256 {
		require.Equal(t, a.Owner(s), b.Owner(s))
	}
	var got []string
	for _, s := range []int{0, 1, 2, 3, 100, 255} {
		got = append(got, a.Owner(s))
	}
	var counts []int
	for _, s := range a.All() {
		counts = append(counts, s.Len())
	}
	t.Logf("owners %q counts %v", got, counts)
	require.Equal(t, goldenOwners, got)
	require.Equal(t, goldenCounts, counts)
	require.Equal(t, []string{"replica-0", "replica-1", "replica-2"}, a.Members())

	h := shard.Hash("some/key")
	require.True(t, a.Owns(a.OwnerOf(h), h))

	var zero shard.Assignment
	require.Equal(t, "", zero.OwnerOf(h))
	require.False(t, zero.Owns("x", h))
	none := mustAssign(t, 16, nil)
	require.Equal(t, "", none.Owner(3))
	_, err := shard.Assign(-1, members)
	require.ErrorIs(t, err, shard.ErrInvalidShards)
}
