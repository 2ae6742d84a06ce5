package k8s

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"runtime"
	"sync"
	"sync/atomic"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	sigsjson "sigs.k8s.io/json"

	"github.com/ginformer/ginformer/source/k8s/internal/wire"
)

// decodingWatch decodes a raw watch response: one goroutine reads the
// frames, a pool decodes them on all cores, and one goroutine hands the
// events to sink in the order the server sent them. When the stream is
// idle (nothing queued, nothing more buffered), the reader decodes the
// event itself and hands it on at once, which saves two goroutine hand-offs
// per event on a quiet watch.
type decodingWatch[E any, T ObjectPtr[E]] struct {
	ctx    context.Context
	cancel context.CancelFunc
	body   io.ReadCloser
	codec  *codec[E, T]
	bad    *decodeErrors
	// streaming: the response of a streaming list, whose events up to the
	// end marker are its initial events (and the stream ends there: see
	// [Source.Watch]); else a plain watch.
	streaming bool
	// sink receives each event, from one goroutine at a time; it returns
	// false when the consumer has stopped. Nothing is sent after an Error
	// event.
	sink     func(watch.Event) bool
	inflight atomic.Int64  // events queued for the pool and not yet handed on
	done     chan struct{} // closed when every goroutine has exited
}

// A watchJob is one event on its way through the pool.
type watchJob struct {
	format wireFormat
	frame  []byte // the whole frame (protobuf) or line (JSON)
	ev     watch.Event
	ready  chan struct{}
	pooled *[]byte // the frame's buffer, from framePool
}

// framePool recycles the buffers of protobuf frames: nothing decoded from a
// frame aliases it (strings and bytes are copied out), so a frame's buffer
// is reused once its event is decoded. Frames over maxPooledFrame are not
// kept.
var framePool sync.Pool

const maxPooledFrame = 256 << 10

// release returns the job's frame buffer to the pool.
func (j *watchJob) release() {
	j.frame = nil
	if j.pooled != nil && cap(*j.pooled) <= maxPooledFrame {
		framePool.Put(j.pooled)
	}
	j.pooled = nil
}

// pipelineDepth bounds the events read ahead of the consumer.
const pipelineDepth = 128

// newDecodingWatch starts decoding body (a streaming list's response if
// streaming, else a plain watch's) into sink; finish is called once every
// goroutine has exited (after the last call to sink). The watch ends when
// the body does, after an Error event, when sink returns false, or when
// ctx is done.
func newDecodingWatch[E any, T ObjectPtr[E]](ctx context.Context, body io.ReadCloser, c *codec[E, T], bad *decodeErrors,
	streaming bool, sink func(watch.Event) bool, finish func()) *decodingWatch[E, T] {
	ctx, cancel := context.WithCancel(ctx)
	w := &decodingWatch[E, T]{
		ctx: ctx, cancel: cancel, body: body, codec: c, bad: bad, streaming: streaming, sink: sink,
		done: make(chan struct{}),
	}
	work := make(chan *watchJob, pipelineDepth)
	order := make(chan *watchJob, pipelineDepth)
	var wg sync.WaitGroup
	for range max(1, runtime.GOMAXPROCS(0)) {
		wg.Go(func() {
			var scratch []byte
			for j := range work {
				j.ev = w.decodeEvent(j, &scratch)
				j.release()
				close(j.ready)
			}
		})
	}
	wg.Go(func() { w.read(work, order) })
	wg.Go(func() { w.emit(order) })
	go func() {
		<-ctx.Done()
		_ = body.Close() // unblocks the reader
		wg.Wait()
		if finish != nil {
			finish()
		}
		close(w.done)
	}()
	return w
}

// read reads frames until the stream ends, queuing each for a worker and,
// in the same order, for emit, or handing it on itself when idle.
func (w *decodingWatch[E, T]) read(work, order chan<- *watchJob) {
	defer close(order)
	defer close(work)
	br := bufio.NewReaderSize(w.body, 64<<10)
	next, err := w.reader(br)
	if err != nil {
		w.fail(order, err)
		return
	}
	var scratch []byte
	for {
		j, err := next()
		if err != nil {
			if !errors.Is(err, io.EOF) && w.ctx.Err() == nil {
				w.fail(order, err)
			}
			return
		}
		if w.inflight.Load() == 0 && br.Buffered() == 0 {
			// Idle: emit is waiting and nothing else is queued, so this
			// event is next in order.
			ev := w.decodeEvent(j, &scratch)
			j.release()
			if ev.Type == "" {
				continue
			}
			if !w.deliver(ev) || ev.Type == watch.Error {
				w.cancel()
				return
			}
			continue
		}
		j.ready = make(chan struct{})
		w.inflight.Add(1)
		select {
		case order <- j:
		case <-w.ctx.Done():
			return
		}
		work <- j // a worker is always draining work
	}
}

