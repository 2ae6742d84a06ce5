// Package typename names Go types with their package paths, for the
// identities of snapshots: the engine's (informer) and the sources' (the
// k8s source's object type and codec format). It imports nothing of
// ginformer's.
package typename

import "reflect"

// Of names t with its package path ("*k8s.io/api/core/v1.Secret",
// "[]example.com/app.Item"), so that two types of one name in different
// packages differ. Pointers and slices are named by their element; other
// unnamed types (maps, arrays, funcs) and predeclared ones by t.String().
// The names are persisted in snapshots: a change to them makes every
// snapshot written before unusable (the informer lists instead).
func Of(t reflect.Type) string {
	switch t.Kind() {
	case reflect.Pointer:
		return "*" + Of(t.Elem())
	case reflect.Slice:
		return "[]" + Of(t.Elem())
	}
	if t.PkgPath() == "" {
		return t.String()
	}
	return t.PkgPath() + "." + t.Name()
}
