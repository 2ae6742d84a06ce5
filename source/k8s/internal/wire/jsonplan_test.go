package wire

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apiextv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	sigsjson "sigs.k8s.io/json"
	"sigs.k8s.io/randfill"
)

// Widget is a custom resource's Go type with what CRD types hold and the
// generated types do not: interface{} values, maps with integer keys,
// floats, embedded structs (exported and not, tagged inline or not), a
// field the JSON ignores, and types left to the fallback (an array, a
// pointer to a pointer, a non-empty interface).
type Widget struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              WidgetSpec   `json:"spec"`
	Status            WidgetStatus `json:"status,omitempty"`
}

type widgetBase struct {
	Owner    string   `json:"owner"`
	Priority int32    `json:"priority"`
	Tags     []string `json:"tags,omitempty"`
}

// WidgetRef is embedded without a tag: promoted, as ",inline" is.
type WidgetRef struct {
	RefName string `json:"refName"`
	Owner   string // hidden by widgetBase's tagged owner? No: another name.
}

type WidgetKind string

type WidgetSpec struct {
	widgetBase `json:",inline"`
	WidgetRef
	Kind       WidgetKind                   `json:"kind"`
	Replicas   *int32                       `json:"replicas,omitempty"`
	Selector   *metav1.LabelSelector        `json:"selector,omitempty"`
	Containers []WidgetContainer            `json:"containers"`
	Resources  corev1.ResourceList          `json:"resources,omitempty"`
	Port       intstr.IntOrString           `json:"port"`
	Schedule   *metav1.Time                 `json:"schedule,omitempty"`
	Since      metav1.Time                  `json:"since"`
	Config     runtime.RawExtension         `json:"config"`
	Extra      *apiextv1.JSON               `json:"extra,omitempty"`
	Values     map[string]any               `json:"values,omitempty"`
	Anything   any                          `json:"anything"`
	Weights    map[string]float64           `json:"weights,omitempty"`
	Ratio      float32                      `json:"ratio"`
	Counts     map[int32]string             `json:"counts,omitempty"`
	Sizes      map[uint16]int8              `json:"sizes,omitempty"`
	Flags      map[string]bool              `json:"flags,omitempty"`
	Groups     map[string][]WidgetContainer `json:"groups,omitempty"`
	Data       []byte                       `json:"data"`
	Ignored    string                       `json:"-"`
	Matrix     [][]int64                    `json:"matrix"`
	Fixed      [2]int32                     `json:"fixed"`
	Twice      **string                     `json:"twice,omitempty"`
	Big        uint64                       `json:"big"`
	Small      int16                        `json:"small"`
	Plain      int                          `json:"plain"`
	Untagged   string
	Stringer   fmt.Stringer `json:"stringer,omitempty"`
}

type WidgetContainer struct {
	Name      string                         `json:"name"`
	Image     string                         `json:"image"`
	Env       []corev1.EnvVar                `json:"env,omitempty"`
	Limits    corev1.ResourceList            `json:"limits,omitempty"`
	Probe     *corev1.Probe                  `json:"probe,omitempty"`
	Labels    map[string]string              `json:"labels,omitempty"`
	Quantity  resource.Quantity              `json:"quantity"`
	QuantityP *resource.Quantity             `json:"quantityP,omitempty"`
	Args      []string                       `json:"args"`
	Ports     map[string]*corev1.ServicePort `json:"ports,omitempty"`
}

type WidgetStatus struct {
	Conditions         []metav1.Condition `json:"conditions,omitempty"`
	ObservedGeneration int64              `json:"observedGeneration"`
	Ready              bool               `json:"ready"`
	Message            *string            `json:"message,omitempty"`
}

// jsonFiller fills values at random, as the protobuf tests do, with what
// randfill cannot make for JSON: interface{} values and JSON documents.
func jsonFiller(seed int64) *randfill.Filler {
	return randomFiller(seed).Funcs(
		func(v *any, c randfill.Continue) { *v = randomAny(c, 3) },
		func(m *map[string]any, c randfill.Continue) {
			if c.Bool() {
				return
			}
			*m = map[string]any{}
			for range c.Intn(4) {
				(*m)[c.String(6)] = randomAny(c, 3)
			}
		},
		func(j *apiextv1.JSON, c randfill.Continue) {
			b, err := json.Marshal(randomAny(c, 3))
			if err != nil {
				panic(err)
			}
			j.Raw = b
		},
		func(s *fmt.Stringer, c randfill.Continue) {},
	)
}

