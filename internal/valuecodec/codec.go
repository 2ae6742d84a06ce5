package valuecodec

import (
	"encoding"
	"encoding/binary"
	"errors"
	"math"
	"reflect"
	"unsafe"

	"github.com/ginformer/ginformer/internal/fields"
	"github.com/ginformer/ginformer/internal/slicehdr"
)

// maxDepth bounds the pointers followed from one value: deeper is a cycle.
const maxDepth = 100

// The wire form, per kind: bool one byte; ints zig-zag varints, uints
// varints (of the type's width); floats their IEEE bits, little-endian;
// strings and []byte a varint length and the bytes; a slice or a map 0 when
// nil, else 1 + its length, then its elements (keys and values); an array
// its elements; a struct its fields in order; a pointer 0 when nil, else 1
// and the value; a BinaryMarshaler a varint length and its bytes.

func encode(b []byte, p *plan, ptr unsafe.Pointer, depth int) ([]byte, error) {
	switch p.kind {
	case kBool:
		if *(*bool)(ptr) {
			return append(b, 1), nil
		}
		return append(b, 0), nil
	case kInt:
		return binary.AppendVarint(b, readInt(ptr, p.size)), nil
	case kUint:
		return binary.AppendUvarint(b, readUint(ptr, p.size)), nil
	case kFloat32:
		return binary.LittleEndian.AppendUint32(b, math.Float32bits(*(*float32)(ptr))), nil
	case kFloat64:
		return binary.LittleEndian.AppendUint64(b, math.Float64bits(*(*float64)(ptr))), nil
	case kString:
		s := *(*string)(ptr)
		b = binary.AppendUvarint(b, uint64(len(s)))
		return append(b, s...), nil
	case kBytes:
		s := *(*[]byte)(ptr)
		if s == nil {
			return append(b, 0), nil
		}
		b = binary.AppendUvarint(b, uint64(len(s))+1)
		return append(b, s...), nil
	case kSlice:
		h := (*slicehdr.Header)(ptr)
		if h.Data == nil {
			return append(b, 0), nil
		}
		b = binary.AppendUvarint(b, uint64(h.Len)+1)
		es := p.elem.size
		var err error
		for i := range h.Len {
			if b, err = encode(b, p.elem, unsafe.Add(h.Data, uintptr(i)*es), depth); err != nil {
				return b, err
			}
		}
		return b, nil
	case kArray:
		var err error
		for i := range p.n {
			if b, err = encode(b, p.elem, unsafe.Add(ptr, uintptr(i)*p.elem.size), depth); err != nil {
				return b, err
			}
		}
		return b, nil
	case kStruct:
		var err error
		for _, f := range p.fields {
			if b, err = encode(b, f.p, unsafe.Add(ptr, f.off), depth); err != nil {
				return b, err
			}
		}
		return b, nil
	case kPointer:
		e := *(*unsafe.Pointer)(ptr)
		if e == nil {
			return append(b, 0), nil
		}
		if depth >= maxDepth {
			return b, errors.New("valuecodec: pointers nested too deep (a cycle?)")
		}
		return encode(append(b, 1), p.elem, e, depth+1)
	case kMap:
		if p.typ == mapStringString {
			m := *(*map[string]string)(ptr)
			if m == nil {
				return append(b, 0), nil
			}
			b = binary.AppendUvarint(b, uint64(len(m))+1)
			for k, v := range m {
				b = binary.AppendUvarint(b, uint64(len(k)))
				b = append(b, k...)
				b = binary.AppendUvarint(b, uint64(len(v)))
				b = append(b, v...)
			}
			return b, nil
		}
		m := reflect.NewAt(p.typ, ptr).Elem()
		if m.IsNil() {
			return append(b, 0), nil
		}
		b = binary.AppendUvarint(b, uint64(m.Len())+1)
		k, v := reflect.New(p.key.typ).Elem(), reflect.New(p.elem.typ).Elem()
		var err error
		for it := m.MapRange(); it.Next(); {
			k.SetIterKey(it)
			v.SetIterValue(it)
			if b, err = encode(b, p.key, k.Addr().UnsafePointer(), depth); err != nil {
				return b, err
			}
			if b, err = encode(b, p.elem, v.Addr().UnsafePointer(), depth); err != nil {
				return b, err
			}
		}
		return b, nil
	case kBinary:
		data, err := reflect.NewAt(p.typ, ptr).Interface().(encoding.BinaryMarshaler).MarshalBinary()
		if err != nil {
			return b, err
		}
		b = binary.AppendUvarint(b, uint64(len(data)))
		return append(b, data...), nil
	}
	return b, errors.New("valuecodec: unknown kind")
}

