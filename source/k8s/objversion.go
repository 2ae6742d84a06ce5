package k8s

import "github.com/ginformer/ginformer/informer"

var _ informer.ObjectVersioner[Object] = (*Source[Object])(nil)

// ObjectVersion implements [informer.ObjectVersioner]: the object's
// metadata.resourceVersion (the version of its last change). An informer
// over the source then delivers, on a relist, only the objects changed since
// it last saw them, where client-go delivers an update for every object (see
// docs/k8s.md). A Transform must keep resourceVersion for this to work.
func (s *Source[T]) ObjectVersion(obj T) string {
	if isNilObject(obj) {
		return ""
	}
	return obj.GetResourceVersion()
}

// isNilObject reports whether obj is a nil interface or a nil pointer.
func isNilObject[T Object](obj T) bool {
	var zero T
	return any(obj) == any(zero)
}
