// Package deepcopy copies any Go value deeply through reflection and
// describes the first difference between two values. It is the cache
// mutation detector's default copy and comparison (informer's
// MutationDetectorOptions) for types without a DeepCopy method: it is for
// tests, being slow, and it reads and copies unexported fields through
// unsafe.
package deepcopy

import (
	"fmt"
	"reflect"
	"strings"
	"unsafe"
)

// Copy returns a deep copy of v: pointers, maps, slices and
// interfaces are followed and copied (exported and unexported fields alike),
// sharing between parts of v and cycles are preserved, nil stays nil. Map
// keys, channels, funcs and unsafe pointers are copied as they are (so a
// pointer map key is shared with v, as reflect.DeepEqual requires).
func Copy[T any](v T) T {
	var out T
	c := copier{seen: map[ptrKey]reflect.Value{}}
	c.copy(reflect.ValueOf(&out).Elem(), reflect.ValueOf(&v).Elem())
	return out
}

// ptrKey names a pointer already copied: its address and type (a struct
// and its first field share an address).
type ptrKey struct {
	p unsafe.Pointer
	t reflect.Type
}

type copier struct {
	seen map[ptrKey]reflect.Value // copied pointers: the copy of each
}

// copy sets dst, an addressable value of src's type, to a deep copy of src.
func (c *copier) copy(dst, src reflect.Value) {
	switch src.Kind() {
	case reflect.Pointer:
		if src.IsNil() {
			return
		}
		k := ptrKey{src.UnsafePointer(), src.Type()}
		if p, ok := c.seen[k]; ok {
			dst.Set(p)
			return
		}
		p := reflect.New(src.Type().Elem())
		c.seen[k] = p
		dst.Set(p)
		c.copy(p.Elem(), src.Elem())
	case reflect.Struct:
		src = addressable(src)
		for i := range src.NumField() {
			c.copy(field(dst, i), field(src, i))
		}
	case reflect.Array:
		for i := range src.Len() {
			c.copy(dst.Index(i), src.Index(i))
		}
	case reflect.Slice:
		if src.IsNil() {
			return
		}
		s := reflect.MakeSlice(src.Type(), src.Len(), src.Len())
		for i := range src.Len() {
			c.copy(s.Index(i), src.Index(i))
		}
		dst.Set(s)
	case reflect.Map:
		if src.IsNil() {
			return
		}
		m := reflect.MakeMapWithSize(src.Type(), src.Len())
		for it := src.MapRange(); it.Next(); {
			val := reflect.New(src.Type().Elem()).Elem()
			c.copy(val, it.Value())
			m.SetMapIndex(it.Key(), val)
		}
		dst.Set(m)
	case reflect.Interface:
		if src.IsNil() {
			return
		}
		e := reflect.New(src.Elem().Type()).Elem()
		c.copy(e, src.Elem())
		dst.Set(e)
	default: // scalars, strings, channels, funcs, unsafe pointers
		dst.Set(src)
	}
}

// field returns field i of v, an addressable struct, in a form that can be
// read and set, exported or not. Every value reached from it is then free of
// reflect's read-only flag, so plain Set and Interface work on them.
func field(v reflect.Value, i int) reflect.Value {
	f := v.Field(i)
	if f.CanSet() {
		return f
	}
	return reflect.NewAt(f.Type(), unsafe.Pointer(f.UnsafeAddr())).Elem()
}

// addressable returns v if it is addressable, else a copy of it that is (a
// struct held by a map or an interface).
func addressable(v reflect.Value) reflect.Value {
	if v.CanAddr() {
		return v
	}
	c := reflect.New(v.Type()).Elem()
	c.Set(v)
	return c
}

// Diff describes the first difference reflect.DeepEqual would find
// between was and now, as a path from the object and both values, such as
// `.Labels["app"]: "web" -> "db"`; "" if there is none. Values print with
// %v, cut at 80 bytes.
func Diff[T any](was, now T) string {
	return diffAt("", reflect.ValueOf(&was).Elem(), reflect.ValueOf(&now).Elem(), map[[2]unsafe.Pointer]bool{})
}

