package wire

import (
	"reflect"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/encoding/protowire"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The labels, annotations and owner references that the pods of one
// ReplicaSet repeat are shared between them; a map unique to one pod is
// not, and sharing off shares none.
func TestMetadataShared(t *testing.T) {
	emptyTables(t) // the budget is the process's: earlier tests may have filled it
	pod := func(name, instance string) []byte {
		ctrl := true
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{
			Name: name, Namespace: "ns",
			Labels:      map[string]string{"app": "web", "pod-template-hash": "7c9f8d6b5", "instance": instance},
			Annotations: map[string]string{"prometheus.io/scrape": "true", "prometheus.io/port": "9090"},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet",
				Name: "web-7c9f8d6b5", UID: "11111111-2222-4333-8444-555555555555", Controller: &ctrl}},
		}}
		b, err := p.Marshal()
		require.NoError(t, err)
		return b
	}
	decode := func(p *Plan[corev1.Pod], raw []byte) *corev1.Pod {
		var out corev1.Pod
		require.NoError(t, p.Decode(raw, &out))
		return &out
	}
	mapPtr := func(m map[string]string) uintptr { return reflect.ValueOf(m).Pointer() }
	refsPtr := func(r []metav1.OwnerReference) uintptr { return uintptr(unsafe.Pointer(unsafe.SliceData(r))) }

	emptyTables(t)
	l := Acquire(DefaultBudget)
	defer l.Release()
	p := NewPlan[corev1.Pod](PlanOptions{ShareStrings: true, ShareSubtrees: true})
	a, b, c := decode(p, pod("a", "x")), decode(p, pod("b", "x")), decode(p, pod("c", "y"))
	d := decode(p, pod("d", "x"))
	// Canonical on the second sighting: b's values are shared from then on.
	require.Equal(t, mapPtr(b.Annotations), mapPtr(c.Annotations), "annotations")
	require.Equal(t, mapPtr(b.Annotations), mapPtr(d.Annotations), "annotations")
	require.Equal(t, refsPtr(b.OwnerReferences), refsPtr(d.OwnerReferences), "owner references")
	require.Equal(t, len(b.OwnerReferences), cap(b.OwnerReferences), "a shared slice's capacity is clipped")
	require.Equal(t, mapPtr(b.Labels), mapPtr(d.Labels), "labels")
	require.NotEqual(t, mapPtr(b.Labels), mapPtr(c.Labels), "labels of another instance")
	require.Equal(t, "y", c.Labels["instance"])
	require.Equal(t, a.Annotations, d.Annotations)

	q := NewPlan[corev1.Pod](PlanOptions{ShareStrings: true})
	e, f := decode(q, pod("e", "x")), decode(q, pod("f", "x"))
	require.NotEqual(t, mapPtr(e.Annotations), mapPtr(f.Annotations), "subtree sharing off")
	require.NotEqual(t, refsPtr(e.OwnerReferences), refsPtr(f.OwnerReferences), "subtree sharing off")
}

// A map whose entries come in two runs (the generated Marshal writes one;
// another encoder may not) decodes into a copy of the shared map from the
// first run, not into the shared map, and without the generated Unmarshal,
// which a projection does not have.
func TestSharedMapInTwoRuns(t *testing.T) {
	emptyTables(t) // the budget is the process's: earlier tests may have filled it
	type meta struct {
		Name   string            `protobuf:"bytes,1,opt,name=name"`
		Labels map[string]string `protobuf:"bytes,11,rep,name=labels"`
	}
	type slim struct {
		Meta meta `json:"metadata" protobuf:"bytes,1,opt,name=metadata"`
	}
	entry := func(b []byte, k, v string) []byte {
		var e []byte
		e = protowire.AppendTag(e, 1, protowire.BytesType)
		e = protowire.AppendString(e, k)
		e = protowire.AppendTag(e, 2, protowire.BytesType)
		e = protowire.AppendString(e, v)
		b = protowire.AppendTag(b, 11, protowire.BytesType)
		return protowire.AppendBytes(b, e)
	}
	obj := func(name string, split bool) []byte {
		var m []byte
		m = entry(m, "app", "web")
		if split {
			m = protowire.AppendTag(m, 1, protowire.BytesType)
			m = protowire.AppendString(m, name)
			m = entry(m, "extra", name)
		} else {
			m = protowire.AppendTag(m, 1, protowire.BytesType)
			m = protowire.AppendString(m, name)
		}
		var b []byte
		b = protowire.AppendTag(b, 1, protowire.BytesType)
		return protowire.AppendBytes(b, m)
	}
	emptyTables(t)
	l := Acquire(DefaultBudget)
	defer l.Release()
	p := NewPlan[slim](PlanOptions{ShareStrings: true, ShareSubtrees: true})
	var a, b, c slim
	require.NoError(t, p.Decode(obj("a", false), &a))
	require.NoError(t, p.Decode(obj("b", false), &b))
	require.NoError(t, p.Decode(obj("c", true), &c))
	require.Equal(t, map[string]string{"app": "web"}, a.Meta.Labels)
	require.Equal(t, map[string]string{"app": "web"}, b.Meta.Labels, "the shared map is not written")
	require.Equal(t, map[string]string{"app": "web", "extra": "c"}, c.Meta.Labels)
}
