package wire

import (
	"fmt"
	"math"
	"reflect"
	"unsafe"

	"google.golang.org/protobuf/encoding/protowire"

	"github.com/ginformer/ginformer/internal/slicehdr"
)

// pbDecode decodes the protobuf message b into the struct at base, as plan
// p describes it (see pbplan.go). Like the generated Unmarshal methods it
// merges into what is there (a message repeated on the wire merges, a
// repeated field appends) and skips fields it does not know.
func pbDecode(b []byte, base unsafe.Pointer, p *pbPlan) error {
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return pbErr(n)
		}
		f := p.field(num)
		if f == nil {
			m := protowire.ConsumeFieldValue(num, typ, b[n:])
			if m < 0 {
				return pbErr(m)
			}
			b = b[n+m:]
			continue
		}
		at := unsafe.Add(base, f.off)
		if f.kind == pbSliceMsg && typ == protowire.BytesType {
			if h := (*slicehdr.Header)(at); h.Len == h.Cap {
				// The entries of a repeated field come one after another:
				// the run that starts here says how many there are.
				reflect.NewAt(f.typ, at).Elem().Grow(countRun(b, num))
			}
		}
		if f.table != nil && typ == protowire.BytesType {
			if rest, ok, err := f.shared(b, num, at); err != nil {
				return err
			} else if ok {
				b = rest
				continue
			}
		}
		b = b[n:]
		var err error
		if b, err = f.decode(b, typ, at); err != nil {
			return fmt.Errorf("%v field %d: %w", p.typ, num, err)
		}
	}
	return nil
}

// decode decodes one occurrence of field f (its tag consumed, of wire type
// typ) into at, returning the rest of the message.
func (f *pbField) decode(b []byte, typ protowire.Type, at unsafe.Pointer) ([]byte, error) {
	// Repeated scalars may come packed (as bytes) whatever the tag says.
	packed := typ == protowire.BytesType && (f.kind == pbSliceInt32 || f.kind == pbSliceInt64)
	if typ != f.wire && !packed {
		return nil, fmt.Errorf("%w: wire type %d, want %d", ErrMalformed, typ, f.wire)
	}
	switch typ {
	case protowire.VarintType:
		v, n := protowire.ConsumeVarint(b)
		if n < 0 {
			return nil, pbErr(n)
		}
		f.setVarint(at, v)
		return b[n:], nil
	case protowire.Fixed64Type:
		v, n := protowire.ConsumeFixed64(b)
		if n < 0 {
			return nil, pbErr(n)
		}
		switch f.kind {
		case pbFloat64:
			*(*float64)(at) = math.Float64frombits(v)
		case pbPtrFloat64:
			x := math.Float64frombits(v)
			*(**float64)(at) = &x
		}
		return b[n:], nil
	case protowire.Fixed32Type:
		_, n := protowire.ConsumeFixed32(b)
		if n < 0 {
			return nil, pbErr(n)
		}
		return b[n:], nil
	case protowire.BytesType:
		v, n := protowire.ConsumeBytes(b)
		if n < 0 {
			return nil, pbErr(n)
		}
		if packed {
			for len(v) > 0 {
				x, m := protowire.ConsumeVarint(v)
				if m < 0 {
					return nil, pbErr(m)
				}
				f.setVarint(at, x)
				v = v[m:]
			}
			return b[n:], nil
		}
		return b[n:], f.decodeBytes(v, at)
	}
	return nil, fmt.Errorf("%w: wire type %d", ErrMalformed, typ)
}

// setVarint stores a varint into a scalar field, or appends it to a
// repeated one.
func (f *pbField) setVarint(at unsafe.Pointer, v uint64) {
	switch f.kind {
	case pbBool:
		*(*bool)(at) = v != 0
	case pbInt32:
		*(*int32)(at) = int32(v)
	case pbInt64:
		*(*int64)(at) = int64(v)
	case pbUint32:
		*(*uint32)(at) = uint32(v)
	case pbUint64:
		*(*uint64)(at) = v
	case pbPtrBool:
		x := v != 0
		*(**bool)(at) = &x
	case pbPtrInt32:
		x := int32(v)
		*(**int32)(at) = &x
	case pbPtrInt64:
		x := int64(v)
		*(**int64)(at) = &x
	case pbSliceInt32:
		s := (*[]int32)(at)
		*s = append(*s, int32(v))
	case pbSliceInt64:
		s := (*[]int64)(at)
		*s = append(*s, int64(v))
	}
}