// reader sniffs the stream's format from its first byte and returns a
// function that reads one event.
func (w *decodingWatch[E, T]) reader(br *bufio.Reader) (func() (*watchJob, error), error) {
	first, err := br.Peek(1)
	if err != nil {
		return func() (*watchJob, error) { return nil, err }, nil
	}
	if first[0] == '{' || first[0] == ' ' || first[0] == '\n' || first[0] == '\r' || first[0] == '\t' {
		// The apiserver writes one compact JSON object per event, each
		// ending in a newline (JSON strings hold no raw newline): the
		// reader only splits lines, and the workers parse them.
		return func() (*watchJob, error) {
			for {
				line, err := br.ReadBytes('\n')
				if len(bytes.TrimSpace(line)) > 0 {
					return &watchJob{format: formatJSON, frame: line}, nil
				}
				if err != nil {
					return nil, err
				}
			}
		}, nil
	}
	fr := wire.NewFrameReader(br)
	return func() (*watchJob, error) {
		buf, _ := framePool.Get().(*[]byte)
		if buf == nil {
			buf = new([]byte)
		}
		frame, err := fr.Next(*buf)
		if err != nil {
			framePool.Put(buf)
			return nil, err
		}
		*buf = frame
		return &watchJob{format: formatProto, frame: frame, pooled: buf}, nil
	}, nil
}

// fail queues an error event for a stream that broke mid-way (client-go's
// StreamWatcher does the same), unless the watch was stopped.
func (w *decodingWatch[E, T]) fail(order chan<- *watchJob, err error) {
	if errors.Is(err, io.ErrUnexpectedEOF) {
		// A connection cut mid-frame ends the watch like a clean end.
		return
	}
	j := &watchJob{ready: make(chan struct{})}
	j.ev = errorEvent(apierrors.NewInternalError(fmt.Errorf("k8s: watch stream: %w", err)))
	close(j.ready)
	w.inflight.Add(1)
	select {
	case order <- j:
	case <-w.ctx.Done():
	}
}

// emit hands the decoded events out in order.
func (w *decodingWatch[E, T]) emit(order <-chan *watchJob) {
	defer w.cancel()
	for j := range order {
		select {
		case <-j.ready:
		case <-w.ctx.Done():
			return
		}
		if j.ev.Type != "" { // else an event left out (logged and counted)
			if !w.deliver(j.ev) || j.ev.Type == watch.Error {
				return
			}
		}
		w.inflight.Add(-1)
	}
}

// deliver hands ev to sink, in the server's order. At a streaming list's
// end marker, every initial event before it has been decoded (and has
// refreshed its entry in the known objects): the entries of objects the
// list did not hold are dropped then, not when the marker is decoded,
// which a worker may do before the initial events before it.
func (w *decodingWatch[E, T]) deliver(ev watch.Event) bool {
	if ev.Type == watch.Bookmark && w.codec.known != nil {
		if m, ok := ev.Object.(metav1.Object); ok && m.GetAnnotations()[metav1.InitialEventsAnnotationKey] == "true" {
			w.codec.known.Sweep()
		}
	}
	return w.sink(ev)
}

func errorEvent(err apierrors.APIStatus) watch.Event {
	st := err.Status()
	return watch.Event{Type: watch.Error, Object: &st}
}

