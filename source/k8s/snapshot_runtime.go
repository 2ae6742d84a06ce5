package k8s

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	sigsjson "sigs.k8s.io/json"

	"github.com/ginformer/ginformer/informer"
)

// The snapshot codec of a source made by [NewFromListerWatcher]
// ([Source.SnapshotCodec]).
//
// Such a source yields runtime.Objects of whatever concrete type the
// ListerWatcher decodes: client-go's typed objects (*corev1.Pod),
// *unstructured.Unstructured, *metav1.PartialObjectMetadata. So each object
// is kept with what it is. One record per object, its first byte the shape:
//
//	'p'  a kind of the scheme whose type has the generated protobuf
//	     marshaller: the kind ("group/version/Kind", uvarint length
//	     first), the object's own apiVersion and kind (TypeMeta, which the
//	     protobuf message does not hold; usually empty), then the protobuf
//	'j'  any other kind of the scheme: the kind, then encoding/json's JSON
//	'u'  an *unstructured.Unstructured: its JSON (apiVersion and kind in it)
//	'm'  a *metav1.PartialObjectMetadata: its JSON (apiVersion and kind in it)
//
// A typed object is decoded into scheme.New(kind); an object whose type
// the scheme does not know fails to encode (the informer reports the
// failed snapshot write and goes on).

// runtimeSnapshotFormatVersion is the version of the records above, part
// of the codec's Format.
const runtimeSnapshotFormatVersion = 1

// Record shapes (see above).
const (
	shapeProto        = 'p'
	shapeJSON         = 'j'
	shapeUnstructured = 'u'
	shapeMetadata     = 'm'
)

// runtimeCodec is the [informer.Codec] of the objects of a source made by
// [NewFromListerWatcher]. It is safe for concurrent use.
type runtimeCodec struct {
	scheme *runtime.Scheme

	// mu guards the caches below; they hold only kinds the scheme knew.
	mu     sync.RWMutex
	byType map[reflect.Type]schemeKind
	byName map[string]schemeKind
}

// schemeKind is a kind of the scheme and how its objects are kept.
type schemeKind struct {
	gvk   schema.GroupVersionKind
	name  string // "group/version/Kind"
	typ   reflect.Type
	proto bool // the type has the generated marshaller and unmarshaller
}

var _ informer.Codec[Object] = (*runtimeCodec)(nil)

// newRuntimeCodec returns the codec of objects whose types s knows.
func newRuntimeCodec(s *runtime.Scheme) *runtimeCodec {
	return &runtimeCodec{scheme: s, byType: map[reflect.Type]schemeKind{}, byName: map[string]schemeKind{}}
}

// Format implements [informer.Codec]: "k8s/runtime.Object/kind+protobuf|json/"
// and the version of the records.
func (c *runtimeCodec) Format() string {
	return fmt.Sprintf("k8s/runtime.Object/kind+protobuf|json/%d", runtimeSnapshotFormatVersion)
}

// AppendEncode implements [informer.Codec].
//
// Possible errors: obj's type is not in the scheme (nor unstructured or
// partial metadata); an unstructured object without apiVersion or kind
// (which could not be decoded); a nil object; the marshaller's.
func (c *runtimeCodec) AppendEncode(dst []byte, obj Object) ([]byte, error) {
	if v := reflect.ValueOf(obj); !v.IsValid() || v.Kind() == reflect.Pointer && v.IsNil() {
		return dst, errors.New("k8s: snapshot: a nil object")
	}
	var (
		b   []byte
		err error
	)
	switch o := obj.(type) {
	case *unstructured.Unstructured:
		switch {
		case o.GetKind() == "":
			err = errors.New("unstructured object without kind")
		case o.GetAPIVersion() == "":
			err = errors.New("unstructured object without apiVersion")
		default:
			if b, err = o.MarshalJSON(); err == nil {
				return append(append(dst, shapeUnstructured), b...), nil
			}
		}
	case *metav1.PartialObjectMetadata:
		if b, err = json.Marshal(o); err == nil {
			return append(append(dst, shapeMetadata), b...), nil
		}
	case runtime.Unstructured:
		err = fmt.Errorf("%T: of unstructured objects, only *unstructured.Unstructured can be kept", obj)
	default:
		return c.appendTyped(dst, obj)
	}
	return dst, fmt.Errorf("k8s: snapshot of %s/%s: %w", obj.GetNamespace(), obj.GetName(), err)
}

