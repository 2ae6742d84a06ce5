package k8s

import (
	"github.com/ginformer/ginformer/informer"
	"github.com/ginformer/ginformer/shard"
)

// shardedName prefixes the errors of a [Sharded] source.
const shardedName = "k8s sharded source"

// keep returns the filter of a watch of slice sl, for sliceload.Forward:
// it counts each object event as received and keeps those of sl. An event
// outside sl while the apiserver is trusted to filter shows it does not:
// the source falls back to filtering here.
func (s *Sharded[T]) keep(sl shard.Slice) func(informer.Event[T]) bool {
	return func(ev informer.Event[T]) bool {
		s.received.Add(1)
		if !sl.Shards.Contains(s.Hash(ev.Object)) {
			if s.Mode() == FilterServer {
				s.setMode(FilterClient, "a watch delivered an object outside the shard selector")
			}
			return false
		}
		s.delivered.Add(1)
		return true
	}
}
