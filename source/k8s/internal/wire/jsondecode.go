package wire

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"reflect"
	"strconv"
	"unsafe"

	sigsjson "sigs.k8s.io/json"

	"github.com/ginformer/ginformer/internal/slicehdr"
)

// jsonDecode decodes the JSON value b into the value of type t at at (see
// jsonplan.go), requiring nothing but white space after it.
func jsonDecode(b []byte, at unsafe.Pointer, t *jsType) error {
	d := jsonDec{data: b}
	if err := d.value(t, at, false); err != nil {
		return err
	}
	return d.end()
}

// typeError is the error of a JSON value of the wrong type for t.
func typeError(what string, t reflect.Type) error {
	return fmt.Errorf("json: cannot unmarshal %s into Go value of type %v", what, t)
}

// what names the JSON value that starts with c, for errors.
func what(c byte) string {
	switch c {
	case '{':
		return "object"
	case '[':
		return "array"
	case '"':
		return "string"
	case 't', 'f':
		return "bool"
	case 'n':
		return "null"
	}
	return "number"
}

// value decodes the next value into the value of type t at at; share says
// whether its strings are shared.
func (d *jsonDec) value(t *jsType, at unsafe.Pointer, share bool) error {
	c, err := d.peek()
	if err != nil {
		return err
	}
	if c == 'n' {
		return d.null(t, at)
	}
	switch t.kind {
	case jsString:
		if c != '"' {
			return typeError(what(c), t.typ)
		}
		s, err := d.str()
		if err != nil {
			return err
		}
		*(*string)(at) = mkstr(s, share)
		return nil
	case jsBool:
		switch c {
		case 't':
			*(*bool)(at) = true
			return d.lit("true")
		case 'f':
			*(*bool)(at) = false
			return d.lit("false")
		}
		return typeError(what(c), t.typ)
	case jsInt, jsUint, jsFloat:
		return d.number(t, at, c)
	case jsStruct:
		if c != '{' {
			return typeError(what(c), t.typ)
		}
		return d.object(t, at)
	case jsPtr:
		p := *(*unsafe.Pointer)(at)
		if p == nil {
			p = reflect.New(t.elem.typ).UnsafePointer()
			*(*unsafe.Pointer)(at) = p
		}
		return d.value(t.elem, p, share)
	case jsSlice:
		if c != '[' {
			return typeError(what(c), t.typ)
		}
		return d.slice(t, at, share)
	case jsMap:
		if c != '{' {
			return typeError(what(c), t.typ)
		}
		return d.mapValue(t, at, share)
	case jsAny:
		v, err := d.anyValue()
		if err != nil {
			return err
		}
		*(*any)(at) = v
		return nil
	case jsBytes:
		if c == '"' {
			return d.bytes(t, at)
		}
	case jsUnmarshaler:
		span, err := d.skip()
		if err != nil {
			return err
		}
		return reflect.NewAt(t.typ, at).Interface().(json.Unmarshaler).UnmarshalJSON(span)
	}
	return d.fallback(t, at)
}

// fallback decodes the next value with sigs.k8s.io/json.
func (d *jsonDec) fallback(t *jsType, at unsafe.Pointer) error {
	span, err := d.skip()
	if err != nil {
		return err
	}
	return sigsjson.UnmarshalCaseSensitivePreserveInts(span, reflect.NewAt(t.typ, at).Interface())
}

// null reads null (at d.off) into the value of type t at at: pointers,
// slices, maps and interfaces become nil, an Unmarshaler gets "null", and
// anything else is left as it is.
func (d *jsonDec) null(t *jsType, at unsafe.Pointer) error {
	start := d.off
	if err := d.lit("null"); err != nil {
		return err
	}
	switch t.kind {
	case jsPtr, jsMap:
		*(*unsafe.Pointer)(at) = nil
	case jsSlice, jsBytes:
		*(*slicehdr.Header)(at) = slicehdr.Header{}
	case jsAny:
		*(*any)(at) = nil
	case jsUnmarshaler:
		return reflect.NewAt(t.typ, at).Interface().(json.Unmarshaler).UnmarshalJSON(d.data[start:d.off])
	case jsFallback:
		return sigsjson.UnmarshalCaseSensitivePreserveInts(d.data[start:d.off], reflect.NewAt(t.typ, at).Interface())
	}
	return nil
}

