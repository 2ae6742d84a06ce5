package sourcekit

import "github.com/ginformer/ginformer/informer"

// IndexFunc turns f, an index function of values, into an
// [informer.IndexFunc] of the objects O that wrap them: value returns an
// object's value and whether it is known. An object whose value is unknown
// (a deletion whose last value was lost or did not decode) has no index
// values; f is not called for it.
func IndexFunc[O, T any](value func(O) (T, bool), f func(dst []string, value T) ([]string, error)) informer.IndexFunc[O] {
	return func(dst []string, o O) ([]string, error) {
		v, ok := value(o)
		if !ok {
			return dst, nil
		}
		return f(dst, v)
	}
}
