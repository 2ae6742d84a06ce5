package wire

import (
	"reflect"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
)

type marshaler interface {
	Marshal() ([]byte, error)
	protoUnmarshaler
}

// checkPlanDecodes fills objects of type E at random, encodes them with
// their generated Marshal, and checks that the plan decodes each as the
// generated Unmarshal does, with every combination of options.
func checkPlanDecodes[E any, T interface {
	*E
	marshaler
}](t *testing.T, n int) {
	t.Helper()
	checkEquivalent(t, n, equivalence[E]{
		fill:      randomFiller(int64(n)),
		encode:    func(src *E) ([]byte, error) { return T(src).Marshal() },
		reference: func(raw []byte, want *E) error { return T(want).Unmarshal(raw) },
		plan: func(o PlanOptions) func([]byte, *E) error {
			p := planFor(reflect.TypeFor[E](), o)
			require.NotNil(t, p, "%v has no plan", reflect.TypeFor[E]())
			return func(raw []byte, got *E) error { return pbDecode(raw, unsafe.Pointer(got), p) }
		},
	})
}

func TestPlanDecodesAsGenerated(t *testing.T) {
	checkPlanDecodes[corev1.Pod](t, 60)
	checkPlanDecodes[corev1.Node](t, 25)
	checkPlanDecodes[corev1.Service](t, 25)
	checkPlanDecodes[corev1.ConfigMap](t, 25)
	checkPlanDecodes[corev1.Secret](t, 25)
	checkPlanDecodes[corev1.Event](t, 25)
	checkPlanDecodes[corev1.PersistentVolumeClaim](t, 25)
	checkPlanDecodes[appsv1.Deployment](t, 25)
	checkPlanDecodes[batchv1.Job](t, 25)
	checkPlanDecodes[networkingv1.Ingress](t, 25)
}
