package shard_test

import (
	"fmt"
	"hash/fnv"
	"math"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ginformer/ginformer/shard"
)

func TestHashIsFNV1a64(t *testing.T) {
	for _, s := range []string{"", "a", "default", "0b5c6f0e-3c7e-4d5c-9d1e-2f3a4b5c6d7e", "/registry/configmaps/default/x"} {
		h := fnv.New64a()
		h.Write([]byte(s))
		require.Equal(t, h.Sum64(), shard.Hash(s), s)
		require.Equal(t, h.Sum64(), shard.HashBytes([]byte(s)), s)
	}
}

// TestHashKeySpreadsSimilarKeys: sequential names fill every shard with
// HashKey; FNV-1a alone leaves most of them empty.
func TestHashKeySpreadsSimilarKeys(t *testing.T) {
	for _, format := range []string{"k%04d", "/registry/pods/default/web-%d"} {
		var fnvCount, keyCount [256]int
		for i := range 3000 {
			k := fmt.Sprintf(format, i)
			fnvCount[shard.ShardOf(shard.Hash(k), 256)]++
			keyCount[shard.ShardOf(shard.HashKey(k), 256)]++
		}
		empty := 0
		for s := range 256 {
			if fnvCount[s] == 0 {
				empty++
			}
			require.Positive(t, keyCount[s], "%s: shard %d empty with HashKey", format, s)
			require.Less(t, keyCount[s], 40, "%s: shard %d holds %d of 3000 keys", format, s, keyCount[s])
		}
		t.Logf("%s: FNV-1a leaves %d of 256 shards empty, HashKey none", format, empty)
		require.Greater(t, empty, 100)
	}
}

func TestShardOfAndRange(t *testing.T) {
	for _, n := range []int{1, 3, 7, 256, 1000, shard.MaxShards} {
		prevEnd := uint64(0)
		for i := range n {
			r := shard.ShardRange(i, n)
			require.Equal(t, prevEnd, r.Start, "shards of %d are contiguous", n)
			require.Equal(t, i, shard.ShardOf(r.Start, n))
			if i > 0 {
				require.Equal(t, i-1, shard.ShardOf(r.Start-1, n))
			}
			prevEnd = r.End
			if n > 300 && i > 2 && i < n-2 {
				continue // sample the big spaces
			}
		}
		require.Equal(t, uint64(0), prevEnd, "the last shard ends at 2^64")
		require.Equal(t, n-1, shard.ShardOf(math.MaxUint64, n))
		require.Equal(t, 0, shard.ShardOf(0, n))
	}
	require.Equal(t, shard.Range{Start: 0, End: 1 << 56}, shard.ShardRange(0, 256))
	require.Equal(t, shard.Range{Start: 255 << 56, End: 0}, shard.ShardRange(255, 256))
}

func TestSelector(t *testing.T) {
	s, err := shard.NewSet(4, 0, 1, 3)
	require.NoError(t, err)
	require.Equal(t,
		"shardRange(object.metadata.uid, '0x0000000000000000', '0x8000000000000000') || "+
			"shardRange(object.metadata.uid, '0xc000000000000000', '0x10000000000000000')",
		s.Selector(shard.FieldUID))
	require.Equal(t, []shard.Range{{0, 1 << 63}, {3 << 62, 0}}, s.Ranges())
	require.True(t, s.Contains(0) && s.Contains(1<<63-1) && !s.Contains(1<<63) && s.Contains(math.MaxUint64))

	all, _ := shard.NewSet(2, 0, 1)
	require.Equal(t, "shardRange(object.metadata.namespace, '0x0000000000000000', '0x10000000000000000')", all.Selector(shard.FieldNamespace))
	require.Equal(t, "", shard.Set{}.Selector(shard.FieldUID))

	// MergeRanges: unsorted, overlapping, adjacent, reaching the end.
	require.Equal(t, []shard.Range{{0, 30}, {40, 0}},
		shard.MergeRanges([]shard.Range{{50, 0}, {10, 30}, {0, 10}, {40, 60}, {5, 12}}))
}

func TestSetStringRoundTrip(t *testing.T) {
	s, err := shard.NewSet(256, 0, 1, 2, 3, 40, 200, 201, 255)
	require.NoError(t, err)
	require.Equal(t, "0-3,40,200-201,255", s.String())
	p, err := shard.ParseSet(256, s.String())
	require.NoError(t, err)
	require.True(t, p.Equal(s))
	e, err := shard.ParseSet(256, "")
	require.NoError(t, err)
	require.True(t, e.Empty())
	for _, bad := range []string{"x", "3-1", "256", "-1", "1,,2"} {
		_, err := shard.ParseSet(256, bad)
		require.ErrorIs(t, err, shard.ErrInvalidShards, bad)
	}
	_, err = shard.NewSet(0)
	require.ErrorIs(t, err, shard.ErrInvalidShards)

	var zero shard.Set
	require.True(t, zero.Empty())
	require.False(t, zero.Contains(42))
	require.True(t, zero.Union(s).Equal(s))
	require.True(t, s.Minus(zero).Equal(s))
	require.True(t, s.Intersect(zero).Empty())
}
