package etcd

import (
	"errors"

	"github.com/ginformer/ginformer/informer"
	"github.com/ginformer/ginformer/source/internal/sourcekit"
)

// ErrDecode is wrapped by every [DecodeError]: a value under the prefix
// failed the transform or the codec.
var ErrDecode = errors.New("etcd source: cannot decode value")

// DecodeError reports a value that failed [Options.Transform] or the codec.
// It wraps [ErrDecode], [informer.ErrDecode] (so an informer counts it under
// [informer.ErrorClassDecode]) and the cause.
type DecodeError struct {
	// Key is the full etcd key.
	Key string
	// ModRevision is the revision of the bad value.
	ModRevision int64
	// Err is the transform's or the codec's error, or the panic recovered
	// from either (with its stack), prefixed with "transform: " or
	// "codec: ".
	Err error
}

// Error describes the key, the revision and the cause.
func (e *DecodeError) Error() string {
	return sourcekit.DecodeMessage("etcd source", e.Key, e.ModRevision, e.Err)
}

// Unwrap returns [ErrDecode], [informer.ErrDecode] and the cause.
func (e *DecodeError) Unwrap() []error { return []error{ErrDecode, informer.ErrDecode, e.Err} }
