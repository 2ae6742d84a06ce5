package wire

import (
	"cmp"
	"reflect"
	"slices"
	"strings"
	"unicode"
)

// jsonField is one field of a struct as encoding/json decodes it: its JSON
// name, where it is and what declares it.
type jsonField struct {
	name   string       // JSON name
	goName string       // Go field name
	owner  reflect.Type // the struct that declares it (an embedded one, for promoted fields)
	tagged bool         // named by its tag
	index  []int
	off    uintptr // from the outer struct (through embedded struct values)
	typ    reflect.Type
}

// jsonFields returns the fields of struct t as encoding/json's typeFields
// finds them (embedded structs' fields promoted, the shallowest field of a
// name kept, a tagged one over untagged ones at the same depth, a name
// that stays ambiguous dropped). ok is false when the plan cannot reach a
// field (through an embedded pointer) or a field has the ",string" option:
// such a struct is decoded by the fallback.
func jsonFields(t reflect.Type) (fields []jsonField, ok bool) {
	type level struct {
		typ   reflect.Type
		index []int
		off   uintptr
	}
	current, next := []level{}, []level{{typ: t}}
	var count, nextCount map[reflect.Type]int
	visited := map[reflect.Type]bool{}
	for len(next) > 0 {
		current, next = next, current[:0]
		count, nextCount = nextCount, map[reflect.Type]int{}
		for _, l := range current {
			if visited[l.typ] {
				continue
			}
			visited[l.typ] = true
			for i := range l.typ.NumField() {
				sf := l.typ.Field(i)
				if sf.Anonymous {
					ft := sf.Type
					if ft.Kind() == reflect.Pointer {
						ft = ft.Elem()
					}
					if !sf.IsExported() && ft.Kind() != reflect.Struct {
						continue
					}
				} else if !sf.IsExported() {
					continue
				}
				tag := sf.Tag.Get("json")
				if tag == "-" {
					continue
				}
				name, opts, _ := strings.Cut(tag, ",")
				if !validTagName(name) {
					name = ""
				}
				index := append(slices.Clip(l.index), i)
				ft := sf.Type
				if ft.Name() == "" && ft.Kind() == reflect.Pointer {
					ft = ft.Elem()
				}
				if name != "" || !sf.Anonymous || ft.Kind() != reflect.Struct {
					if hasOpt(opts, "string") {
						switch ft.Kind() {
						case reflect.Bool, reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
							reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr,
							reflect.Float32, reflect.Float64, reflect.String:
							return nil, false
						}
					}
					f := jsonField{name: name, goName: sf.Name, owner: l.typ, tagged: name != "", index: index,
						off: l.off + sf.Offset, typ: sf.Type}
					if f.name == "" {
						f.name = sf.Name
					}
					fields = append(fields, f)
					if count[l.typ] > 1 {
						// Two embeddings of one struct at a level: its
						// fields annihilate each other.
						fields = append(fields, fields[len(fields)-1])
					}
					continue
				}
				if sf.Type.Kind() == reflect.Pointer {
					return nil, false // an embedded pointer: allocated on the way, left to the fallback
				}
				nextCount[ft]++
				if nextCount[ft] == 1 {
					next = append(next, level{typ: ft, index: index, off: l.off + sf.Offset})
				}
			}
		}
	}
	slices.SortFunc(fields, func(a, b jsonField) int {
		if c := strings.Compare(a.name, b.name); c != 0 {
			return c
		}
		if c := cmp.Compare(len(a.index), len(b.index)); c != 0 {
			return c
		}
		if a.tagged != b.tagged {
			if a.tagged {
				return -1
			}
			return 1
		}
		return slices.Compare(a.index, b.index)
	})
	out := fields[:0]
	for i := 0; i < len(fields); {
		j := i + 1
		for j < len(fields) && fields[j].name == fields[i].name {
			j++
		}
		run := fields[i:j]
		if len(run) == 1 || len(run[0].index) != len(run[1].index) || run[0].tagged != run[1].tagged {
			out = append(out, run[0])
		}
		i = j
	}
	return out, true
}

func hasOpt(opts, want string) bool {
	for opts != "" {
		var o string
		o, opts, _ = strings.Cut(opts, ",")
		if o == want {
			return true
		}
	}
	return false
}

// validTagName is encoding/json's isValidTag.
func validTagName(s string) bool {
	if s == "" {
		return false
	}
	for _, c := range s {
		switch {
		case strings.ContainsRune("!#$%&()*+-./:;<=>?@[]^_{|}~ ", c):
		case !unicode.IsLetter(c) && !unicode.IsDigit(c):
			return false
		}
	}
	return true
}
