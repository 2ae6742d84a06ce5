package wire

import (
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"unsafe"

	"google.golang.org/protobuf/encoding/protowire"
)

// The protobuf decoder of the source (pbdecode.go) decodes the generated
// types of k8s.io/api (and any type tagged the same way) from a plan built
// once per Go type from the types' `protobuf:"..."` struct tags, instead of
// through their generated Unmarshal methods. What that buys:
//
//   - repeated strings are looked up in the shared table straight from the
//     wire bytes, so a string already known costs no allocation at all;
//   - fields the plan leaves out (managedFields by default, and every field
//     a projection type does not declare) are skipped without being decoded;
//   - a subtree of a spec that many objects repeat byte for byte (a probe, a
//     container's environment or resources, tolerations) is decoded once
//     and shared (pbshare.go).
//
// Types the plan cannot describe — those with unexported fields or no
// protobuf tags, such as resource.Quantity and metav1.Time — are decoded by
// their own Unmarshal method.

// Plan decodes the protobuf encoding of struct type E (a type of
// k8s.io/api, or any type tagged the same way) by a plan of its fields,
// built once per type and options. It is immutable and safe for
// concurrent use.
type Plan[E any] struct{ p *pbPlan }

// PlanOptions says how a [Plan] decodes. The zero value keeps nothing
// optional and shares nothing.
type PlanOptions struct {
	// KeepManagedFields keeps metadata.managedFields (skipped unread
	// otherwise).
	KeepManagedFields bool
	// ShareStrings shares repeated strings between the objects decoded, as
	// [ShareStrings] does.
	ShareStrings bool
	// ShareSubtrees shares the spec subtrees that objects repeat byte for
	// byte (see the package doc, and its mutation hazard).
	ShareSubtrees bool
}

// NewPlan returns the plan of E, or nil when E cannot be planned
// ([PlanProblem] says why).
func NewPlan[E any](o PlanOptions) *Plan[E] {
	p := planFor(reflect.TypeFor[E](), o)
	if p == nil {
		return nil
	}
	return &Plan[E]{p: p}
}

// Decode decodes the protobuf message raw (an object's own bytes, without
// envelope) into *into, merging into what is there as the generated
// Unmarshal methods do. raw is not retained.
//
// Possible errors: [ErrMalformed] (wrapped) for bytes that do not parse
// or a field of the wrong wire type; [ErrSharedMerge] (wrapped) for a
// shared field that occurs again, which the generated Unmarshal merges; a
// field's own Unmarshal error.
func (p *Plan[E]) Decode(raw []byte, into *E) error { return pbDecode(raw, unsafe.Pointer(into), p.p) }

// pbKind is how one field is decoded.
type pbKind uint8

const (
	pbSkip            pbKind = iota
	pbString                 // string or a named string type
	pbBytes                  // []byte
	pbBool                   // varint
	pbInt32                  // varint (int32 and named int32 types)
	pbInt64                  // varint
	pbUint32                 // varint
	pbUint64                 // varint
	pbFloat64                // fixed64
	pbPtrString              // *string
	pbPtrBool                // *bool
	pbPtrInt32               // *int32
	pbPtrInt64               // *int64
	pbPtrFloat64             // *float64
	pbMsg                    // a struct value with a plan
	pbPtrMsg                 // a pointer to a struct with a plan
	pbCustom                 // a value whose pointer has Unmarshal
	pbPtrCustom              // a pointer to such a value
	pbSliceString            // repeated string
	pbSliceInt32             // repeated int32 (packed or not)
	pbSliceInt64             // repeated int64 (packed or not)
	pbSliceBytes             // repeated bytes
	pbSliceMsg               // repeated message: a slice of structs (plan or Unmarshal)
	pbMapStringString        // map<string, string> (named string types too)
	pbMap                    // another map with string keys
)

