package wire

import (
	"bytes"
	"reflect"
	"testing"
	"unsafe"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/protobuf/encoding/protowire"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ginformer/ginformer/source/k8s/k8stest/slim"
)

// fuzzTypes are the types FuzzPBDecode decodes into, chosen by the input's
// first argument: the generated types whose plans have the most kinds of
// field (pod: every kind but float; node and service: maps of quantities,
// repeated int32; secret: map of bytes) and a projection.
var fuzzTypes = []func(t *testing.T, raw []byte){
	fuzzGenerated[corev1.Pod],
	fuzzGenerated[corev1.ConfigMap],
	fuzzGenerated[corev1.Secret],
	fuzzGenerated[corev1.Service],
	fuzzGenerated[corev1.Node],
	fuzzGenerated[appsv1.Deployment],
	fuzzProjection,
}

// fuzzSeeds are the encodings the corpus starts from, one per entry of
// fuzzTypes.
func fuzzSeeds(t testing.TB) [][]byte {
	replicas := int32(3)
	dep := &appsv1.Deployment{
		ObjectMeta: seedPod(1, "web").ObjectMeta,
		Spec: appsv1.DeploymentSpec{Replicas: &replicas, Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web"}}, Spec: seedPod(1, "web").Spec}},
	}
	svc := &corev1.Service{ObjectMeta: seedPod(2, "web").ObjectMeta, Spec: corev1.ServiceSpec{
		Ports:    []corev1.ServicePort{{Name: "http", Port: 80}, {Name: "https", Port: 443}},
		Selector: map[string]string{"app": "web"}, ClusterIPs: []string{"10.0.0.1"}}}
	node := &corev1.Node{ObjectMeta: seedPod(3, "web").ObjectMeta, Status: corev1.NodeStatus{
		Capacity: seedPod(1, "web").Spec.Containers[0].Resources.Limits, Images: []corev1.ContainerImage{{Names: []string{"a", "b"}, SizeBytes: 1 << 30}}}}
	return [][]byte{
		marshal(t, seedPod(7, "web")),
		marshal(t, &corev1.ConfigMap{ObjectMeta: seedPod(4, "web").ObjectMeta, Data: map[string]string{"a": "b", "c": ""}, BinaryData: map[string][]byte{"x": {0, 1}}}),
		marshal(t, &corev1.Secret{ObjectMeta: seedPod(5, "web").ObjectMeta, Data: map[string][]byte{"k": []byte("v")}, Type: "Opaque"}),
		marshal(t, svc),
		marshal(t, node),
		marshal(t, dep),
		marshal(t, seedPod(6, "api")),
	}
}

// damaged returns variants of a valid encoding: truncations, bit flips, a
// wrong wire type on the first tag, huge lengths and a field repeated.
func damaged(b []byte) [][]byte {
	out := [][]byte{b, b[:len(b)/2], b[:len(b)-1], b[:1]}
	flip := append([]byte(nil), b...)
	flip[len(flip)/3] ^= 0x40
	out = append(out, flip)
	wrong := append([]byte(nil), b...)
	wrong[0] = wrong[0]&^7 | byte(protowire.Fixed32Type)
	out = append(out, wrong)
	huge := protowire.AppendTag(nil, 1, protowire.BytesType)
	huge = protowire.AppendVarint(huge, 1<<62)
	out = append(out, append(huge, b...))
	deep := protowire.AppendTag(nil, 2, protowire.BytesType) // spec, whose containers claim too much
	deep = protowire.AppendVarint(deep, 4)
	deep = protowire.AppendTag(deep, 2, protowire.BytesType)
	deep = protowire.AppendVarint(deep, 1<<20)
	out = append(out, deep)
	return append(out, append(append([]byte(nil), b...), b...)) // every field twice
}

// FuzzPBDecode: the plan decoder (pbDecode) and the wire readers given any
// bytes return an error or a value, never panic; a value they return
// encodes, and decodes again to itself; and on the bytes the generated
// Marshal writes, the plan and the generated Unmarshal agree.
//
//	go test ./source/k8s/internal/wire -run '^$' -fuzz '^FuzzPBDecode$' -fuzztime 60s
func FuzzPBDecode(f *testing.F) {
	for i, seed := range fuzzSeeds(f) {
		for _, d := range damaged(seed) {
			f.Add(uint8(i), d)
		}
	}
	f.Fuzz(func(t *testing.T, which uint8, raw []byte) {
		fuzzWire(raw)
		fuzzTypes[int(which)%len(fuzzTypes)](t, raw)
	})
}

// fuzzWire runs the readers of the envelope, lists, watch frames and
// metadata over raw: errors are fine, panics are not.
func fuzzWire(raw []byte) {
	var scratch []byte
	_, _, _ = Identity(raw, scratch)
	if out, err := WithoutManagedFields(raw, &scratch); err == nil && len(out) > 0 {
		_, _, _ = Identity(out, nil)
	}
	_, _, _ = SplitWatchEvent(raw)
	_, _, _ = SplitList(raw, 2)
	_, _ = Unwrap(append([]byte(Magic), raw...))
	if m, err := Meta(raw); err == nil {
		var meta metav1.ObjectMeta
		_ = meta.Unmarshal(m)
	}
	_, _, _ = SplitJSONList(raw)
}

func fuzzGenerated[E any, T interface {
	*E
	marshaler
}](t *testing.T, raw []byte) {
	p := planFor(reflect.TypeFor[E](), PlanOptions{ShareStrings: true, ShareSubtrees: true})
	var got E
	if err := pbDecode(raw, unsafe.Pointer(&got), p); err != nil {
		return
	}
	// The generated Unmarshal reads some malformed fields otherwise (it
	// takes a map entry's value by its field number whatever its wire
	// type): the two are compared on the bytes it would write itself.
	var want E
	if err := T(&want).Unmarshal(raw); err == nil {
		if canon, err := T(&want).Marshal(); err == nil && bytes.Equal(canon, raw) {
			any(&want).(metav1.Object).SetManagedFields(nil)
			if !equality.Semantic.DeepEqual(want, got) {
				t.Fatalf("%T: the plan and Unmarshal differ (-Unmarshal +plan)\n%s", got, diff(want, got))
			}
		}
	}
	again, err := T(&got).Marshal()
	if err != nil {
		t.Fatalf("%T: a decoded value does not encode: %v", got, err)
	}
	var got2 E
	if err := pbDecode(again, unsafe.Pointer(&got2), p); err != nil {
		t.Fatalf("%T: a decoded value, encoded, does not decode: %v", got, err)
	}
	if !equality.Semantic.DeepEqual(got, got2) {
		t.Fatalf("%T: a round trip changes the value (-first +second)\n%s", got, diff(got, got2))
	}
}

// fuzzProjection decodes raw into a projection (a plan without any
// generated code): it has no encoder, so only errors are checked.
func fuzzProjection(_ *testing.T, raw []byte) {
	p := NewPlan[slim.Pod](PlanOptions{ShareStrings: true, ShareSubtrees: true})
	var got slim.Pod
	_ = p.Decode(raw, &got)
}

func diff(a, b any) string {
	return cmp.Diff(a, b, cmp.Exporter(func(reflect.Type) bool { return true }))
}
