package informer

import (
	"context"
	"fmt"
	"io"
	"reflect"
	"strings"
	"time"

	"github.com/ginformer/ginformer/internal/snapshotfmt"
	"github.com/ginformer/ginformer/internal/typename"
)

// Warm restart: a cache kept on disk between runs.
//
// With [Options.Snapshot] set, an informer writes its cache (the objects,
// the version they are at and what they are a cache of) to a
// [SnapshotStore] in the background, periodically and when it stops. The
// next informer built with the same source and options loads it before its
// first request to the source, then watches from the snapshot's version
// ([WatchOptions.NotifyCaughtUp]) instead of listing, and counts as synced
// once the watch has caught up with the source. If the version has expired
// (or the source cannot resume a watch), it relists, and the relist keeps
// what did not change (see [Options.ObjectVersion]). docs/operations.md
// ("Warm restarts") has the lines to add, the costs measured and the
// failure modes.

// Codec turns the objects of a cache into bytes and back, for snapshots.
// Sources that support snapshots provide one ([SnapshotSource]); a program
// using [SourceFuncs] or its own source supplies its own in
// [SnapshotOptions.Codec]. Implementations must be safe for concurrent use:
// a snapshot is encoded and decoded on several goroutines at once.
type Codec[T any] interface {
	// Format names the encoding, including anything that changes it (a
	// version, the type encoded): a snapshot written with another Format is
	// refused. For example "etcd.Object/json/1".
	Format() string
	// AppendEncode appends the encoding of obj to dst and returns the
	// extended slice. obj is a cached object: read-only.
	AppendEncode(dst []byte, obj T) ([]byte, error)
	// Decode returns the object encoded in data. data belongs to the
	// caller and is reused after Decode returns: copy what the object keeps.
	Decode(data []byte) (T, error)
}

// SnapshotSource is implemented by a [Source] whose caches can be kept in
// a snapshot: every source in this repository. It is optional: an informer
// detects it with a type assertion when [SnapshotOptions.Store] is set.
type SnapshotSource[T any] interface {
	// SnapshotIdentity names the collection the source serves, as
	// precisely as a snapshot must match it: the kind of source, the
	// prefix, bucket or resource, the selectors, and what tells one
	// cluster or incarnation of the data from another (etcd's cluster ID,
	// a NATS stream's creation time), since a version of one is meaningless
	// in another. A snapshot whose identity differs is refused. It must be
	// stable across runs of the same program against the same data. The
	// informer calls it once per Run, before it loads a snapshot; it may ask
	// the server (ctx bounds that). An error means the identity cannot be
	// checked: the informer starts cold (and reports it).
	SnapshotIdentity(ctx context.Context) (string, error)
	// SnapshotCodec returns the codec of the source's objects.
	SnapshotCodec() Codec[T]
}

// SnapshotStore keeps the last snapshot of one informer. The informer
// calls it from one goroutine at a time. [NewSnapshotFile] returns the
// store this package provides, a file on local disk; other stores (an
// object store, a database) implement this interface.
type SnapshotStore interface {
	// Load returns the snapshot saved last, whole. When there is none, it
	// returns an error wrapping [fs.ErrNotExist]. The informer checks
	// everything it loads (format, identity, checksums): a store need not.
	Load(ctx context.Context) ([]byte, error)
	// Save replaces the saved snapshot with the bytes write writes to w,
	// atomically: until Save returns nil, Load returns the previous
	// snapshot (or none), whatever happens to the process meanwhile. If
	// write returns an error or ctx is done, the saved snapshot is
	// unchanged and Save returns an error.
	Save(ctx context.Context, write func(w io.Writer) error) error
}

// SnapshotOptions turns on warm restarts for one informer (see
// [Options.Snapshot]). The zero value is off.
type SnapshotOptions[T any] struct {
	// Store keeps the snapshot, usually [NewSnapshotFile]. Zero (nil):
	// warm restarts are off, nothing is read or written.
	Store SnapshotStore
	// Codec encodes the cached objects. Zero: the source's
	// ([SnapshotSource]); for a source without one, [NewValueCodec]'s
	// (refused by NewSharedInformer for a T it cannot plan: then set it).
	Codec Codec[T]
	// Identity is added to the source's identity: anything beyond the
	// source that changes what the cache holds, which a snapshot must
	// match. Change it whenever [Options.Transform] changes what it keeps,
	// or the key function changes. Zero: "".
	Identity string
	// Interval is the time between two snapshots written while the informer
	// runs; the first is written as soon as it has synced (paced, in the
	// background), and one when it stops. Zero: 5 minutes. Negative: only
	// when it stops.
	Interval time.Duration
}

