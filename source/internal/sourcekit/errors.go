package sourcekit

import (
	"errors"
	"fmt"
)

// IsAny reports whether err matches any of targets by [errors.Is].
func IsAny(err error, targets ...error) bool {
	for _, t := range targets {
		if errors.Is(err, t) {
			return true
		}
	}
	return false
}

// DecodeMessage is the message of a source's DecodeError: which source
// (its error prefix, such as "etcd source"), the key, the revision of the
// bad value and the cause.
func DecodeMessage[R int64 | uint64](source, key string, rev R, err error) string {
	return fmt.Sprintf("%s: key %q at revision %d: cannot decode value: %v", source, key, rev, err)
}
