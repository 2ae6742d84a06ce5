package natskv

import (
	"cmp"
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/ginformer/ginformer/informer"
	"github.com/ginformer/ginformer/internal/lograte"
	"github.com/ginformer/ginformer/internal/safecall"
)

// Source is an [informer.Source] of the keys of a NATS JetStream KV bucket.
// See the package doc for versions, lists, watches and bad values. It is
// safe for concurrent use; it holds no resources of its own besides open
// watches (each with its goroutine and ordered consumer), each ended by its
// context or Stop, and the rest of paged lists (bounded by
// [Options.MaxContinues] and [Options.ContinueTTL]). Use [New]; the zero
// value is not usable.
type Source[T any] struct {
	opts    Options[T]
	log     logr.Logger
	limiter lograte.Limiter
	api     string // the JetStream API prefix, with its trailing dot
	stream  string // KV_<bucket>
	prefix  string // $KV.<bucket>.
	direct  string // the direct get subject of the stream
	decodeN atomic.Uint64

	// mu guards continues.
	mu        sync.Mutex
	continues map[string]*continued[T]
}

var _ informer.Source[*Object[int]] = (*Source[int])(nil)

// New validates opts and returns a source. It does not contact the server.
//
// Possible errors: [informer.ErrInvalidOptions].
func New[T any](opts Options[T]) (*Source[T], error) {
	opts, err := opts.withDefaults()
	if err != nil {
		return nil, err
	}
	api := opts.JetStream.Options().APIPrefix
	if api == "" {
		api = jetstream.DefaultAPIPrefix
	}
	if !strings.HasSuffix(api, ".") {
		api += "."
	}
	s := &Source[T]{
		opts:      opts,
		log:       opts.Logger.WithValues("bucket", opts.Bucket),
		api:       api,
		stream:    "KV_" + opts.Bucket,
		prefix:    "$KV." + opts.Bucket + ".",
		continues: make(map[string]*continued[T]),
	}
	s.direct = api + "DIRECT.GET." + s.stream
	return s, nil
}

// Bucket returns the name of the bucket the source covers.
func (s *Source[T]) Bucket() string { return s.opts.Bucket }

// DecodeErrors returns the number of bad values seen so far (by lists and
// watches). Safe for concurrent use.
func (s *Source[T]) DecodeErrors() uint64 { return s.decodeN.Load() }

var _ informer.VersionComparer = (*Source[int])(nil)

// CompareVersions orders two versions of the source: -1 if revision a is
// older than b, 0 if equal, +1 if newer ("9" < "10"). It implements
// [informer.VersionComparer], which lets
// [informer.SharedInformer.WaitForVersion] wait for the revision a write
// returned (jetstream.KeyValue.Put, Create, Update).
//
// Possible errors: [informer.ErrInvalidVersion] when a or b is not a
// decimal unsigned integer.
func (s *Source[T]) CompareVersions(a, b string) (int, error) {
	x, err := strconv.ParseUint(a, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("natskv source: version %q is not a revision: %w", a, informer.ErrInvalidVersion)
	}
	y, err := strconv.ParseUint(b, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("natskv source: version %q is not a revision: %w", b, informer.ErrInvalidVersion)
	}
	return cmp.Compare(x, y), nil
}

// formatRev and parseRev convert revisions and versions.
func formatRev(rev uint64) string { return strconv.FormatUint(rev, 10) }

func parseRev(v string) (uint64, error) {
	rev, err := strconv.ParseUint(v, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("natskv source: bad version %q: %w", v, informer.ErrInvalidOptions)
	}
	return rev, nil
}

// bounds are the revisions the stream holds: first..last (first is last+1
// when it holds none).
type bounds struct {
	first, last uint64
	direct      bool // the stream allows direct gets
}

// bounds reads the stream's first and last sequences.
func (s *Source[T]) bounds(ctx context.Context) (bounds, error) {
	st, err := s.opts.JetStream.Stream(ctx, s.stream)
	if err != nil {
		return bounds{}, classify(ctx, "stream info", err)
	}
	info := st.CachedInfo()
	return bounds{first: info.State.FirstSeq, last: info.State.LastSeq, direct: info.Config.AllowDirect}, nil
}