// pbField is the plan of one field.
type pbField struct {
	kind  pbKind
	wire  protowire.Type // expected wire type
	off   uintptr
	typ   reflect.Type // the field's Go type
	elem  reflect.Type // slice element, pointer target, map value
	sub   *pbPlan      // plan of a message (struct, pointer target, slice element, map value)
	share bool         // strings (a map's keys): shared through sharedStrings
	table *shareTable  // subtrees shared byte for byte (nil: not shared)
}

// pbPlan is the plan of one struct type: its fields by number.
type pbPlan struct {
	typ    reflect.Type
	fields []*pbField // by field number; nil: skipped
	// custom: the type is decoded by its own Unmarshal method.
	custom bool
}

func (p *pbPlan) field(n protowire.Number) *pbField {
	if int(n) < len(p.fields) {
		return p.fields[n]
	}
	return nil
}

// planKey selects a plan: the same type is planned differently when
// managedFields are kept or strings or subtrees are not shared.
type planKey struct {
	typ reflect.Type
	o   PlanOptions
}

var pbPlans sync.Map // planKey → *pbPlan

// planFor returns the plan of struct type t, building it on first use, or
// nil if t cannot be planned (its own Unmarshal is then used).
func planFor(t reflect.Type, o PlanOptions) *pbPlan {
	k := planKey{t, o}
	if p, ok := pbPlans.Load(k); ok {
		return p.(*pbPlan)
	}
	b := &planBuilder{keepManaged: o.KeepManagedFields, strings: o.ShareStrings, subtrees: o.ShareSubtrees,
		plans: map[builtKey]*pbPlan{}, building: map[builtKey]bool{}}
	p := b.plan(t, pathRoot)
	if p.custom {
		p = nil
	}
	got, _ := pbPlans.LoadOrStore(k, p)
	return got.(*pbPlan)
}

type planBuilder struct {
	keepManaged       bool
	strings, subtrees bool // what is shared
	plans             map[builtKey]*pbPlan
	building          map[builtKey]bool
	// trail is the path of Go field names from the root to the field
	// being planned; why is the first field the plan could not describe
	// and why (see PlanProblem).
	trail []string
	why   string
}

type builtKey struct {
	t    reflect.Type
	path planPath
}

// planPath says where a struct sits in an object, for the choice of what to
// share: spec subtrees and a few metadata fields are shared (status is
// mostly unique to an object); see sharedSubtree.
type planPath uint8

const (
	pathRoot  planPath = iota
	pathMeta           // the object's own metadata
	pathSpec           // the object's spec and below
	pathOther          // anything else
)

// sharedSubtree reports whether field name of kind k, in a struct at path
// whose field sits at sub, is shared byte for byte (pbshare.go): in the
// spec, every pointer to a message, repeated message and map of messages;
// in the object's own metadata, the labels, annotations and owner
// references, which the pods of one ReplicaSet (the objects of one owner)
// usually repeat.
func sharedSubtree(path, sub planPath, name string, k pbKind) bool {
	switch {
	case sub == pathSpec:
		return k == pbPtrMsg || k == pbSliceMsg || k == pbMap
	case path == pathMeta:
		switch name {
		case "Labels", "Annotations":
			return k == pbMapStringString
		case "OwnerReferences":
			return k == pbSliceMsg
		}
	}
	return false
}

// protoUnmarshaler is what the generated types of k8s.io/api implement.
type protoUnmarshaler interface{ Unmarshal([]byte) error }

var unmarshalerType = reflect.TypeFor[protoUnmarshaler]()

