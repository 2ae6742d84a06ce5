package natskv

import (
	"errors"

	"github.com/ginformer/ginformer/informer"
	"github.com/ginformer/ginformer/source/internal/sourcekit"
)

// ErrDecode is wrapped by every [DecodeError]: a value of the bucket failed
// the codec.
var ErrDecode = errors.New("natskv source: cannot decode value")

// DecodeError reports a value that failed the codec. It wraps [ErrDecode],
// [informer.ErrDecode] (so an informer counts it under
// [informer.ErrorClassDecode]) and the cause.
type DecodeError struct {
	// Key is the KV key.
	Key string
	// Revision is the revision of the bad value.
	Revision uint64
	// Err is the codec's error, or the panic recovered from it (with its
	// stack).
	Err error
}

// Error describes the key, the revision and the cause.
func (e *DecodeError) Error() string {
	return sourcekit.DecodeMessage("natskv source", e.Key, e.Revision, e.Err)
}

// Unwrap returns [ErrDecode], [informer.ErrDecode] and the cause.
func (e *DecodeError) Unwrap() []error { return []error{ErrDecode, informer.ErrDecode, e.Err} }