// check classifies a requested revision v against the stream: newer than
// its last revision gives ErrVersionTooLarge; older than the revision
// before its first message, ErrExpired (the changes after v are no longer
// all there).
func (b bounds) check(v uint64) error {
	switch {
	case v > b.last:
		return fmt.Errorf("natskv source: revision %d is newer than the stream's last revision %d: %w", v, b.last, informer.ErrVersionTooLarge)
	case v+1 < b.first:
		return fmt.Errorf("natskv source: revision %d is older than the stream's first revision %d: %w", v, b.first, informer.ErrExpired)
	}
	return nil
}

// op is the kind of a KV message.
type op uint8

const (
	opPut op = iota
	opDelete
	opPurge
)

// The KV headers (as in jetstream's kv.go).
const (
	hdrOperation = "KV-Operation"
	hdrMarker    = "Nats-Marker-Reason"
)

// opOf reads the operation of a KV message from its headers.
func opOf(h nats.Header) op {
	if len(h) == 0 {
		return opPut
	}
	switch h.Get(hdrOperation) {
	case "DEL":
		return opDelete
	case "PURGE":
		return opPurge
	}
	switch h.Get(hdrMarker) {
	case "MaxAge", "Purge":
		return opPurge
	case "Remove":
		return opDelete
	}
	return opPut
}

// entry is one message of the bucket's stream.
type entry struct {
	key  string
	seq  uint64
	op   op
	data []byte
	time time.Time
}

// entryOf reads a message delivered by a consumer.
func (s *Source[T]) entryOf(m jetstream.Msg) (entry, error) {
	meta, err := m.Metadata()
	if err != nil {
		return entry{}, fmt.Errorf("natskv source: message metadata: %w", err)
	}
	key, ok := strings.CutPrefix(m.Subject(), s.prefix)
	if !ok {
		return entry{}, fmt.Errorf("natskv source: message subject %q outside the bucket", m.Subject())
	}
	return entry{key: key, seq: meta.Sequence.Stream, op: opOf(m.Headers()), data: m.Data(), time: meta.Timestamp}, nil
}

// verdict is what decode made of a value.
type verdict uint8

const (
	visible verdict = iota // decoded
	bad                    // failed the codec (reported)
)

// decode converts a put to an object; the object is nil when the value is
// bad. A bad value is reported when report is set (not for previous
// values: they were reported as current ones).
func (s *Source[T]) decode(ctx context.Context, e entry, report bool) (*Object[T], verdict) {
	v, err := safecall.Call(s.opts.Codec.Decode, e.data)
	if err != nil {
		if report {
			s.reportBad(ctx, &DecodeError{Key: e.key, Revision: e.seq, Err: err})
		}
		return nil, bad
	}
	return &Object[T]{Key: e.key, Value: v, Revision: e.seq, Created: e.time}, visible
}

// reportBad counts a value that could not be decoded, reports it to the
// informer that lists or watches the source (which logs it), or, used
// alone, logs it (rate-limited), and hands it to Options.ErrorHandler.
func (s *Source[T]) reportBad(ctx context.Context, err *DecodeError) {
	s.decodeN.Add(1)
	if !informer.ReportSourceError(ctx, err) {
		s.limiter.Error(s.log, "decode", err, "bad value skipped", "key", err.Key, "revision", err.Revision)
	}
	if s.opts.ErrorHandler != nil {
		s.opts.ErrorHandler(ctx, err)
	}
}

// deleteConsumer removes an ordered consumer from the server once it is no
// longer read (the server would otherwise keep it until its inactivity
// threshold). Best effort, bounded by a second.
func (s *Source[T]) deleteConsumer(c jetstream.Consumer) {
	info := c.CachedInfo()
	if info == nil || info.Name == "" {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	_ = s.opts.JetStream.DeleteConsumer(ctx, s.stream, info.Name)
}