// plan builds the plan of struct type t.
func (b *planBuilder) plan(t reflect.Type, path planPath) *pbPlan {
	key := builtKey{t, path}
	if b.building[key] {
		// A recursive type: decoded by its own Unmarshal below this point
		// (a type without one cannot be planned).
		if !reflect.PointerTo(t).Implements(unmarshalerType) {
			b.fail("", "holds %s again, a recursive type the decoder plans only with an Unmarshal method", t)
		}
		return &pbPlan{typ: t, custom: true}
	}
	if p, ok := b.plans[key]; ok {
		return p
	}
	p := &pbPlan{typ: t}
	if !plannable(t) {
		p.custom = true
		b.plans[key] = p
		return p
	}
	b.building[key] = true
	defer func() { delete(b.building, key); b.plans[key] = p }()
	for i := range t.NumField() {
		sf := t.Field(i)
		tag := sf.Tag.Get("protobuf")
		if tag == "" || tag == "-" {
			continue // not on the wire (TypeMeta of objects, for one)
		}
		num, repeated, ok := parseTag(tag)
		if !ok {
			b.fail(sf.Name, "has a protobuf tag that does not parse (%q)", tag)
			p.custom = true
			return p
		}
		if !b.keepManaged && path == pathMeta && sf.Name == "ManagedFields" {
			continue
		}
		sub := pathOther
		switch {
		case path == pathRoot && jsonName(sf) == "spec", path == pathSpec:
			sub = pathSpec
		case path == pathRoot && jsonName(sf) == "metadata":
			sub = pathMeta
		}
		b.trail = append(b.trail, sf.Name)
		f, ok := b.fieldPlan(sf.Type, repeated, sub)
		b.trail = b.trail[:len(b.trail)-1]
		if !ok {
			b.fail(sf.Name, "has Go type %s, %s", sf.Type, unsupported(sf.Type))
			p.custom = true
			return p
		}
		f.off = sf.Offset
		// The wire type follows from the Go type; some tags in k8s.io/api
		// name another (SecretVolumeSource.DefaultMode says "bytes").
		switch f.kind {
		case pbBool, pbInt32, pbInt64, pbUint32, pbUint64, pbPtrBool, pbPtrInt32, pbPtrInt64, pbSliceInt32, pbSliceInt64:
			f.wire = protowire.VarintType
		case pbFloat64, pbPtrFloat64:
			f.wire = protowire.Fixed64Type
		default:
			f.wire = protowire.BytesType
		}
		switch f.kind {
		case pbString, pbSliceString, pbPtrString, pbMapStringString:
			f.share = b.strings && !uniqueFields[[2]string{t.Name(), sf.Name}] && !uniqueFields[[2]string{"", sf.Name}]
		case pbMap:
			f.share = b.strings // its keys
		}
		if b.subtrees && sharedSubtree(path, sub, sf.Name, f.kind) {
			f.table = newShareTable()
		}
		for int(num) >= len(p.fields) {
			p.fields = append(p.fields, nil)
		}
		p.fields[num] = f
	}
	return p
}

// plannable reports whether struct t is described by its tags: some
// protobuf-tagged field, and no unexported field.
func plannable(t reflect.Type) bool { return unplannable(t) == "" }

// unplannable says why struct t is not described by its tags, "" if it is.
func unplannable(t reflect.Type) string {
	if t.Kind() != reflect.Struct {
		return "not a struct"
	}
	tagged := false
	for i := range t.NumField() {
		sf := t.Field(i)
		if !sf.IsExported() {
			return fmt.Sprintf("has an unexported field (%s)", sf.Name)
		}
		if tag := sf.Tag.Get("protobuf"); tag != "" && tag != "-" {
			tagged = true
		}
	}
	if !tagged {
		return "declares no field with a protobuf tag"
	}
	return ""
}

// PlanProblem says why struct type t has no plan (planFor returns nil):
// the first field the plan cannot describe, by its path of Go field names
// from t, with its type and what to use instead. "" if t has a plan.
func PlanProblem(t reflect.Type, keepManaged bool) string {
	b := &planBuilder{keepManaged: keepManaged, plans: map[builtKey]*pbPlan{}, building: map[builtKey]bool{}}
	if why := unplannable(t); why != "" {
		return fmt.Sprintf("%s %s", t, why)
	}
	if p := b.plan(t, pathRoot); !p.custom {
		return ""
	}
	if b.why == "" {
		return fmt.Sprintf("%s cannot be decoded from protobuf", t)
	}
	return b.why
}