// decodeEvent decodes one job into an event. A frame or line that does
// not parse ends the watch with an Error event (an internal error): the
// stream cannot be trusted past it, and skipping it could lose a deletion;
// the reflector watches again from the last version it received. An object
// that does not decode is handled by undecodable.
func (w *decodingWatch[E, T]) decodeEvent(j *watchJob, scratch *[]byte) watch.Event {
	var typ string
	var raw []byte
	switch j.format {
	case formatProto:
		var err error
		if typ, raw, err = wire.SplitWatchEvent(j.frame); err != nil {
			return errorEvent(apierrors.NewInternalError(fmt.Errorf("k8s: watch: a protobuf frame does not parse: %w", err)))
		}
	default:
		var err error
		if typ, raw, err = wire.SplitJSONWatchEvent(j.frame); err != nil {
			// As client-go's decoder does.
			return errorEvent(apierrors.NewInternalError(fmt.Errorf("k8s: watch: a JSON event does not parse: %w", err)))
		}
	}
	et := watch.EventType(typ)
	switch et {
	case watch.Added, watch.Modified, watch.Deleted, watch.Bookmark:
	case watch.Error:
		st := &metav1.Status{}
		var err error
		if j.format == formatProto {
			err = st.Unmarshal(raw)
		} else {
			err = sigsjson.UnmarshalCaseSensitivePreserveInts(raw, st)
		}
		if err != nil {
			return errorEvent(apierrors.NewInternalError(fmt.Errorf("k8s: watch error event does not decode: %w", err)))
		}
		st.SetGroupVersionKind(schema.GroupVersionKind{})
		return watch.Event{Type: watch.Error, Object: st}
	default:
		return errorEvent(apierrors.NewInternalError(fmt.Errorf("k8s: watch sent an event of unknown type %q", typ)))
	}
	known := w.codec.known
	if w.streaming && et == watch.Added && w.codec.skipsKnown(j.format) {
		// An initial event of a streaming list (a relist) for an object
		// already delivered at this version: the same object again, which
		// the informer compares with its cache before any transform, as
		// it does a list's items. Only there: the object handed on may be
		// the cache's own (restored from a snapshot, or transformed in
		// place), and a plain watch's event goes through the transform.
		if key, version, ok := w.codec.identity(j.format, raw, *scratch); ok {
			*scratch = key
			if obj, ok := known.Lookup(key, version); ok {
				return watch.Event{Type: et, Object: T(obj)}
			}
		}
	}
	obj := T(new(E))
	if err := w.codec.decode(j.format, raw, obj, scratch); err != nil {
		return w.undecodable(et, j.format, raw, err)
	}
	if known != nil {
		switch et {
		case watch.Added, watch.Modified:
			known.Record(obj.GetNamespace(), obj.GetName(), obj.GetResourceVersion(), wire.AnchorOne((*E)(obj)), 0)
		case watch.Deleted:
			known.Forget(obj.GetNamespace(), obj.GetName())
		}
	}
	return watch.Event{Type: et, Object: obj}
}

// undecodable returns the event for an object that does not decode (err),
// and reports a [*DecodeError] naming it, as [DecodeError] says:
//
//   - an initial event of a streaming list is left out, as a list leaves
//     out such an item, so the list drops the key from the cache;
//   - any other event (a creation, an update, a deletion) is delivered as a
//     deletion of the key, with the object's metadata alone, at the
//     event's resourceVersion: the cache never serves the state the event
//     replaced, and no deletion is lost;
//   - an event whose metadata does not decode either cannot be delivered
//     under any key: it ends the watch with an internal error (the
//     reflector watches again from the last version, and relists if the
//     event keeps coming).
func (w *decodingWatch[E, T]) undecodable(et watch.EventType, f wireFormat, raw []byte, err error) watch.Event {
	if w.streaming {
		w.bad.report(w.ctx, fmt.Errorf("k8s: streaming list: an initial %s event (%s) left out: %w", et, f, decodeFailure(f, raw, err)))
		return watch.Event{}
	}
	meta := T(new(E))
	if merr := w.codec.decodeMeta(f, raw, meta); merr != nil {
		derr := &DecodeError{Err: err}
		w.bad.report(w.ctx, fmt.Errorf("k8s: watch: a %s event (%s) ends the watch: %w", et, f, derr))
		return errorEvent(apierrors.NewInternalError(fmt.Errorf("k8s: watch: a %s event's object does not decode, "+
			"nor does its metadata (%v): %w", et, merr, derr)))
	}
	if w.codec.known != nil {
		w.codec.known.Forget(meta.GetNamespace(), meta.GetName())
	}
	derr := &DecodeError{Namespace: meta.GetNamespace(), Name: meta.GetName(), ResourceVersion: meta.GetResourceVersion(), Err: err}
	what := "delivered as a deletion of the key"
	if et == watch.Deleted {
		what = "delivered with its metadata only"
	}
	w.bad.report(w.ctx, fmt.Errorf("k8s: watch: %s event (%s) %s: %w", et, f, what, derr))
	return watch.Event{Type: watch.Deleted, Object: meta}
}
