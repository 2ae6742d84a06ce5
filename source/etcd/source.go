package etcd

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/go-logr/logr"
	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"
	"google.golang.org/grpc/metadata"

	"github.com/ginformer/ginformer/informer"
	"github.com/ginformer/ginformer/internal/lograte"
	"github.com/ginformer/ginformer/internal/safecall"
	"github.com/ginformer/ginformer/source/etcd/internal/classify"
)

// Source is an [informer.Source] of the keys under a prefix of etcd. See the
// package doc for versions, watches, connections and liveness, filters and
// bad values. It is safe for concurrent use; it holds no resources of its
// own besides open watches (each with its goroutine and connection), each
// ended by its context or Stop. Use [New]; the zero value is not usable.
type Source[T any] struct {
	opts     Options[T]
	into     DecoderInto[T] // opts.Codec's, if it has one
	log      logr.Logger
	limiter  lograte.Limiter
	start    string // first key of the range
	end      string // range end (exclusive)
	decodeN  atomic.Uint64
	watchSeq atomic.Uint64
	health   *endpointHealth // where new connections go (see endpoints.go)
	// noRangeStream is set once etcd answered that it has no RangeStream:
	// streaming lists read pages from then on (see initial.go).
	noRangeStream atomic.Bool

	// mu guards watches.
	mu sync.Mutex
	// watches holds every watch from Watch until its goroutine ends, so
	// RequestProgress reaches each.
	watches map[uint64]*openWatch
}

var _ informer.Source[*Object[int]] = (*Source[int])(nil)

// New validates opts and returns a source. It does not contact etcd.
//
// Possible errors: [informer.ErrInvalidOptions].
func New[T any](opts Options[T]) (*Source[T], error) {
	opts, err := opts.withDefaults()
	if err != nil {
		return nil, err
	}
	s := &Source[T]{
		opts:    opts,
		log:     opts.Logger.WithValues("prefix", opts.Prefix),
		watches: make(map[uint64]*openWatch),
	}
	s.into, _ = opts.Codec.(DecoderInto[T])
	s.health = newEndpointHealth(rand.Uint64()) // processes started together spread their watches
	if opts.Prefix == "" {
		s.start, s.end = "\x00", "\x00"
	} else {
		s.start, s.end = opts.Prefix, clientv3.GetPrefixRangeEnd(opts.Prefix)
	}
	return s, nil
}

// Prefix returns the prefix the source covers.
func (s *Source[T]) Prefix() string { return s.opts.Prefix }

// DecodeErrors returns the number of bad values seen so far (by lists and
// watches). Safe for concurrent use.
func (s *Source[T]) DecodeErrors() uint64 { return s.decodeN.Load() }

