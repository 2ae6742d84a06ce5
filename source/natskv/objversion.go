package natskv

import "github.com/ginformer/ginformer/informer"

var _ informer.ObjectVersioner[*Object[int]] = (*Source[int])(nil)

// ObjectVersion implements [informer.ObjectVersioner]: the object's
// Revision (the stream sequence of the key's last change), "" for nil or
// a zero revision. An informer over the source then delivers, on a relist,
// only the keys changed since it last saw them.
func (s *Source[T]) ObjectVersion(obj *Object[T]) string {
	if obj == nil || obj.Revision == 0 {
		return ""
	}
	return formatRev(obj.Revision)
}