// fail records the first field (the deepest: nested plans fail first)
// that cannot be planned; name is the field's, "" for the current one.
func (b *planBuilder) fail(name, format string, args ...any) {
	if b.why != "" {
		return
	}
	path := b.trail
	if name != "" {
		path = append(slices.Clip(path), name)
	}
	b.why = fmt.Sprintf("field %s %s", strings.Join(path, "."), fmt.Sprintf(format, args...))
}

// unsupported says why field type ft cannot be planned and what to use.
func unsupported(ft reflect.Type) string {
	base := ft
	for base.Kind() == reflect.Pointer || base.Kind() == reflect.Slice || base.Kind() == reflect.Map {
		if base.Kind() == reflect.Map && base.Key().Kind() != reflect.String {
			return "a map whose keys are not strings, which protobuf does not decode: use map[string]V as the type it projects does"
		}
		base = base.Elem()
	}
	switch base.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16:
		return fmt.Sprintf("which the protobuf decoder does not read (%s has no fixed wire width): "+
			"use int32 or int64, as the field's type in k8s.io/api", base)
	case reflect.Uint, reflect.Uint16, reflect.Uintptr:
		return fmt.Sprintf("which the protobuf decoder does not read: use uint32 or uint64 (not %s)", base)
	case reflect.Float32:
		return "which the protobuf decoder does not read: use float64"
	case reflect.Struct:
		if why := unplannable(base); why != "" {
			return fmt.Sprintf("a struct that %s and has no Unmarshal method: tag its fields as k8s.io/api does, or use the k8s.io/api type", why)
		}
	}
	return "which the protobuf decoder does not read: use the field's type in k8s.io/api " +
		"(docs/k8s.md lists the Go types a projection may use)"
}

// fieldPlan returns the plan of a field of type ft; false if the decoder
// cannot read it.
func (b *planBuilder) fieldPlan(ft reflect.Type, repeated bool, path planPath) (*pbField, bool) {
	f := &pbField{typ: ft}
	switch ft.Kind() {
	case reflect.Struct:
		f.sub = b.subPlan(ft, path)
		switch {
		case !f.sub.custom:
			f.kind = pbMsg
		case hasUnmarshal(ft):
			f.kind = pbCustom
		}
	case reflect.Pointer:
		f.elem = ft.Elem()
		f.kind, f.sub = b.pointerKind(f.elem, path)
	case reflect.Slice:
		f.elem = ft.Elem()
		f.kind, f.sub = b.sliceKind(ft, repeated, path)
	case reflect.Map:
		if ft.Key().Kind() == reflect.String {
			f.elem = ft.Elem()
			f.kind, f.sub = b.mapKind(f.elem, path)
		}
	default:
		f.kind = scalarKind(ft.Kind())
	}
	if f.kind == pbSkip { // the steps' answer for a type the decoder cannot read
		return nil, false
	}
	return f, true
}

// scalarKind is the kind of a field of Go kind k read as one scalar
// value; pbSkip if k is not one.
func scalarKind(k reflect.Kind) pbKind {
	switch k {
	case reflect.String:
		return pbString
	case reflect.Bool:
		return pbBool
	case reflect.Int32:
		return pbInt32
	case reflect.Int64:
		return pbInt64
	case reflect.Uint32:
		return pbUint32
	case reflect.Uint64:
		return pbUint64
	case reflect.Float64:
		return pbFloat64
	}
	return pbSkip
}

// hasUnmarshal reports whether a *t decodes itself (see protoUnmarshaler).
func hasUnmarshal(t reflect.Type) bool {
	return reflect.PointerTo(t).Implements(unmarshalerType)
}

// subPlan is plan for a struct met in a field: a struct that fails to
// plan but has an Unmarshal method is fine, so its failure is not recorded
// as the reason the whole cannot be planned.
func (b *planBuilder) subPlan(t reflect.Type, path planPath) *pbPlan {
	why := b.why
	p := b.plan(t, path)
	if p.custom && hasUnmarshal(t) {
		b.why = why
	}
	return p
}

