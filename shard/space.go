package shard

import (
	"fmt"
	"math/bits"
)

// DefaultShards is the number of virtual shards the 64-bit hash space is cut
// into when none is given: enough that N replicas each get about 256/N
// contiguous ranges, few enough that a replica's ranges make a short
// selector.
const DefaultShards = 256

// MaxShards is the largest number of virtual shards supported.
const MaxShards = 1 << 16

// checkShards validates a shard count.
//
// Possible errors: [ErrInvalidShards].
func checkShards(n int) error {
	if n < 1 || n > MaxShards {
		return fmt.Errorf("shard: %d shards, want 1..%d: %w", n, MaxShards, ErrInvalidShards)
	}
	return nil
}

// ShardOf returns the virtual shard, in [0, n), whose range holds hash h
// when the space is cut into n equal contiguous ranges: shard i holds the
// hashes h with i·2⁶⁴/n ≤ h < (i+1)·2⁶⁴/n, that is floor(h·n/2⁶⁴). n must be
// in [1, MaxShards]; ShardOf panics otherwise (a programming error: counts
// are validated where they are configured).
func ShardOf(h uint64, n int) int {
	if n < 1 || n > MaxShards {
		panic(fmt.Sprintf("shard.ShardOf: %d shards", n))
	}
	hi, _ := bits.Mul64(h, uint64(n))
	return int(hi)
}

// ShardRange returns the range of hashes of virtual shard i of n: Start is
// ceil(i·2⁶⁴/n), End the next shard's Start (0, meaning 2⁶⁴, for the last
// shard). It panics unless 0 ≤ i < n ≤ MaxShards.
func ShardRange(i, n int) Range {
	if n < 1 || n > MaxShards || i < 0 || i >= n {
		panic(fmt.Sprintf("shard.ShardRange: shard %d of %d", i, n))
	}
	return Range{Start: shardStart(i, n), End: shardStart(i+1, n)}
}

// shardStart is ceil(i·2⁶⁴/n) for 0 ≤ i ≤ n; n·2⁶⁴/n wraps to 0 (2⁶⁴).
func shardStart(i, n int) uint64 {
	if i == n {
		return 0
	}
	q, r := bits.Div64(uint64(i), 0, uint64(n))
	if r != 0 {
		q++
	}
	return q
}
