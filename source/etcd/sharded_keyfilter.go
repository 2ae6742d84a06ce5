package etcd

import (
	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// keyFilter selects keys (as [Object.Key] has them) before their values are
// decoded: a key it rejects is never visible, so its list entries and
// watch events are dropped whole, before decoding and before any read of a
// previous value. It must be deterministic for the duration of one list or
// watch, and safe for concurrent use (chunks are filtered in parallel). A
// nil keyFilter keeps every key.
type keyFilter func(key string) bool

// keeps reports whether keep accepts kv's key.
func (s *Source[T]) keeps(keep keyFilter, kv *mvccpb.KeyValue) bool {
	return keep == nil || keep(s.objectKey(string(kv.Key)))
}

// keepEvents drops, in place, the events whose key keep rejects.
func (s *Source[T]) keepEvents(keep keyFilter, evs []*clientv3.Event) []*clientv3.Event {
	if keep == nil {
		return evs
	}
	kept := evs[:0]
	for _, ev := range evs {
		if s.keeps(keep, ev.Kv) {
			kept = append(kept, ev)
		}
	}
	clear(evs[len(kept):])
	return kept
}
