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
//	put, new visible, created                              → Added
//	put, new visible, no Filter                            → Modified
//	put, new visible, old visible (or unknown), Filter     → Modified
//	put, new visible, old invisible, Filter                → Added
//	put, new invisible, old visible                        → Deleted(old)
//	put, new invisible, old invisible                      → nothing
//	put, new invisible, old unknown (prev_kv compacted)    → Deleted(key only)
//	delete, old visible                                    → Deleted(old)
//	delete, old bad or unknown                             → Deleted(key only)
//	delete, old filtered out                               → nothing
//
// The previous value (prev_kv) is needed only where the answer depends on
// it: for a deletion, for a put whose new value is invisible, and with a
// Filter (see prev.go for how it is obtained). Without a Filter, a good
// value is the new state whatever the previous one was, so a key whose
// previous value was bad (and so never delivered) comes back as Modified;
// an informer applies both alike.
//
// For a put, cur and v are the decoded new value and its verdict.
func (s *Source[T]) convert(ctx context.Context, ev *clientv3.Event, cur *Object[T], v verdict) (informer.Event[*Object[T]], bool) {
	kv := ev.Kv
	version := formatRev(kv.ModRevision)
	// prevKnown: the previous value is there, or the key was created (it
	// had none).
	prevKnown := ev.PrevKv != nil || ev.IsCreate()
	var prev *Object[T]
	prevVisible, prevBad := false, false
	decodePrev := func() {
		if ev.PrevKv != nil {
			var v verdict
			prev, v = s.decode(ctx, ev.PrevKv, false)
			prevVisible, prevBad = v == visible, v == bad
		}
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
		decodePrev()
		switch {
		case prevVisible:
			return deleted()
		case !prevKnown || prevBad:
			return tombstone()
		}
		return informer.Event[*Object[T]]{}, false
	}

	if v == visible {
		switch {
		case ev.IsCreate():
			return informer.Event[*Object[T]]{Type: informer.EventAdded, Object: cur, Version: version}, true
		case s.opts.Filter == nil:
			return informer.Event[*Object[T]]{Type: informer.EventModified, Object: cur, Version: version}, true
		}
		decodePrev()
		if prevVisible || !prevKnown {
			return informer.Event[*Object[T]]{Type: informer.EventModified, Object: cur, Version: version}, true
		}
		return informer.Event[*Object[T]]{Type: informer.EventAdded, Object: cur, Version: version}, true
	}
	decodePrev()
	switch {
	case prevVisible:
		return deleted()
	case !prevKnown:
		return tombstone()
	}
	return informer.Event[*Object[T]]{}, false
}
