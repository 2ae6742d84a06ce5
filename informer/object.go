package informer

// The object contract.
//
// The engine asks almost nothing of the objects it caches. T is any Go type:
// a pointer to a Kubernetes object (*corev1.Pod), a pointer to a plain user
// struct, or a small value type. No interface has to be implemented and no
// wrapper type is needed. What the engine needs is supplied as functions:
//
//   - a [KeyFunc] that names the object with a comparable key K. A struct key
//     such as [NamespacedKey] costs no allocation; a string key works too.
//   - index functions ([IndexFunc]) for secondary indexes, if any.
//
// Versions are opaque strings, compared only for equality, exactly as
// Kubernetes resource versions. They travel beside objects (in list results
// and watch events), not inside them, so T need not expose one. Sources with
// numeric versions (etcd revisions) format them as decimal strings.
//
// The engine never mutates a T. Objects handed to the engine, and objects it
// hands out (from the store, queues and handlers), are shared: treat them as
// read-only.

// KeyFunc returns the key under which obj is stored and queued. It must be
// deterministic: the same object always yields the same key. It is user code:
// the engine calls it without holding any internal lock, and an error or a
// panic from it is returned wrapped in [ErrKeyFunc]; the write that needed it
// is refused.
type KeyFunc[K comparable, T any] func(obj T) (K, error)

// NamespacedKey is a ready-made key for objects named by a namespace and a
// name, as Kubernetes objects are. It is comparable, so it is used as a map
// key directly, without building a "namespace/name" string.
type NamespacedKey struct {
	Namespace string
	Name      string
}

// String returns "namespace/name", or "name" when the namespace is empty, the
// form client-go's MetaNamespaceKeyFunc uses.
func (k NamespacedKey) String() string {
	if k.Namespace == "" {
		return k.Name
	}
	return k.Namespace + "/" + k.Name
}
