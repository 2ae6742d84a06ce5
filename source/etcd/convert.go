package etcd

import (
	"context"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/ginformer/ginformer/informer"
)

// convert turns one etcd event into the informer event the consumer sees,
// or false when it sees none. A value is "visible" when it decodes and
// matches the filter; like the apiserver's etcd3 watcher transform:
//
//	put, new visible, old visible (or created / unknown)  → Modified (Added)
//	put, new visible, old invisible                       → Added
//	put, new invisible, old visible                       → Deleted(old)
//	put, new invisible, old invisible                     → nothing
//	put, new invisible, old unknown (prev_kv compacted)   → Deleted(key only)
//	delete, old visible                                   → Deleted(old)
//	delete, old bad or unknown                            → Deleted(key only)
//	delete, old filtered out                              → nothing
func (s *Source[T]) convert(ctx context.Context, ev *clientv3.Event) (informer.Event[*Object[T]], bool) {
	kv := ev.Kv
	version := formatRev(kv.ModRevision)
	var prev *Object[T]
	prevKnown := ev.PrevKv != nil || ev.IsCreate() // a created key had no value
	prevVisible := false
	prevBad := false
	if ev.PrevKv != nil {
		var v verdict
		prev, v = s.decode(ctx, ev.PrevKv, false)
		prevVisible, prevBad = v == visible, v == bad
	}
	tombstone := func() (informer.Event[*Object[T]], bool) {
		obj := &Object[T]{Key: s.objectKey(string(kv.Key)), ModRevision: kv.ModRevision, ValueUnknown: true}
		return informer.Event[*Object[T]]{Type: informer.EventDeleted, Object: obj, Version: version}, true
	}
	deleted := func() (informer.Event[*Object[T]], bool) {
		obj := *prev
		obj.ModRevision = kv.ModRevision // the deletion's revision, as the apiserver does
		return informer.Event[*Object[T]]{Type: informer.EventDeleted, Object: &obj, Version: version}, true
	}

	if ev.Type == clientv3.EventTypeDelete {
		switch {
		case prevVisible:
			return deleted()
		case !prevKnown || prevBad:
			return tombstone()
		}
		return informer.Event[*Object[T]]{}, false
	}

	cur, v := s.decode(ctx, kv, true)
	curVisible := v == visible
	switch {
	case curVisible && ev.IsCreate():
		return informer.Event[*Object[T]]{Type: informer.EventAdded, Object: cur, Version: version}, true
	case curVisible && (prevVisible || !prevKnown):
		return informer.Event[*Object[T]]{Type: informer.EventModified, Object: cur, Version: version}, true
	case curVisible:
		return informer.Event[*Object[T]]{Type: informer.EventAdded, Object: cur, Version: version}, true
	case prevVisible:
		return deleted()
	case !prevKnown:
		return tombstone()
	}
	return informer.Event[*Object[T]]{}, false
}
