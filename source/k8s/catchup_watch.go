package k8s

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/ginformer/ginformer/informer"
)

// watchCaughtUp is [Source.Watch] with NotifyCaughtUp: see there and
// catchup.go.
func (s *Source[T]) watchCaughtUp(ctx context.Context, opts informer.WatchOptions) (informer.Watcher[T], error) {
	switch {
	case s.opts.DisableBookmarks:
		return nil, fmt.Errorf("k8s: a caught-up marker needs bookmarks, disabled by the source's options: %w", errors.ErrUnsupported)
	case s.path == nil:
		return nil, fmt.Errorf("k8s: a caught-up marker needs a client-go typed, dynamic or metadata client, not %s: %w",
			s.client, errors.ErrUnsupported)
	}
	v, err := strconv.ParseUint(opts.Version, 10, 64)
	if err != nil || v == 0 {
		return nil, fmt.Errorf("k8s: a watch that notifies its catch-up needs a resourceVersion, not %q: %w",
			opts.Version, informer.ErrInvalidOptions)
	}
	out := informer.NewWatchStream[T](ctx, s.opts.WatchBuffer)
	cu := startCatchUp(out.Context(), s.path, v, v)
	inner, err := s.openWatch(out.Context(), informer.WatchOptions{Version: opts.Version, Timeout: catchUpTimeout}, "")
	if err == nil {
		err = gate(cu)
	}
	if err != nil {
		if inner != nil {
			inner.Stop()
		}
		cu.stop()
		out.Close()
		return nil, err
	}
	go s.catchUpLoop(out, cu, inner, opts.Timeout)
	return out, nil
}

// gate waits for the resource probe, up to gateDelay, or twice the time
// the revision probe took to answer (the resource probe of a resource that
// is not cached takes as long), and returns the error of an answer that
// refuses the stream (the resource is not cached, or the version is not
// the cluster's).
func gate(cu *catchUp) error {
	start := time.Now()
	t := time.NewTimer(gateDelay)
	defer t.Stop()
	for cu.resource == nil {
		select {
		case r := <-cu.answers:
			if err := cu.take(r); err != nil {
				return err
			}
			if !r.resource {
				t.Reset(min(gateDelay-time.Since(start), time.Since(start)+gateSlack))
			}
		case <-t.C:
			return nil
		}
	}
	return nil
}

// catchUpLoop feeds out: the catch-up watches until the marker, then a
// watch from the newest version delivered with timeout. It closes out.
func (s *Source[T]) catchUpLoop(out *informer.WatchStream[T], cu *catchUp, inner informer.Watcher[T], timeout time.Duration) {
	defer out.Close()
	for n := 1; ; n++ {
		o, err := forwardCatchUp(out, cu, inner)
		switch {
		case o == outcomeStopped:
			return
		case o == outcomeFailed:
			out.Send(informer.Event[T]{Type: informer.EventError, Err: err})
			return
		case o == outcomeAgain && n == catchUpWatches:
			return // the informer watches again
		}
		from := strconv.FormatUint(cu.newest, 10)
		if o == outcomeMarked {
			next, err := s.openWatch(out.Context(), informer.WatchOptions{Version: from, Timeout: timeout}, "")
			if err != nil {
				out.Send(informer.Event[T]{Type: informer.EventError, Err: err})
				return
			}
			forward(out, next)
			return
		}
		cu = cu.next(out.Context(), s.path)
		if inner, err = s.openWatch(out.Context(), informer.WatchOptions{Version: from, Timeout: catchUpTimeout}, ""); err != nil {
			cu.stop()
			out.Send(informer.Event[T]{Type: informer.EventError, Err: err})
			return
		}
	}
}

// forwardCatchUp sends the events of inner, one catch-up watch, to out
// until inner ends, with the marker when it is due, and returns what
// follows. It stops inner and the probes.
func forwardCatchUp[T Object](out *informer.WatchStream[T], cu *catchUp, inner informer.Watcher[T]) (outcome, error) {
	defer inner.Stop()
	defer cu.stop()
	marker := func() bool {
		cu.mark()
		return out.Send(informer.Event[T]{Type: informer.EventBookmark, Version: strconv.FormatUint(cu.newest, 10), InitialEventsEnd: true})
	}
	if cu.due() && !marker() {
		return outcomeStopped, nil
	}
	for {
		select {
		case <-out.Done():
			return outcomeStopped, nil
		case r := <-cu.answers:
			if cu.marked {
				continue
			}
			if err := cu.take(r); err != nil {
				return outcomeFailed, err
			}
			if cu.due() && !marker() {
				return outcomeStopped, nil
			}
		case ev, open := <-inner.Events():
			switch {
			case !open && cu.marked:
				return outcomeMarked, nil
			case !open:
				o, err := cu.ended()
				if o == outcomeMarked && !marker() {
					return outcomeStopped, nil
				}
				return o, err
			}
			ev.InitialEventsEnd = cu.see(ev.Type, ev.Version)
			if !out.Send(ev) || ev.Type == informer.EventError {
				return outcomeStopped, nil
			}
			if cu.due() && !marker() {
				return outcomeStopped, nil
			}
		}
	}
}

// forward sends the events of inner to out until either ends.
func forward[T Object](out *informer.WatchStream[T], inner informer.Watcher[T]) {
	defer inner.Stop()
	for {
		select {
		case <-out.Done():
			return
		case ev, open := <-inner.Events():
			if !open || !out.Send(ev) || ev.Type == informer.EventError {
				return
			}
		}
	}
}
