package k8s

import (
	"context"
	"errors"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/resourceversion"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/ginformer/ginformer/informer"
)

// Watch opens a watch of the resource. The request carries the selectors,
// AllowWatchBookmarks (unless disabled) and, for a Timeout, timeoutSeconds
// rounded up to a whole second. Events are converted as they arrive:
//
//   - ADDED, MODIFIED, DELETED: the object, at its resourceVersion (for a
//     deletion, the version of the deletion);
//   - BOOKMARK: [informer.EventBookmark] at its version; with the
//     k8s.io/initial-events-end annotation, InitialEventsEnd is set;
//   - ERROR: an [informer.EventError] classified as List classifies errors
//     (410 → [informer.ErrExpired]), after which the stream closes.
//
// A streaming list (SendInitialEvents) is sent as sendInitialEvents=true with
// resourceVersionMatch=NotOlderThan at opts.Version ("" for the latest
// state). A source that decodes itself ([Source.Decoding]) ends a streaming
// list's stream after the initial events' end marker: the apiserver
// compresses that response, live events included, and the plain watch the
// reflector then opens from the marker's version is not compressed. The stream is closed when the server ends the watch (timeout),
// after an Error event, on Stop, or when ctx is done.
//
// A plain watch with NotifyCaughtUp (an informer restored from a snapshot
// resumes with one) is sent first with timeoutSeconds=3, with two probes
// of the resource beside it, for a name no object has: a GET at a
// resourceVersion the server has not reached (which makes its watch cache
// follow etcd, and answers after 3 s with the cache's current
// resourceVersion), and a consistent list of that one name (answered at
// once, empty, with the current revision of the resource's own storage,
// wherever it is stored or served). catchup.go has the apiserver's
// code behind this. The caught-up marker (a Bookmark with
// InitialEventsEnd) is the first of: the watch's first bookmark, which the
// watch cache sends 2 s before the deadline (0–2.25 s after the watch
// opens, about 1 s); a Bookmark at the newest version delivered, once that
// is at least the version a probe reported (at once when nothing else was
// written in the cluster since the resource's last change). If the watch
// ends without it while the cache moved on, another such watch follows
// from the newest version delivered. After the marker the stream goes on
// with a watch from the newest version, with Timeout. For a resource the
// apiserver does not cache (--watch-cache-sizes=resource#0: its watches
// get no bookmarks), and when the resource's probe fails with no marker
// (credentials without get on the resource), it fails with an error
// wrapping [informer.ErrRelistRequested] and [informer.ErrExpired]
// (returned, or as an Error event), and the informer relists; a Version
// the server has not reached (a snapshot of another cluster) fails with
// [informer.ErrVersionTooLarge], and one older than the watch cache's
// window with [informer.ErrExpired], as any watch does. The apiserver
// receives watches, GETs and the probe's list of one name: no list of the
// collection, no streaming list. Watch returns
// after the probes answer, or after at most 100 ms (so that a resource
// that is not cached is refused by Watch itself).
//
// Possible errors (returned): errors.ErrUnsupported for a streaming list
// refused by the server or by [Options], and for NotifyCaughtUp with
// [Options.DisableBookmarks] or with a client other than client-go's
// typed, dynamic and metadata clients (a fake, a wrapper,
// [NewFromListerWatcher]), whose requests the probe cannot address;
// [informer.ErrRelistRequested] with [informer.ErrExpired] for
// NotifyCaughtUp on a resource the apiserver does not cache; [informer.ErrTransient]
// (connection refused, 429), [informer.ErrExpired],
// [informer.ErrVersionTooLarge], [informer.ErrInternal],
// [informer.ErrInvalidOptions] (no version without SendInitialEvents, a
// malformed version refused by the server, a NotifyCaughtUp version that
// is not a resourceVersion), other API errors.
func (s *Source[T]) Watch(ctx context.Context, opts informer.WatchOptions) (informer.Watcher[T], error) {
	if opts.NotifyCaughtUp && !opts.SendInitialEvents && opts.Version != "" {
		return s.watchCaughtUp(ctx, opts)
	}
	return s.openWatch(ctx, opts, "")
}

