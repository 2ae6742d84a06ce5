package k8s

import (
	"github.com/ginformer/ginformer/informer"
	"github.com/ginformer/ginformer/internal/sliceload"
	"github.com/ginformer/ginformer/shard"
)

// filterWatch forwards the events of inner that belong to sl to out until
// inner ends, out is stopped, or the slice changes (then an Error event
// wrapping [informer.ErrRelistRequested] and [informer.ErrExpired]). For a
// streaming list (initial), the end marker is followed by a bookmark at its
// version: out is unbuffered, so once that one is taken the consumer has
// committed the list. It stops inner and closes out when it returns.
func (s *Sharded[T]) filterWatch(out *informer.WatchStream[T], inner informer.Watcher[T], sl shard.Slice, initial bool, changed <-chan struct{}) {
	defer out.Close()
	defer inner.Stop()
	for {
		select {
		case <-out.Done():
			return
		case <-changed:
			out.Send(informer.Event[T]{Type: informer.EventError, Err: sliceload.Ended("k8s sharded source", sl.Gen)})
			return
		case ev, ok := <-inner.Events():
			if !ok {
				return
			}
			switch ev.Type {
			case informer.EventAdded, informer.EventModified, informer.EventDeleted:
				s.received.Add(1)
				if !sl.Shards.Contains(s.Hash(ev.Object)) {
					if s.Mode() == FilterServer {
						s.setMode(FilterClient, "a watch delivered an object outside the shard selector")
					}
					continue
				}
				s.delivered.Add(1)
			}
			if !out.Send(ev) || ev.Type == informer.EventError {
				return
			}
			if initial && ev.Type == informer.EventBookmark && ev.InitialEventsEnd {
				if !out.Send(informer.Event[T]{Type: informer.EventBookmark, Version: ev.Version}) {
					return
				}
				s.loaded.Loaded(sl)
			}
		}
	}
}