// number reads a number into an integer or float of type t at at.
func (d *jsonDec) number(t *jsType, at unsafe.Pointer, c byte) error {
	if c != '-' && (c < '0' || c > '9') {
		return typeError(what(c), t.typ)
	}
	item, err := d.num()
	if err != nil {
		return err
	}
	switch t.kind {
	case jsInt:
		n, err := strconv.ParseInt(string(item), 10, 64)
		if err != nil || t.bits < 64 && (n < -1<<(t.bits-1) || n >= 1<<(t.bits-1)) {
			return typeError("number "+string(item), t.typ)
		}
		switch t.size {
		case 1:
			*(*int8)(at) = int8(n)
		case 2:
			*(*int16)(at) = int16(n)
		case 4:
			*(*int32)(at) = int32(n)
		default:
			*(*int64)(at) = n
		}
	case jsUint:
		n, err := strconv.ParseUint(string(item), 10, 64)
		if err != nil || t.bits < 64 && n >= 1<<t.bits {
			return typeError("number "+string(item), t.typ)
		}
		switch t.size {
		case 1:
			*(*uint8)(at) = uint8(n)
		case 2:
			*(*uint16)(at) = uint16(n)
		case 4:
			*(*uint32)(at) = uint32(n)
		default:
			*(*uint64)(at) = n
		}
	default:
		f, err := strconv.ParseFloat(string(item), t.bits)
		if err != nil {
			return typeError("number "+string(item), t.typ)
		}
		if t.bits == 32 {
			*(*float32)(at) = float32(f)
		} else {
			*(*float64)(at) = f
		}
	}
	return nil
}

// bytes reads a base64 string into a []byte.
func (d *jsonDec) bytes(t *jsType, at unsafe.Pointer) error {
	s, err := d.str()
	if err != nil {
		return err
	}
	b := make([]byte, base64.StdEncoding.DecodedLen(len(s)))
	n, err := base64.StdEncoding.Decode(b, s)
	if err != nil {
		return fmt.Errorf("json: %v: %w", t.typ, err)
	}
	*(*[]byte)(at) = b[:n]
	return nil
}

// object reads an object (at its '{') into the struct of plan t at at.
func (d *jsonDec) object(t *jsType, at unsafe.Pointer) error {
	if err := d.enter(); err != nil {
		return err
	}
	for first := true; ; first = false {
		key, end, err := d.objKey(first)
		if err != nil {
			return err
		}
		if end {
			return nil
		}
		f := t.fields[string(key)]
		done := false // the value is consumed
		switch {
		case f == nil || f.skip:
			_, err = d.skip()
			done = true
		case f.table != nil:
			done, err = d.shared(f, unsafe.Add(at, f.off))
		}
		if err == nil && !done {
			err = d.value(f.t, unsafe.Add(at, f.off), f.share)
		}
		if err != nil {
			return err
		}
	}
}

// slice reads an array (at its '[') into the slice of plan t at at, as
// encoding/json does: into the elements already there, then growing it;
// an empty array makes an empty slice, not nil.
func (d *jsonDec) slice(t *jsType, at unsafe.Pointer, share bool) error {
	if err := d.enter(); err != nil {
		return err
	}
	h := (*slicehdr.Header)(at)
	i := 0
	for ; ; i++ {
		end, err := d.arrNext(i == 0)
		if err != nil {
			return err
		}
		if end {
			break
		}
		if i >= h.Cap {
			reflect.NewAt(t.typ, at).Elem().Grow(1)
		}
		if i >= h.Len {
			h.Len = i + 1
		}
		if err := d.value(t.elem, unsafe.Add(h.Data, uintptr(i)*t.elem.size), share); err != nil {
			return err
		}
	}
	if i < h.Len {
		h.Len = i
	}
	if i == 0 {
		reflect.NewAt(t.typ, at).Elem().Set(reflect.MakeSlice(t.typ, 0, 0))
	}
	return nil
}

