package memory

import (
	"reflect"

	"github.com/ginformer/ginformer/informer"
)

var (
	_ informer.ObjectVersioner[int] = (*Store[string, int])(nil)
	_ informer.ObjectVersioner[int] = filtered[string, int]{}
)

// ObjectVersion implements [informer.ObjectVersioner]: it returns the mod
// version of obj (the version of the write that stored it) if obj is the
// object the store holds now under its key, and "" otherwise: an object
// replaced or deleted since, a copy (such as an informer's transformed
// object), or a T that cannot be compared (see below). An informer over the
// store then delivers, on a relist, only the objects written since it last
// saw them.
//
// The store never copies objects, so "is the object it holds" is identity
// for pointers (and any comparable T: two equal values written at different
// versions both get the newer version, which is harmless, as they are the
// same state). For a T whose values are not comparable (slices, maps, structs
// holding them) it always returns "". It calls KeyFunc, without the store's
// lock.
func (s *Store[K, T]) ObjectVersion(obj T) string {
	key, err := s.keyOf(obj)
	if err != nil {
		return ""
	}
	s.mu.Lock()
	e, ok := s.objects[key]
	var cur T
	var rev int64
	if ok {
		cur, rev = e.obj, e.modRev
	}
	s.mu.Unlock()
	if !ok || !sameObject(cur, obj) {
		return ""
	}
	return formatVersion(rev)
}

// ObjectVersion is the store's [Store.ObjectVersion].
func (f filtered[K, T]) ObjectVersion(obj T) string { return f.s.ObjectVersion(obj) }

// sameObject reports whether a and b are the same object: == for comparable
// values (identity for pointers), false when they cannot be compared.
func sameObject[T any](a, b T) bool {
	va := reflect.ValueOf(&a).Elem()
	if va.Kind() == reflect.Pointer {
		return va.Pointer() == reflect.ValueOf(&b).Elem().Pointer()
	}
	if !va.Comparable() || !reflect.ValueOf(&b).Elem().Comparable() {
		return false
	}
	return va.Equal(reflect.ValueOf(&b).Elem())
}
