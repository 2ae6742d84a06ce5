package etcd

import (
	"context"
	"slices"

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
//	put, new invisible, old unknown                        → Deleted(key only)
//	delete, old visible                                    → Deleted(old)
//	delete, old bad or unknown                             → Deleted(key only)
//	delete, old filtered out                               → nothing
//
// where a previous value etcd did not send is unknown when its revision is
// compacted, and when the event comes before the caught-up marker of a
// NotifyCaughtUp watch (it is not read then: see prev.go).
//
// The previous value (prev_kv) is needed only where the answer depends on
// it: for a deletion, for a put whose new value is invisible, and with a
// Filter (see prev.go for how it is obtained). Without a Filter, a good
// value is the new state whatever the previous one was, so a key whose
// previous value was bad (and so never delivered) comes back as Modified;
// an informer applies both alike.
//
// For a put, cur and v are the decoded new value and its verdict; version
// is kv.ModRevision formatted.
func (s *Source[T]) convert(ctx context.Context, ev *clientv3.Event, cur *Object[T], v verdict, version string) (informer.Event[*Object[T]], bool) {
	kv := ev.Kv
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

// converted is the outcome of convert for one etcd event: for a put, the
// decoded new value first, then the event.
type converted[T any] struct {
	cur     *Object[T]
	v       verdict
	version string // the event's revision, formatted
	ev      informer.Event[*Object[T]]
	ok      bool
}

// convertAll converts evs into out (reused; one slot per event, in order):
// it decodes the new values in parallel, reads the previous values etcd did
// not send where they are needed (see prev.go) through kv, unless keyOnly
// (the events come before a caught-up marker: their deletions carry the key
// only), then converts in parallel (decoding the previous values).
//
// Possible errors: those of fetchPrev.
func (s *Source[T]) convertAll(ctx context.Context, kv clientv3.KV, evs []*clientv3.Event, out []converted[T], keyOnly bool) ([]converted[T], error) {
	out = slices.Grow(out[:0], len(evs))[:len(evs)]
	inParts(len(evs), func(lo, hi int) {
		for i := lo; i < hi; i++ {
			if evs[i].Type == clientv3.EventTypePut {
				out[i].cur, out[i].v = s.decode(ctx, evs[i].Kv, true)
			}
		}
	})
	if !s.watchPrevKV() && !keyOnly {
		var idx []int
		for i, ev := range evs {
			if needsPrev(ev, out[i].v) {
				idx = append(idx, i)
			}
		}
		if len(idx) > 0 {
			if err := s.fetchPrev(ctx, kv, evs, idx); err != nil {
				return out, err
			}
		}
	}
	// The events of one transaction share their revision: one version
	// string for them all.
	for i, ev := range evs {
		if i > 0 && ev.Kv.ModRevision == evs[i-1].Kv.ModRevision {
			out[i].version = out[i-1].version
		} else {
			out[i].version = formatRev(ev.Kv.ModRevision)
		}
	}
	conv := func(lo, hi int) {
		for i := lo; i < hi; i++ {
			out[i].ev, out[i].ok = s.convert(ctx, evs[i], out[i].cur, out[i].v, out[i].version)
		}
	}
	if slices.ContainsFunc(evs, func(ev *clientv3.Event) bool { return ev.PrevKv != nil }) {
		inParts(len(evs), conv) // previous values to decode
	} else {
		conv(0, len(evs))
	}
	return out, nil
}
