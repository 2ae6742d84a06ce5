package wire

import (
	"errors"
	"reflect"
	"strings"
	"testing"
	"unsafe"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	sigsjson "sigs.k8s.io/json"
)

// edge is a small type with one field of each shape the edge cases need.
type edge struct {
	S   string            `json:"s"`
	SP  *string           `json:"sp"`
	I   int64             `json:"i"`
	I8  int8              `json:"i8"`
	U   uint32            `json:"u"`
	F   float64           `json:"f"`
	F32 float32           `json:"f32"`
	B   bool              `json:"b"`
	A   any               `json:"a"`
	L   []string          `json:"l"`
	M   map[string]string `json:"m"`
	MI  map[int]int       `json:"mi"`
	P   *edge             `json:"p"`
	E   []edge            `json:"e"`
	Bs  []byte            `json:"bs"`
	Arr [2]int            `json:"arr"`
	edgeInline
	Case string `json:"Case"`
}

type edgeInline struct {
	In string `json:"in"`
}

// agree decodes raw into a zero E by the plan and by sigs.k8s.io/json and
// fails unless both fail or both give the same value; it reports whether
// they decoded.
func agree[E any](t *testing.T, raw []byte) bool {
	t.Helper()
	var want, got E
	werr := sigsjson.UnmarshalCaseSensitivePreserveInts(raw, &want)
	gerr := jsonDecode(raw, unsafe.Pointer(&got), jsonPlanFor(reflect.TypeFor[E](), PlanOptions{KeepManagedFields: true, ShareStrings: true}))
	switch {
	case werr != nil && gerr != nil:
		return false
	case werr != nil:
		t.Fatalf("%q: sigs.k8s.io/json fails (%v), the plan decodes %+v", raw, werr, got)
	case gerr != nil:
		t.Fatalf("%q: the plan fails (%v), sigs.k8s.io/json decodes %+v", raw, gerr, want)
	}
	if !reflect.DeepEqual(want, got) && !equality.Semantic.DeepEqual(want, got) {
		t.Fatalf("%q: (-sigs +plan)\n%s", raw, cmp.Diff(want, got, cmp.Exporter(func(reflect.Type) bool { return true })))
	}
	return true
}