// appendTyped appends the record of an object of a typed kind.
func (c *runtimeCodec) appendTyped(dst []byte, obj Object) ([]byte, error) {
	k, err := c.kindOf(obj)
	if err != nil {
		return dst, fmt.Errorf("k8s: snapshot of %s/%s: %w", obj.GetNamespace(), obj.GetName(), err)
	}
	if !k.proto {
		b, err := json.Marshal(obj)
		if err != nil {
			return dst, fmt.Errorf("k8s: snapshot of %s/%s (%s): %w", obj.GetNamespace(), obj.GetName(), k.name, err)
		}
		dst = appendString(append(dst, shapeJSON), k.name)
		return append(dst, b...), nil
	}
	start := len(dst)
	tm := obj.GetObjectKind().GroupVersionKind()
	apiVersion, kind := tm.ToAPIVersionAndKind()
	dst = appendString(append(dst, shapeProto), k.name)
	dst = appendString(appendString(dst, apiVersion), kind)
	m := obj.(protoMarshaler)
	n := m.Size()
	dst = slices.Grow(dst, n)
	w, err := m.MarshalToSizedBuffer(dst[len(dst) : len(dst)+n])
	if err == nil && w != n {
		err = fmt.Errorf("%d bytes encoded of %d", w, n)
	}
	if err != nil {
		return dst[:start], fmt.Errorf("k8s: snapshot of %s/%s (%s): %w", obj.GetNamespace(), obj.GetName(), k.name, err)
	}
	return dst[:len(dst)+n], nil
}

// Decode implements [informer.Codec].
//
// Possible errors: a record that is not one of the shapes above, or is
// cut short; a kind the scheme does not know (a program built without
// that group), or whose type has no object metadata; the unmarshaller's.
func (c *runtimeCodec) Decode(data []byte) (Object, error) {
	if len(data) == 0 {
		return nil, errors.New("k8s: snapshot object: empty record")
	}
	shape, rest := data[0], data[1:]
	switch shape {
	case shapeUnstructured:
		u := &unstructured.Unstructured{}
		if err := u.UnmarshalJSON(rest); err != nil {
			return nil, fmt.Errorf("k8s: snapshot object (unstructured): %w", err)
		}
		return u, nil
	case shapeMetadata:
		m := &metav1.PartialObjectMetadata{}
		if err := sigsjson.UnmarshalCaseSensitivePreserveInts(rest, m); err != nil {
			return nil, fmt.Errorf("k8s: snapshot object (partial metadata): %w", err)
		}
		return m, nil
	case shapeProto, shapeJSON:
	default:
		return nil, fmt.Errorf("k8s: snapshot object: unknown record shape %q", shape)
	}
	name, rest, ok := cutString(rest)
	if !ok {
		return nil, errors.New("k8s: snapshot object: record cut short in its kind")
	}
	k, err := c.kindNamed(name)
	if err != nil {
		return nil, fmt.Errorf("k8s: snapshot object: %w", err)
	}
	obj, err := c.newObject(k)
	if err != nil {
		return nil, fmt.Errorf("k8s: snapshot object: %w", err)
	}
	if shape == shapeJSON {
		if err := sigsjson.UnmarshalCaseSensitivePreserveInts(rest, obj); err != nil {
			return nil, fmt.Errorf("k8s: snapshot object (%s): %w", k.name, err)
		}
		return obj, nil
	}
	apiVersion, rest, ok := cutString(rest)
	kind, rest, ok2 := cutString(rest)
	if !ok || !ok2 {
		return nil, fmt.Errorf("k8s: snapshot object (%s): record cut short in its type meta", k.name)
	}
	u, isProto := obj.(protoUnmarshaler)
	if !isProto {
		return nil, fmt.Errorf("k8s: snapshot object (%s): kept in protobuf, but %T has no generated Unmarshal", k.name, obj)
	}
	if err := u.Unmarshal(rest); err != nil {
		return nil, fmt.Errorf("k8s: snapshot object (%s): %w", k.name, err)
	}
	if len(apiVersion) > 0 || len(kind) > 0 {
		obj.GetObjectKind().SetGroupVersionKind(schema.FromAPIVersionAndKind(string(apiVersion), string(kind)))
	}
	return obj, nil
}

