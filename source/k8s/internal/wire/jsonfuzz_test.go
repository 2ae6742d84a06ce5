package wire

import (
	"encoding/json"
	"reflect"
	"testing"
	"unsafe"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	sigsjson "sigs.k8s.io/json"
)

// jsonFuzzTypes are the types FuzzJSONDecode decodes into, chosen by the
// input's first argument.
var jsonFuzzTypes = []func(t *testing.T, raw []byte){
	fuzzJSON[edge],
	fuzzJSON[Widget],
	fuzzJSON[corev1.Pod],
	fuzzJSON[corev1.Node],
}

// FuzzJSONDecode: the JSON plan (jsonDecode) and JSONIdentity given any
// bytes return an error or a value, never panic; and the plan decodes
// exactly what sigs.k8s.io/json's UnmarshalCaseSensitivePreserveInts
// decodes, to the same value, failing where it fails.
//
//	go test ./source/k8s/internal/wire -run '^$' -fuzz '^FuzzJSONDecode$' -fuzztime 60s
func FuzzJSONDecode(f *testing.F) {
	w := Widget{}
	jsonFiller(1).Fill(&w)
	seeds := [][]byte{mustJSON(f, seedPod(7, "web")), mustJSON(f, &w), []byte(`{"s":"\ud83d\ude00","a":[1,2.5,{"x":null}],"mi":{"1":2},"e":[{"p":{}}]}`)}
	for i, s := range seeds {
		for k := range jsonFuzzTypes {
			f.Add(uint8(k), s)
		}
		f.Add(uint8(i), s[:len(s)/2])
	}
	f.Fuzz(func(t *testing.T, which uint8, raw []byte) {
		_, _, _ = JSONIdentity(raw, nil)
		jsonFuzzTypes[int(which)%len(jsonFuzzTypes)](t, raw)
	})
}

func fuzzJSON[E any](t *testing.T, raw []byte) {
	p := jsonPlanFor(reflect.TypeFor[E](), PlanOptions{KeepManagedFields: true, ShareStrings: true})
	var want, got E
	werr := sigsjson.UnmarshalCaseSensitivePreserveInts(raw, &want)
	gerr := jsonDecode(raw, unsafe.Pointer(&got), p)
	switch {
	case werr != nil && gerr != nil:
	case werr != nil:
		t.Fatalf("%T: sigs.k8s.io/json fails (%v), the plan decodes", got, werr)
	case gerr != nil:
		t.Fatalf("%T: the plan fails (%v), sigs.k8s.io/json decodes", got, gerr)
	case !reflect.DeepEqual(want, got) && !equality.Semantic.DeepEqual(want, got):
		t.Fatalf("%T: the plan and sigs.k8s.io/json differ (-sigs +plan)\n%s", got, diff(want, got))
	}
}

func mustJSON(t testing.TB, v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