// openWatch is [Source.Watch] with a ShardSelector (none if ""), without
// NotifyCaughtUp (see watchCaughtUp).
func (s *Source[T]) openWatch(ctx context.Context, opts informer.WatchOptions, shardSelector string) (informer.Watcher[T], error) {
	lo := metav1.ListOptions{
		ShardSelector:       shardSelector,
		LabelSelector:       s.opts.LabelSelector,
		FieldSelector:       s.opts.FieldSelector,
		ResourceVersion:     opts.Version,
		AllowWatchBookmarks: !s.opts.DisableBookmarks,
	}
	if opts.Timeout > 0 {
		secs := int64((opts.Timeout + time.Second - 1) / time.Second)
		lo.TimeoutSeconds = &secs
	}
	if opts.SendInitialEvents {
		if s.opts.DisableStreamingList || s.opts.DisableBookmarks {
			return nil, fmt.Errorf("k8s: streaming list disabled by the source's options: %w", errors.ErrUnsupported)
		}
		yes := true
		lo.SendInitialEvents = &yes
		lo.ResourceVersionMatch = metav1.ResourceVersionMatchNotOlderThan
	} else if opts.Version == "" {
		return nil, fmt.Errorf("k8s: watch without a version: %w", informer.ErrInvalidOptions)
	}
	out := informer.NewWatchStream[T](ctx, s.opts.WatchBuffer)
	var kw watch.Interface
	var err error
	if s.watchTo != nil {
		err = s.watchTo(out.Context(), lo, func(ev watch.Event) bool {
			e := convert[T](ev)
			// The apiserver compresses a streaming list's response, and
			// with it every event after the initial ones; a plain watch
			// is not compressed. So the stream ends after its initial
			// events, and the reflector goes on with a plain watch from
			// the marker's version.
			return out.Send(e) && e.Type != informer.EventError && !e.InitialEventsEnd
		}, out.Close)
	} else {
		kw, err = s.watch(out.Context(), lo)
	}
	if err != nil {
		out.Close()
		if opts.SendInitialEvents && isStreamingRefusal(err) {
			return nil, fmt.Errorf("k8s: streaming list refused: %w: %w", errors.ErrUnsupported, err)
		}
		if _, perr := resourceversion.CompareResourceVersion(opts.Version, opts.Version); opts.Version != "" && perr != nil {
			// The API server answers a malformed resourceVersion on a watch
			// with a 500, not a 400 as on a list.
			return nil, fmt.Errorf("k8s: watch from a malformed resourceVersion %q: %w: %w", opts.Version,
				informer.ErrInvalidOptions, err)
		}
		return nil, classify("k8s: watch", err)
	}
	if kw != nil {
		go pump(out, kw, s.trim)
	}
	return out, nil
}

// pump converts the events of kw into out until either ends.
func pump[T Object](out *informer.WatchStream[T], kw watch.Interface, trim func(T)) {
	defer out.Close()
	defer kw.Stop()
	for {
		select {
		case <-out.Done():
			return
		case ev, ok := <-kw.ResultChan():
			if !ok {
				return
			}
			e := convert[T](ev)
			if trim != nil && e.Type != informer.EventError && e.Type != informer.EventBookmark {
				trim(e.Object)
			}
			if !out.Send(e) || e.Type == informer.EventError {
				return
			}
		}
	}
}

// convert turns one client-go watch event into a contract event.
func convert[T Object](ev watch.Event) informer.Event[T] {
	if ev.Type == watch.Error {
		return informer.Event[T]{Type: informer.EventError, Err: classify("k8s: watch", apierrors.FromObject(ev.Object))}
	}
	obj, ok := ev.Object.(T)
	if !ok {
		var zero T
		return informer.Event[T]{Type: informer.EventError, Err: fmt.Errorf("k8s: watch sent %T for a %v event, want %T", ev.Object, ev.Type, zero)}
	}
	e := informer.Event[T]{Object: obj, Version: obj.GetResourceVersion()}
	switch ev.Type {
	case watch.Added:
		e.Type = informer.EventAdded
	case watch.Modified:
		e.Type = informer.EventModified
	case watch.Deleted:
		e.Type = informer.EventDeleted
	case watch.Bookmark:
		var zero T
		e.Type, e.Object = informer.EventBookmark, zero
		e.InitialEventsEnd = obj.GetAnnotations()[metav1.InitialEventsAnnotationKey] == "true"
	default:
		return informer.Event[T]{Type: informer.EventError, Err: fmt.Errorf("k8s: watch sent an event of unknown type %q", ev.Type)}
	}
	return e
}
