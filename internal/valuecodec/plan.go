// Package valuecodec encodes Go values of one type in a compact binary form
// planned once from the type by reflection: the snapshot encoding of the
// sources' values (etcd, NATS KV, the memory source), which loads many times
// faster than the JSON they came in as.
//
// Every field is encoded, exported or not, so a decoded value is deeply
// equal (reflect.DeepEqual) to the encoded one. Types that implement
// encoding.BinaryMarshaler and BinaryUnmarshaler (time.Time, netip.Addr)
// are encoded through them. Interfaces, funcs, channels, unsafe pointers
// and complex numbers are not supported: [For] refuses such a type and the
// caller keeps its own codec. Pointers are followed to a bounded depth
// (a cyclic value fails to encode); values shared by two pointers are
// encoded twice.
//
// The encoding is not self-describing: [Codec.Fingerprint] describes the
// layout, and a reader must refuse bytes written under another fingerprint.
package valuecodec

import (
	"encoding"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"unsafe"

	"github.com/ginformer/ginformer/internal/fields"
)

// kind is what a plan encodes.
type kind uint8

const (
	kBool kind = iota
	kInt
	kUint
	kFloat32
	kFloat64
	kString
	kBytes // []byte (or any slice of a uint8 kind)
	kSlice
	kArray
	kMap
	kStruct
	kPointer
	kBinary // encoding.BinaryMarshaler / BinaryUnmarshaler through a pointer
)

// plan encodes one type.
type plan struct {
	kind   kind
	typ    reflect.Type
	size   uintptr // of the type (ints: its width)
	elem   *plan   // slice, array, pointer, map value
	key    *plan   // map key
	n      int     // array length
	fields []field // struct
}

type field struct {
	name string
	off  uintptr
	p    *plan
}

// ErrUnsupported is returned by [For] for a type the codec cannot encode.
var ErrUnsupported = errors.New("valuecodec: unsupported type")

var (
	binMarshaler   = reflect.TypeFor[encoding.BinaryMarshaler]()
	binUnmarshaler = reflect.TypeFor[encoding.BinaryUnmarshaler]()
)

// planner builds the plans of one type, sharing the plan of a type met
// twice (recursive types included).
type planner struct {
	plans map[reflect.Type]*plan
}

func (pl *planner) plan(t reflect.Type) (*plan, error) {
	if p, ok := pl.plans[t]; ok {
		return p, nil
	}
	p := &plan{typ: t, size: t.Size()}
	pl.plans[t] = p // before the elements: a recursive type refers to itself
	if pt := reflect.PointerTo(t); t.Kind() != reflect.Pointer && pt.Implements(binMarshaler) && pt.Implements(binUnmarshaler) {
		p.kind = kBinary
		return p, nil
	}
	switch t.Kind() {
	case reflect.Bool:
		p.kind = kBool
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		p.kind = kInt
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		p.kind = kUint
	case reflect.Float32:
		p.kind = kFloat32
	case reflect.Float64:
		p.kind = kFloat64
	case reflect.String:
		p.kind = kString
	case reflect.Slice:
		if t.Elem().Kind() == reflect.Uint8 {
			p.kind = kBytes
			break
		}
		p.kind = kSlice
		e, err := pl.plan(t.Elem())
		if err != nil {
			return nil, err
		}
		p.elem = e
	case reflect.Array:
		p.kind, p.n = kArray, t.Len()
		e, err := pl.plan(t.Elem())
		if err != nil {
			return nil, err
		}
		p.elem = e
	case reflect.Map:
		p.kind = kMap
		k, err := pl.plan(t.Key())
		if err != nil {
			return nil, err
		}
		e, err := pl.plan(t.Elem())
		if err != nil {
			return nil, err
		}
		p.key, p.elem = k, e
	case reflect.Struct:
		p.kind = kStruct
		for i := range t.NumField() {
			f := t.Field(i)
			if f.Name == "_" {
				continue // padding: nothing to keep
			}
			fp, err := pl.plan(f.Type)
			if err != nil {
				return nil, fmt.Errorf("field %s: %w", f.Name, err)
			}
			p.fields = append(p.fields, field{name: f.Name, off: f.Offset, p: fp})
		}
	case reflect.Pointer:
		p.kind = kPointer
		e, err := pl.plan(t.Elem())
		if err != nil {
			return nil, err
		}
		p.elem = e
	default:
		return nil, fmt.Errorf("%w: %s (%s)", ErrUnsupported, t, t.Kind())
	}
	return p, nil
}

