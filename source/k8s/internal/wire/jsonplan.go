package wire

import (
	"encoding"
	"encoding/json"
	"reflect"
	"sync"
	"unsafe"
)

// The JSON decoder of the source (jsondecode.go) decodes custom resources,
// and any object the server sends as JSON, from a plan built once per Go
// type by reflection, with the semantics of sigs.k8s.io/json's
// UnmarshalCaseSensitivePreserveInts (client-go's JSON decoding):
// case-sensitive field names, encoding/json's rules for embedded structs
// and conflicting names, numbers in interface{} values as int64 when
// integral, null setting pointers, slices, maps and interfaces to nil and
// leaving anything else, unknown fields skipped, a repeated key's last
// value kept (merged into a struct, as encoding/json merges). What that
// buys over the reflective decoder:
//
//   - strings are looked up in the shared table straight from the input
//     (strings.go), so a string already known costs no allocation at all,
//     and no walk over the decoded object is needed to share them;
//   - metadata.managedFields is skipped unread unless kept;
//   - a spec subtree that objects repeat byte for byte (a probe, a
//     container's env or resources) is decoded once and shared, as the
//     protobuf plan shares it (jsonshare.go);
//   - field lookup, pointers, slices and maps of strings run on offsets.
//
// A type implementing json.Unmarshaler (metav1.Time, resource.Quantity,
// intstr.IntOrString, runtime.RawExtension, apiextensionsv1.JSON) is
// handed its value's exact bytes, as encoding/json does. What the plan does
// not describe — encoding.TextUnmarshaler types, map keys that are neither
// strings nor integers, arrays, ",string" fields, embedded pointers,
// json.Number, non-empty interfaces — is decoded by sigs.k8s.io/json
// itself, value by value (jsFallback).

// JSONPlan decodes the JSON encoding of struct type E by a plan of its
// fields, built once per type and options. It is immutable and safe for
// concurrent use.
type JSONPlan[E any] struct{ t *jsType }

// NewJSONPlan returns the JSON plan of E with the options of o (spec
// subtrees are shared by their JSON bytes: jsonshare.go), or nil when E is
// not a struct the plan describes, which sigs.k8s.io/json then decodes
// whole.
func NewJSONPlan[E any](o PlanOptions) *JSONPlan[E] {
	t := jsonPlanFor(reflect.TypeFor[E](), o)
	if t.kind != jsStruct {
		return nil
	}
	return &JSONPlan[E]{t: t}
}

// Decode decodes the JSON value raw into *into, merging into what is
// there as encoding/json does. raw is not retained; nothing decoded aliases
// it.
//
// Possible errors: [ErrMalformed] (wrapped) for bytes that are not JSON;
// [ErrSharedMerge] for a shared subtree whose key occurs twice (which
// encoding/json merges: decode such an object with sigs.k8s.io/json); an
// error of a value of the wrong type for its field (a string for an int);
// a field's own UnmarshalJSON error. After an error *into holds
// whatever was decoded before it.
func (p *JSONPlan[E]) Decode(raw []byte, into *E) error {
	return jsonDecode(raw, unsafe.Pointer(into), p.t)
}

// jsKind is how a value of one Go type is decoded.
type jsKind uint8

const (
	jsFallback    jsKind = iota // by sigs.k8s.io/json
	jsString                    // string or a named string type
	jsBool                      // bool
	jsInt                       // signed integers (bits)
	jsUint                      // unsigned integers (bits)
	jsFloat                     // float32, float64 (bits)
	jsBytes                     // []byte, from base64
	jsStruct                    // struct: fields
	jsPtr                       // pointer to elem
	jsSlice                     // slice of elem
	jsMap                       // map with string or integer keys (keyKind), values elem
	jsAny                       // interface{}
	jsUnmarshaler               // *typ implements json.Unmarshaler
)

// jsType is the plan of one Go type (at one place: see planPath).
type jsType struct {
	kind    jsKind
	typ     reflect.Type
	size    uintptr // of the type (slice elements)
	bits    int     // jsInt, jsUint, jsFloat: width
	elem    *jsType // pointer target, slice element, map value
	keyKind jsKind  // jsMap: jsString, jsInt or jsUint
	// strMap: a map whose keys and values are of kind string (and keys not
	// TextUnmarshalers), read as a map[string]string.
	strMap bool
	fields map[string]*jsField // jsStruct: by JSON name
}

// jsField is a field of a struct plan.
type jsField struct {
	off   uintptr
	t     *jsType
	share bool // its strings (and those below it) go through sharedStrings
	skip  bool // read and dropped (managedFields)
	// table shares the field's values by their bytes (nil: not shared;
	// jsonshare.go).
	table *shareTable
}