// decodeBytes decodes a length-delimited value v into at.
func (f *pbField) decodeBytes(v []byte, at unsafe.Pointer) error {
	switch f.kind {
	case pbString:
		*(*string)(at) = f.str(v)
	case pbPtrString:
		s := f.str(v)
		*(**string)(at) = &s
	case pbBytes:
		*(*[]byte)(at) = append((*(*[]byte)(at))[:0], v...)
	case pbSliceString:
		s := (*[]string)(at)
		*s = append(*s, f.str(v))
	case pbSliceBytes:
		s := (*[][]byte)(at)
		*s = append(*s, append([]byte{}, v...))
	case pbMsg:
		return pbDecode(v, at, f.sub)
	case pbPtrMsg:
		ptr := (*unsafe.Pointer)(at)
		if *ptr == nil {
			*ptr = reflect.New(f.elem).UnsafePointer()
		}
		return pbDecode(v, *ptr, f.sub)
	case pbCustom:
		return unmarshalAt(f.typ, at, v)
	case pbPtrCustom:
		ptr := (*unsafe.Pointer)(at)
		if *ptr == nil {
			*ptr = reflect.New(f.elem).UnsafePointer()
		}
		return unmarshalAt(f.elem, *ptr, v)
	case pbSliceMsg:
		sv := reflect.NewAt(f.typ, at).Elem()
		n := sv.Len()
		if n == sv.Cap() {
			sv.Grow(max(1, n))
		}
		sv.SetLen(n + 1)
		el := sv.Index(n).Addr().UnsafePointer()
		if f.sub.custom {
			return unmarshalAt(f.elem, el, v)
		}
		return pbDecode(v, el, f.sub)
	case pbMapStringString:
		k, val, err := f.mapEntry(v)
		if err != nil {
			return err
		}
		m := (*map[string]string)(at)
		if *m == nil {
			*m = make(map[string]string)
		}
		(*m)[f.str(k)] = f.str(val)
	case pbMap:
		k, val, err := f.mapEntry(v)
		if err != nil {
			return err
		}
		mv := reflect.NewAt(f.typ, at).Elem()
		if mv.IsNil() {
			mv.Set(reflect.MakeMap(f.typ))
		}
		key := reflect.New(f.typ.Key()).Elem()
		key.SetString(f.str(k))
		el := reflect.New(f.elem)
		switch {
		case f.sub != nil && !f.sub.custom:
			err = pbDecode(val, el.UnsafePointer(), f.sub)
		case f.elem.Kind() == reflect.Slice && f.elem.Elem().Kind() == reflect.Uint8 && !reflect.PointerTo(f.elem).Implements(unmarshalerType):
			el.Elem().SetBytes(append([]byte{}, val...))
		default:
			err = unmarshalAt(f.elem, el.UnsafePointer(), val)
		}
		if err != nil {
			return err
		}
		mv.SetMapIndex(key, el.Elem())
	default:
		return fmt.Errorf("%w: bytes for a field of kind %d", ErrMalformed, f.kind)
	}
	return nil
}

// mapEntry splits a map entry message into its key (field 1) and value
// (field 2) bytes.
func (f *pbField) mapEntry(v []byte) (key, val []byte, err error) {
	for len(v) > 0 {
		num, typ, b, size, err := consumeField(v)
		if err != nil {
			return nil, nil, err
		}
		if typ == protowire.BytesType {
			switch num {
			case 1:
				key = b
			case 2:
				val = b
			}
		}
		v = v[size:]
	}
	return key, val, nil
}

// str returns the string of v: shared if the field shares strings.
func (f *pbField) str(v []byte) string {
	if f.share && len(v) <= maxInterned {
		return sharedStrings.getBytes(v)
	}
	return string(v)
}

// unmarshalAt decodes v with the Unmarshal method of the *t at ptr.
func unmarshalAt(t reflect.Type, ptr unsafe.Pointer, v []byte) error {
	u, ok := reflect.NewAt(t, ptr).Interface().(protoUnmarshaler)
	if !ok {
		return fmt.Errorf("%v has no Unmarshal method", t)
	}
	return u.Unmarshal(v)
}

// countRun counts the consecutive occurrences of field num from the start
// of b (at a tag of num).
func countRun(b []byte, num protowire.Number) int {
	k := 0
	for len(b) > 0 {
		n, _, _, size, err := consumeField(b)
		if err != nil || n != num {
			break
		}
		k++
		b = b[size:]
	}
	return k
}

func pbErr(n int) error {
	return fmt.Errorf("%w: %w", ErrMalformed, protowire.ParseError(n))
}
