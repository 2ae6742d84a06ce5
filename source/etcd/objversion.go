package etcd

import "github.com/ginformer/ginformer/informer"

var _ informer.ObjectVersioner[*Object[int]] = (*Source[int])(nil)

// ObjectVersion implements [informer.ObjectVersioner]: the object's
// ModRevision (the revision of the key's last change), "" for nil. An
// informer over the source then delivers, on a relist, only the keys
// changed since it last saw them.
func (s *Source[T]) ObjectVersion(obj *Object[T]) string {
	if obj == nil || obj.ModRevision == 0 {
		return ""
	}
	return formatRev(obj.ModRevision)
}