func readInt(ptr unsafe.Pointer, size uintptr) int64 {
	switch size {
	case 1:
		return int64(*(*int8)(ptr))
	case 2:
		return int64(*(*int16)(ptr))
	case 4:
		return int64(*(*int32)(ptr))
	}
	return *(*int64)(ptr)
}

func readUint(ptr unsafe.Pointer, size uintptr) uint64 {
	switch size {
	case 1:
		return uint64(*(*uint8)(ptr))
	case 2:
		return uint64(*(*uint16)(ptr))
	case 4:
		return uint64(*(*uint32)(ptr))
	}
	return *(*uint64)(ptr)
}

// decoder reads one value; the first error stops it. Its Data is a copy of
// the input that the value's strings point into: one allocation for all of
// a value's strings, which live exactly as long as the value (its objects
// are read-only). The few bytes of the encoding that are not strings ride
// along.
type decoder struct {
	fields.Reader
}

// mapStringString is the type of the common map whose decoding skips
// reflection.
var mapStringString = reflect.TypeFor[map[string]string]()

// fail fails the value: what names the part that is not of the value's
// type.
func (d *decoder) fail(what string) {
	d.Fail(errors.New(what))
}

// length reads a length and checks that at least min bytes per element
// remain for it.
func (d *decoder) length(v uint64, min int) int {
	if v > uint64(len(d.Data)) || (min > 0 && v > uint64(len(d.Data)/min)) {
		d.fail("length")
		return 0
	}
	return int(v)
}

// minSize is the fewest bytes an encoded value of p takes: bounds the
// lengths a damaged input may claim before anything is allocated.
func minSize(p *plan) int {
	switch p.kind {
	case kFloat32:
		return 4
	case kFloat64:
		return 8
	case kArray:
		if p.n > 0 && p.elem.kind != kStruct && p.elem.kind != kArray {
			return p.n * minSize(p.elem)
		}
		return 1
	case kStruct:
		if len(p.fields) == 0 {
			return 0
		}
	}
	return 1
}

// string reads a string, pointing into d.Data (see decoder).
func (d *decoder) string() string {
	n := d.length(d.Uvarint(), 0)
	b := d.Take(uint64(n))
	if d.Err != nil || n == 0 {
		return ""
	}
	return unsafe.String(&b[0], n)
}