// mapValue reads an object (at its '{') into the map of plan t at at,
// adding to what is there; each value is decoded into a zero element.
func (d *jsonDec) mapValue(t *jsType, at unsafe.Pointer, share bool) error {
	if err := d.enter(); err != nil {
		return err
	}
	mv := reflect.NewAt(t.typ, at).Elem()
	if mv.IsNil() {
		mv.Set(reflect.MakeMap(t.typ))
	}
	var el, kv reflect.Value
	if !t.strMap {
		el = reflect.New(t.elem.typ).Elem()
		kv = reflect.New(t.typ.Key()).Elem()
	}
	for first := true; ; first = false {
		key, end, err := d.objKey(first)
		if err != nil {
			return err
		}
		if end {
			return nil
		}
		if t.strMap {
			if err := d.strEntry(*(*map[string]string)(at), mkstr(key, share), share); err != nil {
				return err
			}
			continue
		}
		switch t.keyKind {
		case jsString:
			kv.SetString(mkstr(key, share))
		case jsInt:
			n, err := strconv.ParseInt(string(key), 10, 64)
			if err != nil || kv.OverflowInt(n) {
				return typeError("number "+string(key), kv.Type())
			}
			kv.SetInt(n)
		default:
			n, err := strconv.ParseUint(string(key), 10, 64)
			if err != nil || kv.OverflowUint(n) {
				return typeError("number "+string(key), kv.Type())
			}
			kv.SetUint(n)
		}
		el.SetZero()
		if err := d.value(t.elem, el.Addr().UnsafePointer(), share); err != nil {
			return err
		}
		mv.SetMapIndex(kv, el)
	}
}

// strEntry reads the value of key k of a map of strings (a map keyed by a
// named string type has the layout of map[string]string): null is "".
func (d *jsonDec) strEntry(m map[string]string, k string, share bool) error {
	c, err := d.peek()
	if err != nil {
		return err
	}
	switch c {
	case '"':
		s, err := d.str()
		if err != nil {
			return err
		}
		m[k] = mkstr(s, share)
		return nil
	case 'n':
		m[k] = ""
		return d.lit("null")
	}
	return typeError(what(c), reflect.TypeFor[string]())
}

// anyValue reads the next value as encoding/json decodes it into an
// interface{}, numbers as int64 when integral (sigs.k8s.io/json's
// PreserveInts): map[string]any, []any, string, int64, float64, bool or
// nil.
func (d *jsonDec) anyValue() (any, error) {
	c, err := d.peek()
	if err != nil {
		return nil, err
	}
	switch c {
	case '{':
		if err := d.enter(); err != nil {
			return nil, err
		}
		m := map[string]any{}
		for first := true; ; first = false {
			key, end, err := d.objKey(first)
			if err != nil {
				return nil, err
			}
			if end {
				return m, nil
			}
			k := string(key)
			if m[k], err = d.anyValue(); err != nil {
				return nil, err
			}
		}
	case '[':
		if err := d.enter(); err != nil {
			return nil, err
		}
		a := []any{}
		for first := true; ; first = false {
			end, err := d.arrNext(first)
			if err != nil {
				return nil, err
			}
			if end {
				return a, nil
			}
			v, err := d.anyValue()
			if err != nil {
				return nil, err
			}
			a = append(a, v)
		}
	case '"':
		s, err := d.str()
		return string(s), err
	case 't':
		return true, d.lit("true")
	case 'f':
		return false, d.lit("false")
	case 'n':
		return nil, d.lit("null")
	}
	item, err := d.num()
	if err != nil {
		return nil, err
	}
	if !containsDot(item) {
		if n, err := strconv.ParseInt(string(item), 10, 64); err == nil {
			return n, nil
		}
	}
	f, err := strconv.ParseFloat(string(item), 64)
	if err != nil {
		return nil, typeError("number "+string(item), reflect.TypeFor[float64]())
	}
	return f, nil
}

func containsDot(b []byte) bool {
	for _, c := range b {
		if c == '.' {
			return true
		}
	}
	return false
}

// mkstr returns the string of b: shared if share (and not too long).
func mkstr(b []byte, share bool) string {
	if share && len(b) <= maxInterned {
		return sharedStrings.getBytes(b)
	}
	return string(b)
}
