package wire

import (
	"reflect"
	"sync"
	"unsafe"

	"github.com/ginformer/ginformer/internal/slicehdr"
)

// ShareStrings replaces the strings of *o with canonical copies from the
// process's table of shared strings, so that the label keys and values,
// namespaces, node names, owner kinds, image names, environment variables
// and the like that thousands of cached objects repeat are held once. It
// does nothing when o is nil or T is not a struct. *o must not be in use by
// another goroutine.
//
// Strings that are unique to an object by construction (its name, UID and
// resourceVersion, container IDs, pod IPs) and strings longer than 256
// bytes are left as decoded: sharing them saves nothing and would cost a
// table entry each.
//
// The walk over an object's fields is planned once per Go type, from
// reflection, and then runs over memory offsets without reflection except
// for maps whose values are not strings.
func ShareStrings[T any](o *T) {
	if t := reflect.TypeFor[T](); o != nil && t.Kind() == reflect.Struct {
		interners.plan(t).run(unsafe.Pointer(o))
	}
}

// Intern returns the canonical copy of s in the process's table of shared
// strings (making s canonical if there is none): s itself when it is "" or
// longer than 256 bytes.
func Intern(s string) string { return intern(s) }

// interner holds the walks of the types [ShareStrings] has seen.
type interner struct {
	plans sync.Map // reflect.Type → *plan
}

var interners interner

// maxInterned is the longest string shared.
const maxInterned = 256

// plan returns the walk of type t (a struct), building it on first use.
func (in *interner) plan(t reflect.Type) *plan {
	if p, ok := in.plans.Load(t); ok {
		return p.(*plan)
	}
	building := map[reflect.Type]*plan{}
	p := buildPlan(t, building)
	got, _ := in.plans.LoadOrStore(t, p)
	return got.(*plan)
}

// A plan is the walk of one struct type: the steps for the fields that hold
// strings, directly or below.
type plan struct {
	steps []step
}

type stepKind uint8

const (
	stepString      stepKind = iota // a string (or a named string type)
	stepStruct                      // an embedded struct value: sub
	stepPtr                         // a pointer to a struct: sub
	stepSlice                       // a slice of structs: sub, elem size
	stepStringSlice                 // a slice of strings
	stepStringMap                   // a map with string keys and string values
	stepMap                         // another map with string keys: keys only, and values by reflection
	stepStringPtr                   // a *string
)

type step struct {
	kind stepKind
	off  uintptr
	size uintptr      // element size (stepSlice)
	sub  *plan        // struct plan (stepStruct, stepPtr, stepSlice, stepMap values)
	typ  reflect.Type // the field's type (stepMap)
}

// uniqueFields are fields whose strings are unique to an object, by
// struct type name and field name ("" for any struct).
var uniqueFields = map[[2]string]bool{
	{"ObjectMeta", "Name"}:            true,
	{"ObjectMeta", "UID"}:             true,
	{"ObjectMeta", "ResourceVersion"}: true,
	{"ObjectMeta", "SelfLink"}:        true,
	{"", "ContainerID"}:               true,
	{"", "PodIP"}:                     true,
	{"PodIP", "IP"}:                   true,
	{"", "UID"}:                       true,
}

func buildPlan(t reflect.Type, building map[reflect.Type]*plan) *plan {
	if p, ok := building[t]; ok {
		return p
	}
	p := &plan{}
	building[t] = p
	if t.PkgPath() == "time" {
		// time.Time points to a shared *time.Location: never written.
		return p
	}
	for i := range t.NumField() {
		f := t.Field(i)
		if uniqueFields[[2]string{t.Name(), f.Name}] || uniqueFields[[2]string{"", f.Name}] {
			continue
		}
		if s, ok := fieldStep(f.Type, f.Offset, building); ok {
			p.steps = append(p.steps, s)
		}
	}
	return p
}