// fingerprint describes p's layout: names, kinds and fields, recursively.
func fingerprint(p *plan) string {
	var b strings.Builder
	seen := map[*plan]bool{}
	var walk func(p *plan)
	walk = func(p *plan) {
		name := p.typ.String()
		if p.typ.PkgPath() != "" {
			name = p.typ.PkgPath() + "." + p.typ.Name()
		}
		switch p.kind {
		case kStruct, kSlice, kArray, kMap, kPointer:
			if seen[p] { // a type met before (perhaps recursive): its name stands for it
				b.WriteString("@" + name)
				return
			}
			seen[p] = true
		}
		switch p.kind {
		case kStruct:
			b.WriteString(name + "{")
			for _, f := range p.fields {
				b.WriteString(f.name + " ")
				walk(f.p)
				b.WriteString(";")
			}
			b.WriteString("}")
		case kSlice:
			b.WriteString("[]")
			walk(p.elem)
		case kArray:
			fmt.Fprintf(&b, "[%d]", p.n)
			walk(p.elem)
		case kMap:
			b.WriteString("map[")
			walk(p.key)
			b.WriteString("]")
			walk(p.elem)
		case kPointer:
			b.WriteString("*")
			walk(p.elem)
		case kBinary:
			b.WriteString("binary(" + name + ")")
		default:
			b.WriteString(name)
		}
	}
	walk(p)
	return b.String()
}

// Codec encodes and decodes values of T. It is immutable and safe for
// concurrent use.
type Codec[T any] struct {
	p           *plan
	fingerprint string
}

// For plans the codec of T.
//
// Possible errors: [ErrUnsupported] (wrapped) when T holds an interface, a
// func, a channel, an unsafe pointer or a complex number.
func For[T any]() (*Codec[T], error) {
	pl := &planner{plans: map[reflect.Type]*plan{}}
	p, err := pl.plan(reflect.TypeFor[T]())
	if err != nil {
		return nil, err
	}
	return &Codec[T]{p: p, fingerprint: fingerprint(p)}, nil
}

// Fingerprint describes the layout of T the codec writes: the names and
// kinds of T and of every type it holds, with the fields of structs in
// order. Bytes written under one fingerprint can only be read under the
// same.
func (c *Codec[T]) Fingerprint() string { return c.fingerprint }

// Append appends the encoding of *v to dst.
//
// Possible errors: a value nested deeper than 100 pointers (a cycle), or a
// BinaryMarshaler's error.
func (c *Codec[T]) Append(dst []byte, v *T) ([]byte, error) {
	return encode(dst, c.p, unsafe.Pointer(v), 0)
}

// Decode decodes data into *v, which holds the zero T. data is not
// retained.
//
// Possible errors: data is not an encoding of T under this codec's
// fingerprint (truncated, damaged, bytes left over).
func (c *Codec[T]) Decode(data []byte, v *T) error {
	d := decoder{fields.Reader{Data: append([]byte(nil), data...)}}
	d.decode(c.p, unsafe.Pointer(v), 0)
	if d.Err != nil {
		return fmt.Errorf("valuecodec: not a value of this type: %w", d.Err)
	}
	if len(d.Data) != 0 {
		return errCorrupt("bytes after the value")
	}
	return nil
}

func errCorrupt(what string) error {
	return fmt.Errorf("valuecodec: not a value of this type: %s", what)
}