func TestJSONPlanEdgeCases(t *testing.T) {
	ok := []string{
		`{}`, ` { } `, "\t{\n\"s\" :\r\"x\" }\n", `null`,
		// strings: escapes, surrogates (paired, lone, reversed), invalid UTF-8
		`{"s":"a\"b\\c\/d\b\f\n\r\t"}`, `{"s":"\u00e9\u4e2d\ud83d\ude00"}`, `{"s":"\ud83d"}`, `{"s":"\ud83dx"}`,
		`{"s":"\ude00\ud83d"}`, `{"s":"\ud83d\u0041"}`, "{\"s\":\"\xff\xfe a \xed\xa0\x80\"}", `{"s":"\u0000"}`,
		"{\"s\":\"\xef\xbf\xbd\"}", `{"\u0073":"escaped key"}`, `{"S":"case differs"}`, `{"Case":"x","case":"y"}`,
		// numbers
		`{"i":9223372036854775807}`, `{"i":-9223372036854775808}`, `{"i":-0}`, `{"f":-0}`, `{"f":-0.0}`,
		`{"f":1e308}`, `{"f":1E-400}`, `{"f":2.5e+3}`, `{"f32":3.4e38}`, `{"u":4294967295}`, `{"i8":-128}`,
		`{"a":9223372036854775808}`, `{"a":1e2}`, `{"a":-0}`, `{"a":1.0}`, `{"a":12345678901234567890123}`,
		`{"a":{"x":[1,2.5,"s",true,null,{}],"x":[]}}`, `{"a":[]}`, `{"a":{}}`,
		// null everywhere
		`{"s":null,"sp":null,"i":null,"f":null,"b":null,"a":null,"l":null,"m":null,"mi":null,"p":null,"e":null,"bs":null,"arr":null,"in":null}`,
		`{"m":{"k":null}}`, `{"l":[null,"x"]}`, `{"e":[null,{}]}`, `{"p":{"p":null}}`,
		// duplicates: last wins, structs merge, slices reuse, maps add
		`{"s":"a","s":"b"}`, `{"p":{"s":"a"},"p":{"i":1}}`, `{"e":[{"s":"a","i":1}],"e":[{"s":"b"}]}`,
		`{"e":[{"s":"a"},{"s":"b"}],"e":[{"i":2}]}`, `{"m":{"a":"1"},"m":{"b":"2"}}`, `{"l":["a","b"],"l":[]}`,
		`{"l":["a","b"],"l":null}`, `{"p":{"s":"a"},"p":null,"p":{"i":3}}`,
		// unknown fields, of every kind, and ignored ones
		`{"zz":{"a":[1,{"b":null}]},"yy":"x","xx":1.5e3,"ww":[],"vv":true,"Ignored":1}`,
		// maps with integer keys, bytes, arrays (fallback), inline
		`{"mi":{"1":2,"-3":4}}`, `{"bs":"aGVsbG8="}`, `{"bs":""}`, `{"bs":[1,2,3]}`, `{"arr":[1,2,3]}`, `{"arr":[7]}`,
		`{"in":"inline"}`,
		// white space everywhere
		" \r\n\t{ \"l\" : [ \"a\" , \"b\" ] , \"m\" : { \"k\" : \"v\" } } \n",
	}
	for _, s := range ok {
		if !agree[edge](t, []byte(s)) {
			t.Errorf("%q: neither decodes", s)
		}
	}
	bad := []string{
		``, ` `, `{`, `}`, `{"s":}`, `{"s" "x"}`, `{"s":"x",}`, `{,}`, `{"s":"x"} x`, `{"s":"x"}{}`, `[`,
		`{"s":"\x"}`, `{"s":"\u12"}`, `{"s":"\u12G4"}`, "{\"s\":\"a\nb\"}", `{"s":"abc`, `{'s':1}`,
		`{"i":01}`, `{"i":1.}`, `{"i":.5}`, `{"i":1e}`, `{"i":-}`, `{"i":+1}`, `{"i":0x10}`, `{"i":NaN}`,
		`{"b":tru}`, `{"b":nul}`, `{"s":nulls}`, `{"l":[1,]}`, `{"l":[,1]}`, `{"l":["a" "b"]}`,
		// type mismatches
		`{"s":1}`, `{"i":"1"}`, `{"i":1.5}`, `{"i":1e2}`, `{"i":9223372036854775808}`, `{"i8":128}`, `{"u":-1}`,
		`{"f32":3.5e38}`, `{"f":1e400}`, `{"b":"true"}`, `{"l":"a"}`, `{"l":{}}`, `{"m":[]}`, `{"m":{"k":1}}`,
		`{"mi":{"x":1}}`, `{"p":"x"}`, `{"bs":"!!"}`, `{"e":[1]}`, `[]`, `"x"`, `1`, `{"a":1e400}`,
		strings.Repeat("[", maxJSONDepth+1) + strings.Repeat("]", maxJSONDepth+1),
		`{"a":` + strings.Repeat("[", maxJSONDepth+1) + strings.Repeat("]", maxJSONDepth+1) + `}`,
	}
	for _, s := range bad {
		if agree[edge](t, []byte(s)) {
			t.Errorf("%q: decodes", s)
		}
	}
	// Deep but within the limit.
	deep := `{"a":` + strings.Repeat("[", maxJSONDepth-1) + strings.Repeat("]", maxJSONDepth-1) + `}`
	if !agree[edge](t, []byte(deep)) {
		t.Error("nesting at the limit does not decode")
	}
	// An object's own types: Time, Quantity, IntOrString, given odd input.
	for _, s := range []string{
		`{"metadata":{"creationTimestamp":null,"deletionTimestamp":null}}`,
		`{"metadata":{"creationTimestamp":"2024-01-02T03:04:05Z"}}`, `{"metadata":{"creationTimestamp":"bad"}}`,
		`{"spec":{"containers":[{"ports":[{"containerPort":80}],"resources":{"limits":{"cpu":"1.5","memory":null}}}]}}`,
		`{"spec":{"containers":[{"resources":{"limits":{"cpu":"x"}}}]}}`,
		`{"spec":{"containers":[{"livenessProbe":{"httpGet":{"port":"http"}}},{"livenessProbe":{"httpGet":{"port":8080}}}]}}`,
		`{"metadata":{"managedFields":[{"manager":"m","fieldsV1":{"f:a":{}}}]}}`,
	} {
		agree[corev1.Pod](t, []byte(s))
	}
}

// TestJSONPlanMalformed: input that is not JSON fails with ErrMalformed.
func TestJSONPlanMalformed(t *testing.T) {
	p := NewJSONPlan[corev1.Pod](PlanOptions{})
	for _, s := range []string{`{"metadata":`, `{"metadata":{"name":"a"}`, `{"x":[1,}`, `{"metadata":{"name":"\q"}}`} {
		var pod corev1.Pod
		if err := p.Decode([]byte(s), &pod); !errors.Is(err, ErrMalformed) {
			t.Errorf("%q: %v, want ErrMalformed", s, err)
		}
	}
}

// TestJSONIdentity reads what the known objects need, and refuses what it
// cannot read exactly.
func TestJSONIdentity(t *testing.T) {
	for _, c := range []struct {
		in, key, version string
	}{
		{`{"metadata":{"name":"a","namespace":"ns","resourceVersion":"7"}}`, "ns/a", "7"},
		{` {"kind":"Pod","metadata":{"resourceVersion":"7","labels":{"name":"x"},"name":"a"},"spec":{}} `, "/a", "7"},
		{`{"metadata":{"name":"a","resourceVersion":"7"},"metadata":{"resourceVersion":"8"}}`, "/a", "8"},
		{`{"metadata":{"name":"a"}}`, "", ""},
		{`{"metadata":{"name":"a\u0041","resourceVersion":"7"}}`, "", ""},
		{`{"metadata":{"name":"a","resourceVersion":7}}`, "", ""},
		{`{"metadata":{"name":"a","resourceVersion":"7"},"spec":{`, "", ""},
		{`[]`, "", ""},
	} {
		key, version, ok := JSONIdentity([]byte(c.in), nil)
		if string(key) != c.key || string(version) != c.version || ok != (c.key != "") {
			t.Errorf("%s: %q %q %v, want %q %q", c.in, key, version, ok, c.key, c.version)
		}
	}
}