// enabled reports whether warm restarts are on.
func (o SnapshotOptions[T]) enabled() bool { return !isNil(o.Store) }

// snapshotConfig is the checked, defaulted form of SnapshotOptions.
type snapshotConfig[T any] struct {
	store    SnapshotStore
	codec    Codec[T]
	source   SnapshotSource[T] // nil: the source is none
	srcType  string            // the source's Go type
	user     string            // SnapshotOptions.Identity
	interval time.Duration     // zero: only when the informer stops
}

// defaultSnapshotInterval is SnapshotOptions.Interval's zero value.
const defaultSnapshotInterval = 5 * time.Minute

// newSnapshotConfig defaults and validates o for an informer of src. It
// returns nil when snapshots are off.
//
// Possible errors: [ErrInvalidOptions] (no codec, a SnapshotFile whose
// path names no file).
func newSnapshotConfig[T any](o SnapshotOptions[T], src Source[T]) (*snapshotConfig[T], error) {
	if !o.enabled() {
		return nil, nil
	}
	if f, ok := o.Store.(interface{ check() error }); ok {
		if err := f.check(); err != nil {
			return nil, fmt.Errorf("snapshot: %w", err)
		}
	}
	c := &snapshotConfig[T]{store: o.Store, codec: o.Codec, interval: o.Interval, user: o.Identity}
	c.source, _ = src.(SnapshotSource[T])
	if c.source != nil && isNil(c.codec) {
		c.codec = c.source.SnapshotCodec()
	}
	c.srcType = fmt.Sprintf("%T", src)
	if isNil(c.codec) {
		vc, err := NewValueCodec[T]()
		if err != nil {
			return nil, fmt.Errorf("snapshot: the source (%T) provides no codec (it is no SnapshotSource) and %w: set Snapshot.Codec", src, err)
		}
		c.codec = vc
	}
	switch {
	case c.interval == 0:
		c.interval = defaultSnapshotInterval
	case c.interval < 0:
		c.interval = 0
	}
	return c, nil
}

// identity returns the identity a snapshot must carry to be restored into
// this informer, and that the informer's snapshots carry: the format's
// version, the source's identity (or, for a source that is no
// SnapshotSource, its type), the object type, the codec's format and the
// user's identity.
func (c *snapshotConfig[T]) identity(ctx context.Context) (string, error) {
	src := "type " + c.srcType
	if c.source != nil {
		id, err := c.source.SnapshotIdentity(ctx)
		if err != nil {
			return "", fmt.Errorf("source identity: %w", err)
		}
		src = id
	}
	return c.identityOf(src), nil
}

// identityOf returns the identity of a snapshot of this informer whose
// source's identity is src.
func (c *snapshotConfig[T]) identityOf(src string) string {
	return fmt.Sprintf("ginformer snapshot v%d\nsource: %s\ntype: %s\nformat: %s\nuser: %s",
		snapshotfmt.Version, src, typename.Of(reflect.TypeFor[T]()), c.codec.Format(), c.user)
}

// sourceOf checks every part of a snapshot's identity id that this
// informer knows without asking the source (layout, object type, codec
// format, user identity; for a source that is no SnapshotSource, its type)
// and returns the part the source must confirm: its identity as the
// snapshot recorded it ("" when there is nothing to confirm).
//
// Possible errors: [ErrSnapshot] (wrapped): id is another informer's.
func (c *snapshotConfig[T]) sourceOf(id string) (string, error) {
	empty := c.identityOf("")
	prefix := empty[:strings.Index(empty, "\nsource: ")+len("\nsource: ")]
	suffix := empty[len(prefix):]
	if len(id) < len(empty) || !strings.HasPrefix(id, prefix) || !strings.HasSuffix(id, suffix) {
		src, _, _ := strings.Cut(strings.TrimPrefix(id, prefix), "\n")
		return "", identityMismatch(id, c.identityOf(src))
	}
	src := id[len(prefix) : len(id)-len(suffix)]
	if c.source == nil {
		if want := "type " + c.srcType; src != want {
			return "", identityMismatch(id, c.identityOf(want))
		}
		return "", nil
	}
	return src, nil
}
