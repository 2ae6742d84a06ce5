package etcd

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/go-logr/logr"
	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"
	"google.golang.org/grpc/metadata"

	"github.com/ginformer/ginformer/informer"
)

// Source is an [informer.Source] of the keys under a prefix of etcd. See the
// package doc for versions, watches, liveness, filters and bad values. It is
// safe for concurrent use; it holds no resources of its own besides open
// watches, each ended by its context or Stop. Use [New]; the zero value is
// not usable.
type Source[T any] struct {
	opts     Options[T]
	log      logr.Logger
	start    string // first key of the range
	end      string // range end (exclusive)
	decodeN  atomic.Uint64
	watchSeq atomic.Uint64
	// noRangeStream is set once etcd answered that it has no RangeStream:
	// streaming lists read pages from then on (see initial.go).
	noRangeStream atomic.Bool

	// mu guards watches.
	mu sync.Mutex
	// watches holds the outgoing metadata of each open watch's gRPC stream,
	// so RequestProgress reaches each stream.
	watches map[uint64]metadata.MD
}

var (
	_ informer.Source[*Object[int]] = (*Source[int])(nil)
	_ informer.VersionComparer      = (*Source[int])(nil)
)

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
		watches: make(map[uint64]metadata.MD),
	}
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
// watch still replaying history answers once it has caught up.
//
// Possible errors: the client's, classified as by List (ErrTransient when
// etcd is unreachable), joined over the watches; ctx.Err().
func (s *Source[T]) RequestProgress(ctx context.Context) error {
	s.mu.Lock()
	mds := make([]metadata.MD, 0, len(s.watches))
	for _, md := range s.watches {
		mds = append(mds, md)
	}
	s.mu.Unlock()
	var errs []error
	for _, md := range mds {
		if err := s.opts.Client.RequestProgress(metadata.NewOutgoingContext(ctx, md)); err != nil {
			errs = append(errs, classify(err))
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
		data, err = callTransform(ctx, s.opts.Transform, key, data)
	}
	var v T
	if err == nil {
		v, err = callDecode(s.opts.Codec, data)
	}
	if err != nil {
		if report {
			s.reportBad(&DecodeError{Key: key, ModRevision: kv.ModRevision, Err: err})
		}
		return nil, bad
	}
	if s.opts.Filter != nil && !s.opts.Filter(key, v) {
		return nil, filtered
	}
	return &Object[T]{Key: s.objectKey(key), Value: v, ModRevision: kv.ModRevision, CreateRevision: kv.CreateRevision}, visible
}

// objectKey strips the prefix when asked.
func (s *Source[T]) objectKey(key string) string {
	if s.opts.StripPrefix {
		return key[len(s.opts.Prefix):]
	}
	return key
}

func (s *Source[T]) reportBad(err *DecodeError) {
	s.decodeN.Add(1)
	s.log.Error(err, "bad value skipped", "key", err.Key, "revision", err.ModRevision)
	if s.opts.ErrorHandler != nil {
		s.opts.ErrorHandler(err)
	}
}

// callTransform runs the user's transform, turning a panic into an error.
func callTransform(ctx context.Context, f func(context.Context, string, []byte) ([]byte, error), key string, data []byte) (out []byte, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("transform panicked: %v", r)
		}
	}()
	return f(ctx, key, data)
}

// callDecode runs the codec, turning a panic into an error.
func callDecode[T any](c Codec[T], data []byte) (v T, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("codec panicked: %v", r)
		}
	}()
	return c.Decode(data)
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

// addWatch registers an open watch's stream metadata; the returned function
// removes it.
func (s *Source[T]) addWatch(md metadata.MD) func() {
	id := s.watchSeq.Add(1)
	s.mu.Lock()
	s.watches[id] = md
	s.mu.Unlock()
	return func() {
		s.mu.Lock()
		delete(s.watches, id)
		s.mu.Unlock()
	}
}
