// Package distinct tells whether n keys are all different, faster than a
// Go map of them: the check that lets the informer's DeltaFIFO take a list
// into an empty queue as it is.
package distinct

import (
	"hash/maphash"
	"math/bits"
)

// seed seeds the hashes of Keys. A collision costs one key
// comparison, never a wrong answer, so one seed per process is enough.
var seed = maphash.MakeSeed()

// Partitions of Keys: up to flatMax keys are checked with one
// table (at most 256 KiB: it stays in a second-level cache); more are split
// into partitions of about partSize keys, whose tables (8 KiB) stay in
// the first-level cache.
const (
	flatMax  = 1 << 14
	partSize = 512
)

// Keys reports whether the n keys key(0), ..., key(n-1) are all
// different; false also for more than 2^31 keys, which it does not check
// (the caller then takes the path that merges keys anyway). It is the check
// that lets a list into an empty queue become the queue's batch as it is
// (informer's DeltaFIFO.replace): a key listed twice must instead be merged
// into one entry.
//
// Each key is hashed once (maphash.Comparable, the hash Go maps use) into an
// entry (32 bits of hash, index). Up to flatMax keys, each entry goes
// straight into one open-addressing table. Past that, the entries are
// sorted by their hash's top bits into partitions of about partSize
// entries (a counting sort: two sequential passes) and each partition is
// checked with a small table, reused from one partition to the next: only
// entries of one partition can be equal. key is called again only when two
// entries' 32 hash bits are equal, which short of a real duplicate is rare.
// Measured on BenchmarkFIFO's ReplaceDrain (about 100-130 ns per object
// without the check), one table costs about +15 ns per object at 10k keys
// but +50 at 100k (a cache miss per key); partitioned, +35 at 100k, and
// +50 at 10k (the entries' two passes). A Go map of the keys costs several
// times as much.
func Keys[K comparable](n int, key func(int) K) bool {
	if n < 2 {
		return true
	}
	if n > 1<<31 {
		return false // an index + 1 would not fit an entry
	}
	if n <= flatMax {
		t := newEntryTable(n, key)
		for i := range n {
			if !t.insert(uint64(uint32(maphash.Comparable(seed, key(i))))<<32 | uint64(i)) {
				return false
			}
		}
		return true
	}
	pbits := 0
	for n>>pbits > partSize {
		pbits++
	}
	shift := 32 - pbits // partition of a hash h: h >> shift
	ents := make([]uint64, n)
	starts := make([]int32, 1<<pbits+1) // partition p is [starts[p], starts[p+1])
	for i := range n {
		h := uint32(maphash.Comparable(seed, key(i)))
		ents[i] = uint64(h)<<32 | uint64(i)
		starts[h>>shift+1]++
	}
	largest := int32(0)
	for p := 1; p < len(starts); p++ {
		largest = max(largest, starts[p])
		starts[p] += starts[p-1]
	}
	sorted := make([]uint64, n)
	next := make([]int32, 1<<pbits)
	copy(next, starts)
	for _, e := range ents {
		p := uint32(e>>32) >> shift
		sorted[next[p]] = e
		next[p]++
	}
	t := newEntryTable(int(largest), key)
	for p := range 1 << pbits {
		clear(t.slots)
		for _, e := range sorted[starts[p]:starts[p+1]] {
			if !t.insert(e) {
				return false
			}
		}
	}
	return true
}

// entryTable is Keys's open-addressing table of entries (32 bits
// of hash, index), the hash bits doubling as the position. A slot holds an
// entry with its index + 1, so an empty slot is 0.
type entryTable[K comparable] struct {
	slots []uint64
	mask  uint64
	key   func(int) K
}

// newEntryTable returns a table for up to n entries (1.5n to 3n slots) of
// keys key(i).
func newEntryTable[K comparable](n int, key func(int) K) entryTable[K] {
	slots := make([]uint64, 1<<bits.Len(uint(n+n/2)))
	return entryTable[K]{slots, uint64(len(slots) - 1), key}
}

// insert adds entry e and reports true, or reports false if the table holds
// an entry whose key equals e's.
func (t entryTable[K]) insert(e uint64) bool {
	tag := e >> 32
	for q := tag & t.mask; ; q = (q + 1) & t.mask {
		s := t.slots[q]
		if s == 0 {
			t.slots[q] = e + 1
			return true
		}
		if s>>32 == tag && t.key(int(uint32(s-1))) == t.key(int(uint32(e))) {
			return false
		}
	}
}