// randomAny is a value encoding/json decodes into an interface{}, numbers
// as PreserveInts decodes them (int64 when integral).
func randomAny(c randfill.Continue, depth int) any {
	k := c.Intn(8)
	if depth == 0 {
		k = c.Intn(5)
	}
	switch k {
	case 0:
		return nil
	case 1:
		return c.Bool()
	case 2:
		return c.Int63() - c.Int63()
	case 3:
		return c.Float64()*1e6 + 0.5
	case 4:
		return c.String(10)
	case 5:
		a := []any{}
		for range c.Intn(3) {
			a = append(a, randomAny(c, depth-1))
		}
		return a
	default:
		m := map[string]any{}
		for range c.Intn(3) {
			m[c.String(5)] = randomAny(c, depth-1)
		}
		return m
	}
}

// checkJSONPlan fills n objects of type E at random, marshals each with
// encoding/json, and checks that the plan decodes it as
// sigs.k8s.io/json's UnmarshalCaseSensitivePreserveInts does (and, when
// stdlib, as encoding/json does too), with every combination of options.
func checkJSONPlan[E any](t *testing.T, n int, stdlib bool) {
	t.Helper()
	checkEquivalent(t, n, equivalence[E]{
		fill:   jsonFiller(int64(n)),
		encode: func(src *E) ([]byte, error) { return json.Marshal(src) },
		reference: func(raw []byte, want *E) error {
			if err := sigsjson.UnmarshalCaseSensitivePreserveInts(raw, want); err != nil {
				return err
			}
			if stdlib {
				var std E
				require.NoError(t, json.Unmarshal(raw, &std))
				require.True(t, equality.Semantic.DeepEqual(*want, std), "encoding/json and sigs.k8s.io/json disagree on %s", raw)
			}
			return nil
		},
		plan: func(o PlanOptions) func([]byte, *E) error {
			p := NewJSONPlan[E](o)
			require.NotNil(t, p, "%v has no JSON plan", reflect.TypeFor[E]())
			return func(raw []byte, got *E) error {
				if err := p.Decode(raw, got); err != nil {
					return fmt.Errorf("%w: %s", err, raw)
				}
				return nil
			}
		},
	})
}

func TestJSONPlanDecodesAsSigsJSON(t *testing.T) {
	checkJSONPlan[corev1.Pod](t, 60, true)
	checkJSONPlan[corev1.ConfigMap](t, 25, true)
	checkJSONPlan[corev1.Secret](t, 25, true)
	checkJSONPlan[corev1.Service](t, 25, true)
	checkJSONPlan[corev1.Node](t, 25, true)
	checkJSONPlan[corev1.Event](t, 25, true)
	checkJSONPlan[appsv1.Deployment](t, 25, true)
	checkJSONPlan[batchv1.Job](t, 25, true)
	checkJSONPlan[corev1.PersistentVolume](t, 25, true)
	checkJSONPlan[Widget](t, 100, false)
}

// TestJSONPlanShapes: the plan reaches what it should and leaves the rest
// to the fallback.
func TestJSONPlanShapes(t *testing.T) {
	p := jsonPlanFor(reflect.TypeFor[Widget](), PlanOptions{})
	require.Equal(t, jsStruct, p.kind)
	spec := p.fields["spec"].t
	for name, kind := range map[string]jsKind{
		"owner": jsString, "priority": jsInt, "tags": jsSlice, "refName": jsString, "Owner": jsString,
		"kind": jsString, "replicas": jsPtr, "port": jsUnmarshaler, "config": jsUnmarshaler,
		"anything": jsAny, "counts": jsMap, "data": jsBytes, "fixed": jsFallback, "twice": jsFallback,
		"Untagged": jsString, "stringer": jsFallback,
	} {
		require.Contains(t, spec.fields, name)
		require.Equal(t, kind, spec.fields[name].t.kind, name)
	}
	require.NotContains(t, spec.fields, "Ignored")
	require.NotContains(t, spec.fields, "-")
	meta := p.fields["metadata"].t
	require.True(t, meta.fields["managedFields"].skip)
	require.False(t, jsonPlanFor(reflect.TypeFor[Widget](), PlanOptions{KeepManagedFields: true}).fields["metadata"].t.fields["managedFields"].skip)
}