// RequestProgress asks every watch of the source open now for a progress
// notification: each soon delivers a Bookmark whose version is a revision up
// to which it has delivered every change (etcd's on-demand progress). A
// watch still replaying history answers once it has caught up, and one not
// yet confirmed by etcd (or still sending a streaming list's initial events)
// once it is confirmed.
//
// Possible errors: the client's, classified as by List (ErrTransient when
// etcd is unreachable), joined over the watches; ctx.Err().
func (s *Source[T]) RequestProgress(ctx context.Context) error {
	s.mu.Lock()
	open := slices.Collect(maps.Values(s.watches))
	s.mu.Unlock()
	var errs []error
	for _, w := range open {
		if err := w.progress(ctx); err != nil {
			errs = append(errs, classify.Error(err))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("etcd source: request progress: %w", err)
	}
	return nil
}

// verdict is what decode made of a value.
type verdict uint8

const (
	visible  verdict = iota // decoded and matching the filter
	filtered                // decoded, not matching the filter
	bad                     // failed the transform or the codec (reported)
)

// decode converts a key-value to an object; the object is nil unless the
// verdict is visible. A bad value is reported when report is set (not for
// previous values: they were reported as current ones).
func (s *Source[T]) decode(ctx context.Context, kv *mvccpb.KeyValue, report bool) (*Object[T], verdict) {
	data := kv.Value
	key := string(kv.Key)
	var err error
	if s.opts.Transform != nil {
		data, err = safecall.Call(func(data []byte) ([]byte, error) { return s.opts.Transform(ctx, key, data) }, data)
		if err != nil {
			err = fmt.Errorf("transform: %w", err)
		}
	}
	// The object is allocated first and the value decoded in place when the
	// codec can (DecoderInto): one allocation per value instead of two.
	obj := &Object[T]{ModRevision: kv.ModRevision, CreateRevision: kv.CreateRevision}
	if err == nil {
		if s.into != nil {
			_, err = safecall.Call(func(data []byte) (struct{}, error) { return struct{}{}, s.into.DecodeInto(data, &obj.Value) }, data)
		} else {
			obj.Value, err = safecall.Call(s.opts.Codec.Decode, data)
		}
		if err != nil {
			err = fmt.Errorf("codec: %w", err)
		}
	}
	if err != nil {
		if report {
			s.reportBad(ctx, &DecodeError{Key: key, ModRevision: kv.ModRevision, Err: err})
		}
		return nil, bad
	}
	if s.opts.Filter != nil && !s.opts.Filter(key, obj.Value) {
		return nil, filtered
	}
	obj.Key = s.objectKey(key)
	return obj, visible
}

// objectKey strips the prefix when asked.
func (s *Source[T]) objectKey(key string) string {
	if s.opts.StripPrefix {
		return key[len(s.opts.Prefix):]
	}
	return key
}

// reportBad counts a value that could not be decoded, reports it to the
// informer that lists or watches the source (which logs it), or, used
// alone, logs it (rate-limited), and hands it to Options.ErrorHandler.
func (s *Source[T]) reportBad(ctx context.Context, err *DecodeError) {
	s.decodeN.Add(1)
	if !informer.ReportSourceError(ctx, err) {
		s.limiter.Error(s.log, "decode", err, "bad value skipped", "key", err.Key, "revision", err.ModRevision)
	}
	if s.opts.ErrorHandler != nil {
		s.opts.ErrorHandler(ctx, err)
	}
}

// formatRev and parseRev convert revisions and versions.
func formatRev(rev int64) string { return strconv.FormatInt(rev, 10) }

func parseRev(v string) (int64, error) {
	rev, err := strconv.ParseInt(v, 10, 64)
	if err != nil || rev < 0 {
		return 0, fmt.Errorf("etcd source: bad version %q: %w", v, informer.ErrInvalidOptions)
	}
	return rev, nil
}

var _ informer.VersionComparer = (*Source[int])(nil)

// CompareVersions orders two versions of the source: -1 if revision a is
// older than b, 0 if equal, +1 if newer ("9" < "10"). It implements
// [informer.VersionComparer], which lets
// [informer.SharedInformer.WaitForVersion] wait for "this revision or
// later". The revision of a write under the prefix (its response header's
// Revision) is reached when the write's event is applied; any other
// revision, once a later event or a bookmark is (see
// [Source.RequestProgress]).
//
// Possible errors: [informer.ErrInvalidVersion] when a or b is not a
// non-negative decimal integer.
func (s *Source[T]) CompareVersions(a, b string) (int, error) {
	x, err := strconv.ParseInt(a, 10, 64)
	if err != nil || x < 0 {
		return 0, fmt.Errorf("etcd source: version %q is not a revision: %w", a, informer.ErrInvalidVersion)
	}
	y, err := strconv.ParseInt(b, 10, 64)
	if err != nil || y < 0 {
		return 0, fmt.Errorf("etcd source: version %q is not a revision: %w", b, informer.ErrInvalidVersion)
	}
	return cmp.Compare(x, y), nil
}

// addWatch registers a new watch, stopped once stopped is closed; the
// returned function removes it.
func (s *Source[T]) addWatch(stopped <-chan struct{}) (*openWatch, func()) {
	id := s.watchSeq.Add(1)
	w := &openWatch{requested: make(chan struct{}, 1), stopped: stopped}
	s.mu.Lock()
	s.watches[id] = w
	s.mu.Unlock()
	return w, func() {
		s.mu.Lock()
		delete(s.watches, id)
		s.mu.Unlock()
	}
}

// openWatch is a watch of the source as RequestProgress sees it: its etcd
// watch once etcd has confirmed it. Safe for concurrent use.
type openWatch struct {
	// mu guards the fields below.
	mu      sync.Mutex
	conn    *watchConn  // the etcd watch's; nil before it is confirmed and after it ended
	md      metadata.MD // the outgoing metadata of its gRPC stream
	pending bool        // a progress request came before the etcd watch was confirmed
	ended   bool

	// requested tells the watch's goroutine that progress sent a request,
	// which it resends until answered (see progressRetry).
	requested chan struct{}
	// stopped is closed once the watch is stopped (its consumer's Stop or
	// context): its etcd watch may be gone before its goroutine ends it.
	stopped <-chan struct{}
}

// progress asks the watch for a progress notification; before its etcd
// watch is confirmed, it leaves the request for confirmed to send.
func (w *openWatch) progress(ctx context.Context) error {
	w.mu.Lock()
	conn, md := w.conn, w.md
	w.pending = conn == nil && !w.ended
	w.mu.Unlock()
	if conn == nil {
		return nil
	}
	err := conn.RequestProgress(metadata.NewOutgoingContext(ctx, md))
	if err == nil {
		select {
		case w.requested <- struct{}{}:
		default: // one already told
		}
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.ended { // the watch ended meanwhile (and closed its connection)
		return nil
	}
	select {
	case <-w.stopped: // its etcd watch ended with the stream, before its goroutine noticed
		return nil
	default:
	}
	return err
}

// confirmed records the etcd watch, once etcd has confirmed it, and
// reports whether a progress request was left for it.
func (w *openWatch) confirmed(conn *watchConn, md metadata.MD) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.conn, w.md = conn, md
	pending := w.pending
	w.pending = false
	return pending
}

// detach records that the etcd watch ended and another is about to take
// its place in the same stream (see run): a progress request waits for it.
func (w *openWatch) detach() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.conn = nil
}

// end records that the etcd watch ended: progress requests are no longer
// sent.
func (w *openWatch) end() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.conn, w.ended = nil, true
}