func diffAt(path string, a, b reflect.Value, seen map[[2]unsafe.Pointer]bool) string {
	if !a.IsValid() || !b.IsValid() {
		if a.IsValid() != b.IsValid() {
			return changed(path, a, b)
		}
		return ""
	}
	if a.Type() != b.Type() {
		return fmt.Sprintf("%s: type %v -> %v", orSelf(path), a.Type(), b.Type())
	}
	switch a.Kind() {
	case reflect.Pointer:
		if a.IsNil() || b.IsNil() {
			if a.IsNil() != b.IsNil() {
				return changed(path, a, b)
			}
			return ""
		}
		k := [2]unsafe.Pointer{a.UnsafePointer(), b.UnsafePointer()}
		if k[0] == k[1] || seen[k] {
			return ""
		}
		seen[k] = true
		return diffAt(path, a.Elem(), b.Elem(), seen)
	case reflect.Struct:
		a, b = addressable(a), addressable(b)
		for i := range a.NumField() {
			if d := diffAt(path+"."+a.Type().Field(i).Name, field(a, i), field(b, i), seen); d != "" {
				return d
			}
		}
		return ""
	case reflect.Array, reflect.Slice:
		if a.Kind() == reflect.Slice && a.IsNil() != b.IsNil() {
			return changed(path, a, b)
		}
		if a.Len() != b.Len() {
			return fmt.Sprintf("%s: length %d -> %d", orSelf(path), a.Len(), b.Len())
		}
		for i := range a.Len() {
			if d := diffAt(fmt.Sprintf("%s[%d]", path, i), a.Index(i), b.Index(i), seen); d != "" {
				return d
			}
		}
		return ""
	case reflect.Map:
		if a.IsNil() != b.IsNil() {
			return changed(path, a, b)
		}
		for it := a.MapRange(); it.Next(); {
			p := fmt.Sprintf("%s[%s]", path, short(it.Key()))
			bv := b.MapIndex(it.Key())
			if !bv.IsValid() {
				return p + ": deleted"
			}
			if d := diffAt(p, it.Value(), bv, seen); d != "" {
				return d
			}
		}
		for it := b.MapRange(); it.Next(); {
			if !a.MapIndex(it.Key()).IsValid() {
				return fmt.Sprintf("%s[%s]: added %s", path, short(it.Key()), short(it.Value()))
			}
		}
		return ""
	case reflect.Interface:
		if a.IsNil() || b.IsNil() {
			if a.IsNil() != b.IsNil() {
				return changed(path, a, b)
			}
			return ""
		}
		return diffAt(path, a.Elem(), b.Elem(), seen)
	case reflect.Func:
		if !a.IsNil() || !b.IsNil() {
			return orSelf(path) + ": a non-nil func (never equal under reflect.DeepEqual: set Equal)"
		}
		return ""
	}
	if a.Equal(b) {
		return ""
	}
	return changed(path, a, b)
}

func orSelf(path string) string {
	if path == "" {
		return "the object"
	}
	return path
}

func changed(path string, a, b reflect.Value) string {
	return fmt.Sprintf("%s: %s -> %s", orSelf(path), short(a), short(b))
}

// short formats v with %#v for strings (quoted), %v otherwise, cut at 80
// bytes.
func short(v reflect.Value) string {
	if !v.IsValid() {
		return "<nothing>"
	}
	if (v.Kind() == reflect.Pointer || v.Kind() == reflect.Map || v.Kind() == reflect.Slice || v.Kind() == reflect.Interface) && v.IsNil() {
		return "nil"
	}
	var s string
	if v.Kind() == reflect.String {
		s = fmt.Sprintf("%q", v.String())
	} else {
		s = fmt.Sprintf("%v", v.Interface())
	}
	if len(s) > 80 {
		s = s[:77] + "..."
	}
	return strings.ToValidUTF8(s, "?")
}