// TestJSONPlanSharesStrings: decoded strings come from the shared table,
// except the ones unique to an object.
func TestJSONPlanSharesStrings(t *testing.T) {
	emptyTables(t) // the budget is the process's: earlier tests may have filled it
	raw := []byte(`{"metadata":{"name":"pod-1","namespace":"team-a","labels":{"app":"web"}},"spec":{"nodeName":"node-1"}}`)
	p := NewJSONPlan[corev1.Pod](PlanOptions{ShareStrings: true})
	var a, b corev1.Pod
	require.NoError(t, p.Decode(raw, &a))
	require.NoError(t, p.Decode(raw, &b))
	same := func(x, y string) bool { return unsafe.StringData(x) == unsafe.StringData(y) }
	require.True(t, same(a.Namespace, b.Namespace))
	require.True(t, same(a.Spec.NodeName, b.Spec.NodeName))
	require.True(t, same(a.Labels["app"], b.Labels["app"]))
	require.False(t, same(a.Name, b.Name), "names are unique to an object and not shared")
}

// TestJSONPlanSharesSubtrees: a spec subtree two objects repeat is one
// value; a shared field whose key occurs twice is refused, not merged into.
func TestJSONPlanSharesSubtrees(t *testing.T) {
	emptyTables(t) // the budget is the process's: earlier tests may have filled it
	p := NewJSONPlan[corev1.Pod](PlanOptions{ShareSubtrees: true})
	raw := []byte(`{"spec":{"containers":[{"name":"a","livenessProbe":{"periodSeconds":3},"env":[{"name":"x","value":"1"}]}]}}`)
	var pods [3]corev1.Pod
	for i := range pods {
		require.NoError(t, p.Decode(raw, &pods[i]))
	}
	// Seen once, seen twice (admitted), then found.
	require.Same(t, &pods[1].Spec.Containers[0], &pods[2].Spec.Containers[0])
	require.Equal(t, pods[0], pods[2])
	require.Equal(t, len(pods[2].Spec.Containers), cap(pods[2].Spec.Containers), "a shared slice is clipped")
	for _, dup := range []string{
		`{"spec":{"containers":[{"name":"a"}],"containers":[{"name":"b"}]}}`,
		`{"spec":{"containers":[{"name":"a"}]},"spec":{"containers":[{"name":"b"}]}}`,
	} {
		var pod corev1.Pod
		require.ErrorIs(t, p.Decode([]byte(dup), &pod), ErrSharedMerge, dup)
	}
	var pod corev1.Pod
	require.NoError(t, p.Decode([]byte(`{"spec":{"containers":null,"containers":[{"name":"b"}]}}`), &pod))
	require.Equal(t, "b", pod.Spec.Containers[0].Name)

	// The object's own labels, annotations and owner references too, as in
	// protobuf (TestMetadataShared).
	meta := []byte(`{"metadata":{"name":"%s","labels":{"app":"web"},"annotations":{"a":"b"},"ownerReferences":[{"kind":"ReplicaSet","name":"rs","uid":"u","apiVersion":"apps/v1"}]}}`)
	for i := range pods {
		pods[i] = corev1.Pod{}
		require.NoError(t, p.Decode(bytes.Replace(meta, []byte("%s"), []byte{'a' + byte(i)}, 1), &pods[i]))
	}
	require.Equal(t, reflect.ValueOf(pods[1].Labels).Pointer(), reflect.ValueOf(pods[2].Labels).Pointer(), "labels")
	require.Equal(t, reflect.ValueOf(pods[1].Annotations).Pointer(), reflect.ValueOf(pods[2].Annotations).Pointer(), "annotations")
	require.Same(t, &pods[1].OwnerReferences[0], &pods[2].OwnerReferences[0], "owner references")
	require.Equal(t, "c", pods[2].Name)
}
