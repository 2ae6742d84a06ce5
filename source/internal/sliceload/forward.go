package sliceload

import (
	"github.com/ginformer/ginformer/informer"
	"github.com/ginformer/ginformer/shard"
)

// Forward is the goroutine of a sharded source's watch of slice sl: it
// forwards the events of inner to out until inner ends, out is stopped, or
// changed is closed (the slice changed: then it sends an Error event with
// the error ended(source, sl.Gen), and returns). It calls keep for each
// Added, Modified and Deleted event and drops the event if keep returns
// false. For a
// streaming list (initial), the end marker is followed by a bookmark at its
// version: out is unbuffered, so once that one is taken the consumer has
// committed the list, which Forward records in t (Tracker.markLoaded). It
// stops inner and closes out when it returns.
func Forward[T any](t *Tracker, source string, sl shard.Slice, initial bool, changed <-chan struct{},
	out *informer.WatchStream[T], inner informer.Watcher[T], keep func(informer.Event[T]) bool) {
	defer out.Close()
	defer inner.Stop()
	for {
		select {
		case <-out.Done():
			return
		case <-changed:
			out.Send(informer.Event[T]{Type: informer.EventError, Err: ended(source, sl.Gen)})
			return
		case ev, ok := <-inner.Events():
			if !ok {
				return
			}
			switch ev.Type {
			case informer.EventAdded, informer.EventModified, informer.EventDeleted:
				if !keep(ev) {
					continue
				}
			}
			if !out.Send(ev) || ev.Type == informer.EventError {
				return
			}
			if initial && ev.Type == informer.EventBookmark && ev.InitialEventsEnd {
				if !out.Send(informer.Event[T]{Type: informer.EventBookmark, Version: ev.Version}) {
					return
				}
				t.markLoaded(sl)
			}
		}
	}
}
