package natskv

import (
	"context"
	"fmt"
	"time"

	"github.com/ginformer/ginformer/informer"
)

var _ informer.SnapshotSource[*Object[int]] = (*Source[int])(nil)

// SnapshotIdentity implements [informer.SnapshotSource]: it names the
// JetStream API prefix (which carries the domain), the bucket, the keys the
// source covers (all of them: ">"), the Go type of [Options.Codec] (which
// makes the values) and the creation time of the bucket's stream, read from
// the server. The creation time tells one incarnation of a bucket from
// another: a bucket deleted and created again starts its revisions at 1
// again, so a snapshot of the old one is refused, and the informer lists
// the new one. The identity is the same across runs of a program and
// restarts of the server (the stream keeps its creation time).
//
// A codec whose output changes without its type changing (a setting of its
// own) is not told apart: change [informer.SnapshotOptions.Identity] with it.
//
// Possible errors: the client's, classified (a missing bucket, the server
// unreachable); ctx.Err().
func (s *Source[T]) SnapshotIdentity(ctx context.Context) (string, error) {
	st, err := s.opts.JetStream.Stream(ctx, s.stream)
	if err != nil {
		return "", classify(ctx, "snapshot identity", err)
	}
	created := st.CachedInfo().Created.UTC().Format(time.RFC3339Nano)
	return fmt.Sprintf("natskv api=%s bucket=%s keys=> codec=%T stream-created=%s", s.api, s.opts.Bucket, s.opts.Codec, created), nil
}

// SnapshotCodec implements [informer.SnapshotSource]: a compact binary
// encoding of each [Object] (see snapshot_codec.go), its value through
// [Options.Codec].
func (s *Source[T]) SnapshotCodec() informer.Codec[*Object[T]] {
	return newObjectCodec(s.opts.Codec)
}
