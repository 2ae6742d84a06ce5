package wire

import (
	"sync"

	"google.golang.org/protobuf/encoding/protowire"
)

// Known remembers, for a source that decodes itself, the object it
// last delivered for each key and its resourceVersion, so that a relist
// (a list or a streaming list after a 410, a compaction or a lost watch)
// reads each object's name and resourceVersion from the wire bytes and
// decodes only the objects that changed: an object at the version already
// delivered is the same object (a resourceVersion names one state of one
// object), so the delivered one is handed on again. The informer then drops
// it as unchanged (docs/k8s.md, "Relists carry only what changed").
//
// Entries are refreshed by every list, watch event and streaming list;
// [Known.Begin] and [Known.Sweep] bracket a whole list so that objects deleted while the
// watch was down are forgotten. It costs a map entry per object (about
// 100 bytes with its key). Safe for concurrent use.
type Known[T any] struct {
	mu    sync.Mutex
	m     map[string]*knownEntry[T] // "namespace/name" →
	epoch uint32
}

type knownEntry[T any] struct {
	version string
	obj     T
	epoch   uint32
}

// NewKnown returns an empty Known.
func NewKnown[T any]() *Known[T] {
	return &Known[T]{m: make(map[string]*knownEntry[T])}
}

// Len returns the number of objects known.
func (k *Known[T]) Len() int {
	k.mu.Lock()
	defer k.mu.Unlock()
	return len(k.m)
}

// Begin starts a list: entries not refreshed until [Known.Sweep] are
// dropped.
func (k *Known[T]) Begin() {
	k.mu.Lock()
	k.epoch++
	k.mu.Unlock()
}

// Sweep ends a list begun by [Known.Begin].
func (k *Known[T]) Sweep() {
	k.mu.Lock()
	defer k.mu.Unlock()
	for key, e := range k.m {
		if e.epoch != k.epoch {
			delete(k.m, key)
		}
	}
}

// Lookup returns the object delivered for key at version, if it is the
// one known. key is the scratch bytes "namespace/name".
func (k *Known[T]) Lookup(key, version []byte) (T, bool) {
	k.mu.Lock()
	defer k.mu.Unlock()
	e := k.m[string(key)]
	if e == nil || e.version != string(version) {
		var zero T
		return zero, false
	}
	e.epoch = k.epoch
	return e.obj, true
}

// Record remembers obj as delivered for namespace/name at version.
func (k *Known[T]) Record(namespace, name, version string, obj T) {
	key := namespace + "/" + name
	k.mu.Lock()
	k.m[key] = &knownEntry[T]{version: version, obj: obj, epoch: k.epoch}
	k.mu.Unlock()
}

// Forget drops namespace/name (a deletion).
func (k *Known[T]) Forget(namespace, name string) {
	key := namespace + "/" + name
	k.mu.Lock()
	delete(k.m, key)
	k.mu.Unlock()
}

// ObjectMeta field numbers read from the wire.
const (
	nameMeta      = 1
	namespaceMeta = 3
)

// Identity reads an object's "namespace/name" (appended to buf) and
// resourceVersion from its raw protobuf bytes, without decoding it.
func Identity(obj []byte, buf []byte) (key, version []byte, ok bool) {
	meta, err := leadingBytesField(obj, objectMetaField)
	if err != nil {
		return nil, nil, false
	}
	var name, ns []byte
	for b := meta; len(b) > 0; {
		num, typ, v, size, err := consumeField(b)
		if err != nil {
			return nil, nil, false
		}
		if typ == protowire.BytesType {
			switch num {
			case nameMeta:
				name = v
			case namespaceMeta:
				ns = v
			case resourceVersionMeta:
				version = v
			}
		}
		b = b[size:]
	}
	if len(name) == 0 || len(version) == 0 {
		return nil, nil, false
	}
	buf = append(append(append(buf[:0], ns...), '/'), name...)
	return buf, version, true
}