func (d *decoder) decode(p *plan, ptr unsafe.Pointer, depth int) {
	if d.Err != nil {
		return
	}
	switch p.kind {
	case kBool:
		b := d.Take(1)
		if d.Err == nil {
			if b[0] > 1 {
				d.fail("bool")
				return
			}
			*(*bool)(ptr) = b[0] == 1
		}
	case kInt:
		v := d.Varint()
		switch p.size {
		case 1:
			*(*int8)(ptr) = int8(v)
		case 2:
			*(*int16)(ptr) = int16(v)
		case 4:
			*(*int32)(ptr) = int32(v)
		default:
			*(*int64)(ptr) = v
		}
	case kUint:
		v := d.Uvarint()
		switch p.size {
		case 1:
			*(*uint8)(ptr) = uint8(v)
		case 2:
			*(*uint16)(ptr) = uint16(v)
		case 4:
			*(*uint32)(ptr) = uint32(v)
		default:
			*(*uint64)(ptr) = v
		}
	case kFloat32:
		if b := d.Take(4); d.Err == nil {
			*(*float32)(ptr) = math.Float32frombits(binary.LittleEndian.Uint32(b))
		}
	case kFloat64:
		if b := d.Take(8); d.Err == nil {
			*(*float64)(ptr) = math.Float64frombits(binary.LittleEndian.Uint64(b))
		}
	case kString:
		*(*string)(ptr) = d.string()
	case kBytes:
		v := d.Uvarint()
		if v == 0 || d.Err != nil {
			return
		}
		n := d.length(v-1, 0)
		if b := d.Take(uint64(n)); d.Err == nil {
			s := reflect.MakeSlice(p.typ, n, n)
			copy(unsafe.Slice((*byte)(s.UnsafePointer()), n), b)
			*(*slicehdr.Header)(ptr) = slicehdr.Header{Data: s.UnsafePointer(), Len: n, Cap: n}
		}
	case kSlice:
		v := d.Uvarint()
		if v == 0 || d.Err != nil {
			return
		}
		n := d.length(v-1, minSize(p.elem))
		if d.Err != nil {
			return
		}
		s := reflect.MakeSlice(p.typ, n, n)
		data := s.UnsafePointer()
		for i := range n {
			d.decode(p.elem, unsafe.Add(data, uintptr(i)*p.elem.size), depth)
		}
		if d.Err == nil {
			*(*slicehdr.Header)(ptr) = slicehdr.Header{Data: data, Len: n, Cap: n}
		}
	case kArray:
		for i := range p.n {
			d.decode(p.elem, unsafe.Add(ptr, uintptr(i)*p.elem.size), depth)
		}
	case kStruct:
		for _, f := range p.fields {
			d.decode(f.p, unsafe.Add(ptr, f.off), depth)
		}
	case kPointer:
		b := d.Take(1)
		if d.Err != nil || b[0] == 0 {
			if d.Err == nil && b[0] != 0 {
				d.fail("pointer")
			}
			return
		}
		if b[0] != 1 || depth >= maxDepth {
			d.fail("pointer")
			return
		}
		e := reflect.New(p.elem.typ).UnsafePointer()
		d.decode(p.elem, e, depth+1)
		if d.Err == nil {
			*(*unsafe.Pointer)(ptr) = e
		}
	case kMap:
		v := d.Uvarint()
		if v == 0 || d.Err != nil {
			return
		}
		n := d.length(v-1, minSize(p.key)+minSize(p.elem))
		if d.Err != nil {
			return
		}
		if p.typ == mapStringString {
			m := make(map[string]string, n)
			for range n {
				k := d.string()
				m[k] = d.string()
			}
			if d.Err == nil && len(m) != n {
				d.fail("a map key twice")
			}
			if d.Err == nil {
				*(*map[string]string)(ptr) = m
			}
			return
		}
		m := reflect.MakeMapWithSize(p.typ, n)
		for range n {
			k, e := reflect.New(p.key.typ), reflect.New(p.elem.typ)
			d.decode(p.key, k.UnsafePointer(), depth)
			d.decode(p.elem, e.UnsafePointer(), depth)
			if d.Err != nil {
				return
			}
			m.SetMapIndex(k.Elem(), e.Elem())
		}
		if m.Len() != n {
			d.fail("a map key twice")
			return
		}
		reflect.NewAt(p.typ, ptr).Elem().Set(m)
	case kBinary:
		n := d.length(d.Uvarint(), 0)
		b := d.Take(uint64(n))
		if d.Err != nil {
			return
		}
		u := reflect.NewAt(p.typ, ptr).Interface().(encoding.BinaryUnmarshaler)
		if err := u.UnmarshalBinary(b); err != nil {
			d.Fail(err)
		}
	}
}