// fieldStep returns the step for a field of type ft at offset off, if the
// field can hold a string.
func fieldStep(ft reflect.Type, off uintptr, building map[reflect.Type]*plan) (step, bool) {
	switch ft.Kind() {
	case reflect.String:
		return step{kind: stepString, off: off}, true
	case reflect.Struct:
		return step{kind: stepStruct, off: off, sub: buildPlan(ft, building)}, true
	case reflect.Pointer:
		switch ft.Elem().Kind() {
		case reflect.Struct:
			return step{kind: stepPtr, off: off, sub: buildPlan(ft.Elem(), building)}, true
		case reflect.String:
			return step{kind: stepStringPtr, off: off}, true
		}
	case reflect.Slice:
		switch ft.Elem().Kind() {
		case reflect.Struct:
			return step{kind: stepSlice, off: off, size: ft.Elem().Size(), sub: buildPlan(ft.Elem(), building)}, true
		case reflect.String:
			return step{kind: stepStringSlice, off: off}, true
		}
	case reflect.Map:
		if ft.Key().Kind() != reflect.String {
			return step{}, false
		}
		if ft.Elem().Kind() == reflect.String {
			return step{kind: stepStringMap, off: off}, true
		}
		var sub *plan
		if ft.Elem().Kind() == reflect.Struct {
			sub = buildPlan(ft.Elem(), building)
		}
		return step{kind: stepMap, off: off, sub: sub, typ: ft}, true
	}
	return step{}, false
}

// run applies the plan to the struct at base.
func (p *plan) run(base unsafe.Pointer) {
	for i := range p.steps {
		s := &p.steps[i]
		at := unsafe.Add(base, s.off)
		switch s.kind {
		case stepString:
			internAt((*string)(at))
		case stepStringPtr:
			if sp := *(**string)(at); sp != nil {
				internAt(sp)
			}
		case stepStruct:
			s.sub.run(at)
		case stepPtr:
			if ptr := *(*unsafe.Pointer)(at); ptr != nil {
				s.sub.run(ptr)
			}
		case stepSlice:
			hdr := (*slicehdr.Header)(at)
			for j := range hdr.Len {
				s.sub.run(unsafe.Add(hdr.Data, uintptr(j)*s.size))
			}
		case stepStringSlice:
			ss := *(*[]string)(at)
			for j := range ss {
				internAt(&ss[j])
			}
		case stepStringMap:
			// A map keyed by a named string type has the layout of
			// map[string]string. Assigning to an equal key keeps the
			// stored key, so a key is replaced by deleting it first, after
			// the iteration.
			m := *(*map[string]string)(at)
			var stack [16]string
			moved := stack[:0]
			for k, v := range m {
				if ik := intern(k); unsafe.StringData(ik) != unsafe.StringData(k) {
					moved = append(moved, ik)
				}
				if iv := intern(v); unsafe.StringData(iv) != unsafe.StringData(v) {
					m[k] = iv
				}
			}
			for _, k := range moved {
				v := m[k]
				delete(m, k)
				m[k] = v
			}
		case stepMap:
			internMap(reflect.NewAt(s.typ, at).Elem(), s.sub)
		}
	}
}

// internMap shares the keys of a map with string keys and, for struct
// values, the strings in them.
func internMap(m reflect.Value, sub *plan) {
	if m.Len() == 0 {
		return
	}
	// Keys are replaced by deleting and setting them again, after the
	// iteration (assigning to an equal key keeps the stored one).
	keys := m.MapKeys()
	vt := m.Type().Elem()
	v := reflect.New(vt).Elem()
	for _, k := range keys {
		v.Set(m.MapIndex(k))
		if sub != nil {
			sub.run(unsafe.Pointer(v.Addr().Pointer()))
		}
		m.SetMapIndex(k, reflect.Value{})
		kk := reflect.New(k.Type()).Elem()
		kk.Set(k)
		internAt((*string)(unsafe.Pointer(kk.Addr().Pointer())))
		m.SetMapIndex(kk, v)
	}
}

func internAt(p *string) {
	if s := *p; s != "" && len(s) <= maxInterned {
		*p = sharedStrings.get(s)
	}
}

func intern(s string) string {
	if s == "" || len(s) > maxInterned {
		return s
	}
	return sharedStrings.get(s)
}