// kindOf returns the kind of obj's type in the scheme.
func (c *runtimeCodec) kindOf(obj Object) (schemeKind, error) {
	t := reflect.TypeOf(obj)
	c.mu.RLock()
	k, ok := c.byType[t]
	c.mu.RUnlock()
	if ok {
		return k, nil
	}
	gvks, _, err := c.scheme.ObjectKinds(obj)
	if err == nil && len(gvks) == 0 {
		err = errors.New("no kind")
	}
	if err != nil {
		return schemeKind{}, fmt.Errorf("%T is not a type of client-go's scheme (k8s.io/client-go/kubernetes/scheme.Scheme), "+
			"so a snapshot could not tell what to decode it into: add its group to that scheme (AddToScheme) or turn snapshots off: %w",
			obj, err)
	}
	_, isProto := obj.(protoMarshaler)
	_, canDecode := obj.(protoUnmarshaler)
	k = schemeKind{gvk: gvks[0], name: kindName(gvks[0]), typ: t, proto: isProto && canDecode}
	c.mu.Lock()
	c.byType[t] = k
	c.byName[k.name] = k
	c.mu.Unlock()
	return k, nil
}

// kindNamed returns the kind named name ("group/version/Kind"), which the
// scheme must know.
func (c *runtimeCodec) kindNamed(name []byte) (schemeKind, error) {
	c.mu.RLock()
	k, ok := c.byName[string(name)]
	c.mu.RUnlock()
	if ok {
		return k, nil
	}
	parts := strings.Split(string(name), "/")
	if len(parts) != 3 || parts[1] == "" || parts[2] == "" {
		return schemeKind{}, fmt.Errorf("malformed kind %q", name)
	}
	gvk := schema.GroupVersionKind{Group: parts[0], Version: parts[1], Kind: parts[2]}
	obj, err := c.scheme.New(gvk)
	if err != nil {
		return schemeKind{}, fmt.Errorf("kind %s is not in client-go's scheme: %w", name, err)
	}
	if _, ok := obj.(Object); !ok {
		return schemeKind{}, fmt.Errorf("kind %s is %T, which has no object metadata", name, obj)
	}
	_, isProto := obj.(protoMarshaler)
	_, canDecode := obj.(protoUnmarshaler)
	k = schemeKind{gvk: gvk, name: string(name), typ: reflect.TypeOf(obj), proto: isProto && canDecode}
	c.mu.Lock()
	c.byName[k.name] = k
	c.mu.Unlock()
	return k, nil
}

// newObject returns a new, empty object of kind k.
func (c *runtimeCodec) newObject(k schemeKind) (Object, error) {
	if k.typ.Kind() == reflect.Pointer {
		if obj, ok := reflect.New(k.typ.Elem()).Interface().(Object); ok {
			return obj, nil
		}
	}
	obj, err := c.scheme.New(k.gvk)
	if err != nil {
		return nil, fmt.Errorf("kind %s: %w", k.name, err)
	}
	o, ok := obj.(Object)
	if !ok {
		return nil, fmt.Errorf("kind %s is %T, which has no object metadata", k.name, obj)
	}
	return o, nil
}

// kindName is gvk as "group/version/Kind" (the group empty for core).
func kindName(gvk schema.GroupVersionKind) string {
	return gvk.Group + "/" + gvk.Version + "/" + gvk.Kind
}

// appendString appends s with its length before it (uvarint).
func appendString(dst []byte, s string) []byte {
	return append(binary.AppendUvarint(dst, uint64(len(s))), s...)
}

// cutString returns the string appendString put at the start of b, and
// the rest; ok is false if b is cut short.
func cutString(b []byte) (s, rest []byte, ok bool) {
	n, w := binary.Uvarint(b)
	if w <= 0 || uint64(len(b)-w) < n {
		return nil, nil, false
	}
	return b[w : w+int(n)], b[w+int(n):], true
}
