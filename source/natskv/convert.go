package natskv

import (
	"context"

	"github.com/ginformer/ginformer/informer"
)

// convert turns one message of the stream into the event the consumer
// sees. The previous state of the key comes from what the watch has seen of
// it, or, at the first message of a key, from the stream (see before):
//
//	put, good, key absent before (or no earlier message)  → Added
//	put, good, key present before (or unknown)            → Modified
//	put, bad,  previous value delivered                   → Deleted(previous)
//	put, bad,  previous value unknown                     → Deleted(key only)
//	put, bad,  key absent or previous value bad           → Bookmark
//	delete or purge, previous value delivered             → Deleted(previous)
//	delete or purge, previous bad or unknown              → Deleted(key only)
//	delete or purge, key absent before                    → Bookmark
//
// "Unknown": the stream no longer holds the key's previous message (history
// limits, purges), or has no direct gets. A Deleted event carries the
// revision of the marker. A Bookmark stands for a message that changes
// nothing the consumer sees, so that its version still advances.
//
// Possible errors: those of before.
func (w *watcher[T]) convert(ctx context.Context, e entry) (informer.Event[*Object[T]], error) {
	prev, known := w.known[e.key]
	if !known && w.complete {
		known = true // absent from the streaming list and unseen since
	}
	if !known && !w.noLookup {
		var err error
		if prev, known, err = w.s.before(ctx, e.key, e.seq); err != nil {
			return informer.Event[*Object[T]]{}, err
		}
	}
	version := formatRev(e.seq)
	bookmark := informer.Event[*Object[T]]{Type: informer.EventBookmark, Version: version}
	tombstone := func() informer.Event[*Object[T]] {
		obj := &Object[T]{Key: e.key, Revision: e.seq, Created: e.time, ValueUnknown: true}
		return informer.Event[*Object[T]]{Type: informer.EventDeleted, Object: obj, Version: version}
	}
	deleted := func() informer.Event[*Object[T]] {
		obj := *prev.obj
		obj.Revision, obj.Created = e.seq, e.time // the marker's, as etcd's deletion revision
		return informer.Event[*Object[T]]{Type: informer.EventDeleted, Object: &obj, Version: version}
	}

	if e.op != opPut {
		w.known[e.key] = keyState[T]{}
		switch {
		case known && prev.obj != nil:
			return deleted(), nil
		case known && !prev.present:
			return bookmark, nil
		}
		return tombstone(), nil
	}

	cur, v := w.s.decode(ctx, e, true)
	w.known[e.key] = keyState[T]{present: true, obj: cur}
	if v == visible {
		typ := informer.EventModified
		if !prev.present && (known || !w.noLookup) {
			typ = informer.EventAdded
		}
		return informer.Event[*Object[T]]{Type: typ, Object: cur, Version: version}, nil
	}
	switch {
	case known && prev.obj != nil:
		return deleted(), nil
	case known:
		return bookmark, nil
	}
	return tombstone(), nil
}
