package k8s

import (
	"reflect"
	"strconv"
	"strings"
	"sync"

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
	share bool         // strings: shared through sharedStrings; subtrees: see pbshare.go
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
// managedFields are kept or strings are not shared.
type planKey struct {
	typ         reflect.Type
	keepManaged bool
	share       bool
}

var pbPlans sync.Map // planKey → *pbPlan

// planFor returns the plan of struct type t, building it on first use, or
// nil if t cannot be planned (its own Unmarshal is then used).
func planFor(t reflect.Type, keepManaged, share bool) *pbPlan {
	k := planKey{t, keepManaged, share}
	if p, ok := pbPlans.Load(k); ok {
		return p.(*pbPlan)
	}
	b := &planBuilder{keepManaged: keepManaged, share: share, plans: map[builtKey]*pbPlan{}, building: map[builtKey]bool{}}
	p := b.plan(t, pathRoot)
	if p.custom {
		p = nil
	}
	got, _ := pbPlans.LoadOrStore(k, p)
	return got.(*pbPlan)
}

type planBuilder struct {
	keepManaged, share bool
	plans              map[builtKey]*pbPlan
	building           map[builtKey]bool
}

type builtKey struct {
	t    reflect.Type
	path planPath
}

// planPath says where a struct sits in an object, for the choice of what to
// share: only spec subtrees are shared (status and metadata are mostly
// unique to an object).
type planPath uint8

const (
	pathRoot  planPath = iota
	pathMeta           // the object's own metadata
	pathSpec           // the object's spec and below
	pathOther          // anything else
)

var unmarshalerType = reflect.TypeFor[protoUnmarshaler]()

// plan builds the plan of struct type t.
func (b *planBuilder) plan(t reflect.Type, path planPath) *pbPlan {
	key := builtKey{t, path}
	if b.building[key] {
		// A recursive type: decoded by its own Unmarshal below this point.
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
		num, wire, repeated, ok := parseTag(tag)
		if !ok {
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
		f, ok := b.fieldPlan(sf.Type, wire, repeated, sub)
		if !ok {
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
		if f.kind == pbString || f.kind == pbSliceString || f.kind == pbPtrString || f.kind == pbMapStringString {
			f.share = b.share && !uniqueFields[[2]string{t.Name(), sf.Name}] && !uniqueFields[[2]string{"", sf.Name}]
		}
		if sub == pathSpec && b.share && (f.kind == pbPtrMsg || f.kind == pbSliceMsg || f.kind == pbMap) {
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
func plannable(t reflect.Type) bool {
	if t.Kind() != reflect.Struct {
		return false
	}
	tagged := false
	for i := range t.NumField() {
		sf := t.Field(i)
		if !sf.IsExported() {
			return false
		}
		if tag := sf.Tag.Get("protobuf"); tag != "" && tag != "-" {
			tagged = true
		}
	}
	return tagged
}

// fieldPlan returns the plan of a field of type ft.
func (b *planBuilder) fieldPlan(ft reflect.Type, wire protowire.Type, repeated bool, path planPath) (*pbField, bool) {
	f := &pbField{typ: ft, wire: wire}
	custom := func(t reflect.Type) bool {
		return reflect.PointerTo(t).Implements(unmarshalerType)
	}
	switch ft.Kind() {
	case reflect.String:
		f.kind = pbString
	case reflect.Bool:
		f.kind = pbBool
	case reflect.Int32:
		f.kind = pbInt32
	case reflect.Int64:
		f.kind = pbInt64
	case reflect.Uint32:
		f.kind = pbUint32
	case reflect.Uint64:
		f.kind = pbUint64
	case reflect.Float64:
		f.kind = pbFloat64
	case reflect.Struct:
		f.sub = b.plan(ft, path)
		switch {
		case !f.sub.custom:
			f.kind = pbMsg
		case custom(ft):
			f.kind = pbCustom
		default:
			return nil, false
		}
	case reflect.Pointer:
		f.elem = ft.Elem()
		switch f.elem.Kind() {
		case reflect.String:
			f.kind = pbPtrString
		case reflect.Bool:
			f.kind = pbPtrBool
		case reflect.Int32:
			f.kind = pbPtrInt32
		case reflect.Int64:
			f.kind = pbPtrInt64
		case reflect.Float64:
			f.kind = pbPtrFloat64
		case reflect.Struct:
			f.sub = b.plan(f.elem, path)
			switch {
			case !f.sub.custom:
				f.kind = pbPtrMsg
			case custom(f.elem):
				f.kind = pbPtrCustom
			default:
				return nil, false
			}
		default:
			if !custom(f.elem) {
				return nil, false
			}
			f.kind = pbPtrCustom
		}
	case reflect.Slice:
		f.elem = ft.Elem()
		// Bytes, a message type that is a named slice with its own
		// Unmarshal, or else a repeated field (whatever the tag says:
		// k8s.io/api tags many repeated fields "opt").
		switch {
		case f.elem.Kind() == reflect.Uint8:
			f.kind = pbBytes
		case custom(ft) && !repeated:
			f.kind = pbCustom
		}
		if f.kind != pbSkip {
			break
		}
		switch f.elem.Kind() {
		case reflect.String:
			f.kind = pbSliceString
		case reflect.Int32:
			f.kind = pbSliceInt32
		case reflect.Int64:
			f.kind = pbSliceInt64
		case reflect.Slice:
			if f.elem.Elem().Kind() != reflect.Uint8 {
				return nil, false
			}
			f.kind = pbSliceBytes
		case reflect.Struct:
			f.sub = b.plan(f.elem, path)
			if f.sub.custom && !custom(f.elem) {
				return nil, false
			}
			f.kind = pbSliceMsg
		default:
			return nil, false
		}
	case reflect.Map:
		if ft.Key().Kind() != reflect.String {
			return nil, false
		}
		f.elem = ft.Elem()
		switch f.elem.Kind() {
		case reflect.String:
			f.kind = pbMapStringString
		case reflect.Struct:
			f.sub = b.plan(f.elem, path)
			if f.sub.custom && !custom(f.elem) {
				return nil, false
			}
			f.kind = pbMap
		case reflect.Slice:
			if f.elem.Elem().Kind() != reflect.Uint8 && !custom(f.elem) {
				return nil, false
			}
			f.kind = pbMap
		default:
			if !custom(f.elem) {
				return nil, false
			}
			f.kind = pbMap
		}
	default:
		return nil, false
	}
	return f, true
}

// parseTag reads `protobuf:"bytes,2,opt,name=spec"`: the wire type, the
// number and whether the field is repeated.
func parseTag(tag string) (num protowire.Number, wire protowire.Type, repeated, ok bool) {
	parts := strings.Split(tag, ",")
	if len(parts) < 3 {
		return 0, 0, false, false
	}
	switch parts[0] {
	case "bytes":
		wire = protowire.BytesType
	case "varint":
		wire = protowire.VarintType
	case "fixed64":
		wire = protowire.Fixed64Type
	case "fixed32":
		wire = protowire.Fixed32Type
	default:
		return 0, 0, false, false
	}
	n, err := strconv.Atoi(parts[1])
	if err != nil || n <= 0 {
		return 0, 0, false, false
	}
	return protowire.Number(n), wire, parts[2] == "rep", true
}

// jsonName returns the field's JSON name.
func jsonName(sf reflect.StructField) string {
	name, _, _ := strings.Cut(sf.Tag.Get("json"), ",")
	return name
}