var (
	jsonUnmarshalerType = reflect.TypeFor[json.Unmarshaler]()
	textUnmarshalerType = reflect.TypeFor[encoding.TextUnmarshaler]()
	jsonNumberType      = reflect.TypeFor[json.Number]()
)

var jsonPlans sync.Map // planKey → *jsType

// jsonPlanFor returns the plan of type t, building it on first use.
func jsonPlanFor(t reflect.Type, o PlanOptions) *jsType {
	k := planKey{t, o}
	if p, ok := jsonPlans.Load(k); ok {
		return p.(*jsType)
	}
	b := &jsBuilder{o: o, types: map[builtKey]*jsType{}}
	p := b.typ(t, pathRoot)
	got, _ := jsonPlans.LoadOrStore(k, p)
	return got.(*jsType)
}

type jsBuilder struct {
	o     PlanOptions
	types map[builtKey]*jsType // recursive types point back to their plan
}

// typ returns the plan of a value of type t at path.
func (b *jsBuilder) typ(t reflect.Type, path planPath) *jsType {
	k := builtKey{t, path}
	if jt := b.types[k]; jt != nil {
		return jt
	}
	jt := &jsType{typ: t, size: t.Size()}
	b.types[k] = jt
	pt := reflect.PointerTo(t)
	switch {
	case t.Kind() != reflect.Pointer && pt.Implements(jsonUnmarshalerType):
		jt.kind = jsUnmarshaler
		return jt
	case t == jsonNumberType, pt.Implements(textUnmarshalerType):
		return jt // jsFallback
	}
	switch t.Kind() {
	case reflect.String:
		jt.kind = jsString
	case reflect.Bool:
		jt.kind = jsBool
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		jt.kind, jt.bits = jsInt, t.Bits()
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		jt.kind, jt.bits = jsUint, t.Bits()
	case reflect.Float32, reflect.Float64:
		jt.kind, jt.bits = jsFloat, t.Bits()
	case reflect.Interface:
		if t.NumMethod() == 0 {
			jt.kind = jsAny
		}
	case reflect.Pointer:
		if e := t.Elem(); e.Kind() != reflect.Pointer && e.Kind() != reflect.Interface {
			jt.kind, jt.elem = jsPtr, b.typ(e, path)
		}
	case reflect.Slice:
		if t.Elem().Kind() == reflect.Uint8 {
			jt.kind = jsBytes
		} else {
			jt.kind, jt.elem = jsSlice, b.typ(t.Elem(), path)
		}
	case reflect.Map:
		b.mapPlan(jt, path)
	case reflect.Struct:
		b.structPlan(jt, path)
	}
	return jt
}

// mapPlan plans map type jt.typ, as encoding/json reads maps: keys that
// are TextUnmarshalers, strings or integers (the first are left to the
// fallback).
func (b *jsBuilder) mapPlan(jt *jsType, path planPath) {
	kt := jt.typ.Key()
	if reflect.PointerTo(kt).Implements(textUnmarshalerType) {
		return
	}
	switch kt.Kind() {
	case reflect.String:
		jt.keyKind = jsString
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		jt.keyKind = jsInt
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		jt.keyKind = jsUint
	default:
		return
	}
	jt.kind, jt.elem = jsMap, b.typ(jt.typ.Elem(), path)
	jt.strMap = jt.keyKind == jsString && jt.elem.kind == jsString
}

// structPlan plans struct type jt.typ by its fields as encoding/json sees
// them (jsonfields.go); a struct whose fields the plan cannot reach is left
// to the fallback.
func (b *jsBuilder) structPlan(jt *jsType, path planPath) {
	fields, ok := jsonFields(jt.typ)
	if !ok {
		return
	}
	jt.kind = jsStruct
	jt.fields = make(map[string]*jsField, len(fields))
	for _, f := range fields {
		sub := pathOther
		switch {
		case path == pathRoot && f.name == "spec", path == pathSpec:
			sub = pathSpec
		case path == pathRoot && f.name == "metadata":
			sub = pathMeta
		}
		jf := &jsField{off: f.off, t: b.typ(f.typ, sub)}
		jf.skip = !b.o.KeepManagedFields && path == pathMeta && f.name == "managedFields"
		jf.share = b.o.ShareStrings && !uniqueFields[[2]string{f.owner.Name(), f.goName}] && !uniqueFields[[2]string{"", f.goName}]
		if b.o.ShareSubtrees && (sub == pathSpec && sharesSubtree(jf.t) || path == pathMeta && sharesMetadata(f.goName, jf.t)) {
			jf.table = newShareTable()
		}
		jt.fields[f.name] = jf
	}
}
