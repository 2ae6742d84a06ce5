package k8s

import (
	"context"
	"fmt"
	"sync"

	"github.com/ginformer/ginformer/shard"
)

// StaticSlices is a [SliceSource] set by hand: a fixed split of the hash
// space (replica i of n, as kube-state-metrics' --shard and --total-shards),
// or a slice a test changes. Use [NewStaticSlices]; it is safe for
// concurrent use.
type StaticSlices struct {
	// mu guards cur and changed.
	mu      sync.Mutex
	cur     shard.Slice
	changed chan struct{}
}

// NewStaticSlices returns a SliceSource serving set, at generation 1.
func NewStaticSlices(set shard.Set) *StaticSlices {
	return &StaticSlices{cur: shard.Slice{Shards: set, Gen: 1}, changed: make(chan struct{})}
}

// Set replaces the slice (its generation grows by one) and closes the
// channel the previous [StaticSlices.Slice] calls returned, so the sharded
// sources reading it move to the new slice.
func (s *StaticSlices) Set(set shard.Set) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.cur = shard.Slice{Shards: set, Gen: s.cur.Gen + 1}
	close(s.changed)
	s.changed = make(chan struct{})
}

// Slice returns the current slice and a channel closed by the next
// [StaticSlices.Set]. It never waits and never fails.
func (s *StaticSlices) Slice(context.Context) (shard.Slice, <-chan struct{}, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.cur, s.changed, nil
}

// Split returns the shards replica i of n holds when the space of
// [shard.DefaultShards] shards is cut into n contiguous runs of about equal
// size: a static split with no membership (each replica needs only its
// index and the count).
//
// Possible errors: [shard.ErrInvalidShards] unless 0 ≤ i < n ≤
// [shard.DefaultShards].
func Split(i, n int) (shard.Set, error) {
	if n < 1 || n > shard.DefaultShards || i < 0 || i >= n {
		return shard.Set{}, fmt.Errorf("k8s: replica %d of %d: %w", i, n, shard.ErrInvalidShards)
	}
	var ids []int
	for k := i * shard.DefaultShards / n; k < (i+1)*shard.DefaultShards/n; k++ {
		ids = append(ids, k)
	}
	return shard.NewSet(shard.DefaultShards, ids...)
}
