package wire

import (
	"sync"
	"unsafe"
	"weak"

	"google.golang.org/protobuf/encoding/protowire"
)

// Known remembers, for a source that decodes itself, the resourceVersion
// of the object it last delivered for each key, and a weak pointer to that
// object (to its array, see [Anchor]), so that a relist (a list or a
// streaming list after a 410, a compaction or a lost watch) reads each
// object's name and resourceVersion from the wire bytes and decodes only
// the objects that changed: an object
// at the version already delivered is the same object (a resourceVersion
// names one state of one object), so the delivered one is handed on again.
// The informer then drops it as unchanged (docs/k8s.md, "Relists carry
// only what changed").
//
// Known never keeps an object alive: when nothing else holds the delivered
// object's array (an informer's Transform stored new, smaller objects),
// [Known.Lookup] misses, and the relist decodes the object again. What it
// keeps per object is its key, its version, its page's anchor and its
// index: about 200 bytes with the map slot (docs/k8s.md has the
// measurement).
//
// Entries are refreshed by every list, watch event and streaming list;
// [Known.Begin] and [Known.Sweep] bracket a whole list so that objects
// deleted while the watch was down are forgotten. Safe for concurrent use.
// Its zero value is not usable; use [NewKnown].
type Known[E any] struct {
	mu    sync.Mutex                // guards m and epoch
	m     map[string]*knownEntry[E] // "namespace/name" →
	epoch uint32
}

type knownEntry[E any] struct {
	version string
	at      Anchor[E] // the array that holds the object
	index   int       // the object's index in it
	epoch   uint32
}

// An Anchor is a weak pointer to an array of objects (a decoded list page,
// or one object): [Known] finds an object by its anchor and index, without
// keeping the array alive. One anchor serves a whole array because the
// runtime keeps the weak pointers to one allocation in a list that each
// new one walks: one per object of a 20,000-pod page made decoding it
// several times slower.
type Anchor[E any] struct{ w weak.Pointer[E] }

// AnchorOf returns the anchor of objs (objs[0], the array's first
// element), for [Known.Record] with each index. It does not keep objs
// alive; the objects do, each of them the whole array.
func AnchorOf[E any](objs []E) Anchor[E] {
	if len(objs) == 0 {
		return Anchor[E]{}
	}
	return Anchor[E]{weak.Make(&objs[0])}
}

// AnchorOne returns the anchor of the single object obj (index 0).
func AnchorOne[E any](obj *E) Anchor[E] { return Anchor[E]{weak.Make(obj)} }

// NewKnown returns an empty Known.
func NewKnown[E any]() *Known[E] {
	return &Known[E]{m: make(map[string]*knownEntry[E])}
}

// Len returns the number of objects known (whether or not still alive).
func (k *Known[E]) Len() int {
	k.mu.Lock()
	defer k.mu.Unlock()
	return len(k.m)
}

// Begin starts a list: entries not refreshed until [Known.Sweep] are
// dropped.
func (k *Known[E]) Begin() {
	k.mu.Lock()
	k.epoch++
	k.mu.Unlock()
}

// Sweep ends a list begun by [Known.Begin].
func (k *Known[E]) Sweep() {
	k.mu.Lock()
	defer k.mu.Unlock()
	for key, e := range k.m {
		if e.epoch != k.epoch {
			delete(k.m, key)
		}
	}
}

// Lookup returns the object delivered for key at version, if it is the
// one known and still alive (held by something other than k). key is the
// bytes "namespace/name".
func (k *Known[E]) Lookup(key, version []byte) (*E, bool) {
	k.mu.Lock()
	defer k.mu.Unlock()
	e := k.m[string(key)]
	if e == nil || e.version != string(version) {
		return nil, false
	}
	base := e.at.w.Value()
	if base == nil {
		return nil, false // decoded again, and recorded again
	}
	e.epoch = k.epoch
	return (*E)(unsafe.Add(unsafe.Pointer(base), uintptr(e.index)*unsafe.Sizeof(*base))), true
}

// Record remembers the object at index i of the array anchored by at
// ([AnchorOf]) as delivered for namespace/name at version, without keeping
// it alive. version is kept: it must not share a larger allocation.
func (k *Known[E]) Record(namespace, name, version string, at Anchor[E], i int) {
	key := namespace + "/" + name
	k.mu.Lock()
	k.m[key] = &knownEntry[E]{version: version, at: at, index: i, epoch: k.epoch}
	k.mu.Unlock()
}

// Forget drops namespace/name (a deletion).
func (k *Known[E]) Forget(namespace, name string) {
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