// pointerKind plans a pointer field to elem: its kind, pbSkip if it cannot
// be read, and the plan of a struct elem.
func (b *planBuilder) pointerKind(elem reflect.Type, path planPath) (pbKind, *pbPlan) {
	switch elem.Kind() {
	case reflect.String:
		return pbPtrString, nil
	case reflect.Bool:
		return pbPtrBool, nil
	case reflect.Int32:
		return pbPtrInt32, nil
	case reflect.Int64:
		return pbPtrInt64, nil
	case reflect.Float64:
		return pbPtrFloat64, nil
	case reflect.Struct:
		sub := b.subPlan(elem, path)
		switch {
		case !sub.custom:
			return pbPtrMsg, sub
		case hasUnmarshal(elem):
			return pbPtrCustom, sub
		}
		return pbSkip, nil
	}
	if hasUnmarshal(elem) {
		return pbPtrCustom, nil
	}
	return pbSkip, nil
}

// sliceKind plans a slice field of type ft: its kind, pbSkip if it cannot
// be read, and the plan of a struct element.
func (b *planBuilder) sliceKind(ft reflect.Type, repeated bool, path planPath) (pbKind, *pbPlan) {
	elem := ft.Elem()
	// Bytes, a message type that is a named slice with its own
	// Unmarshal, or else a repeated field (whatever the tag says:
	// k8s.io/api tags many repeated fields "opt").
	switch {
	case elem.Kind() == reflect.Uint8:
		return pbBytes, nil
	case hasUnmarshal(ft) && !repeated:
		return pbCustom, nil
	}
	switch elem.Kind() {
	case reflect.String:
		return pbSliceString, nil
	case reflect.Int32:
		return pbSliceInt32, nil
	case reflect.Int64:
		return pbSliceInt64, nil
	case reflect.Slice:
		if elem.Elem().Kind() != reflect.Uint8 {
			return pbSkip, nil
		}
		return pbSliceBytes, nil
	case reflect.Struct:
		sub := b.subPlan(elem, path)
		if sub.custom && !hasUnmarshal(elem) {
			return pbSkip, nil
		}
		return pbSliceMsg, sub
	}
	return pbSkip, nil
}

// mapKind plans a field that is a map from strings to elem: its kind,
// pbSkip if it cannot be read, and the plan of a struct elem.
func (b *planBuilder) mapKind(elem reflect.Type, path planPath) (pbKind, *pbPlan) {
	switch elem.Kind() {
	case reflect.String:
		return pbMapStringString, nil
	case reflect.Struct:
		sub := b.subPlan(elem, path)
		if sub.custom && !hasUnmarshal(elem) {
			return pbSkip, nil
		}
		return pbMap, sub
	case reflect.Slice:
		if elem.Elem().Kind() != reflect.Uint8 && !hasUnmarshal(elem) {
			return pbSkip, nil
		}
		return pbMap, nil
	}
	if !hasUnmarshal(elem) {
		return pbSkip, nil
	}
	return pbMap, nil
}

// parseTag reads `protobuf:"bytes,2,opt,name=spec"`: the number and
// whether the field is repeated. The tag's wire type is only checked for
// being one protobuf has: the plan takes the wire type from the Go type
// (some tags in k8s.io/api name another).
func parseTag(tag string) (num protowire.Number, repeated, ok bool) {
	parts := strings.Split(tag, ",")
	if len(parts) < 3 {
		return 0, false, false
	}
	switch parts[0] {
	case "bytes", "varint", "fixed64", "fixed32":
	default:
		return 0, false, false
	}
	n, err := strconv.Atoi(parts[1])
	if err != nil || n <= 0 {
		return 0, false, false
	}
	return protowire.Number(n), parts[2] == "rep", true
}

// jsonName returns the field's JSON name.
func jsonName(sf reflect.StructField) string {
	name, _, _ := strings.Cut(sf.Tag.Get("json"), ",")
	return name
}
