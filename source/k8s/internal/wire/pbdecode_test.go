package wire

import (
	"math/rand"
	"reflect"
	"testing"
	"unsafe"

	"github.com/google/go-cmp/cmp"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/api/apitesting/fuzzer"
	"k8s.io/apimachinery/pkg/api/equality"
	metafuzzer "k8s.io/apimachinery/pkg/apis/meta/fuzzer"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/scheme"
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
	f := fuzzer.FuzzerFor(metafuzzer.Funcs, rand.NewSource(int64(n)), scheme.Codecs)
	f = f.NilChance(0.2).NumElements(0, 3)
	typ := reflect.TypeFor[E]()
	for _, keep := range []bool{true, false} {
		for share := range 4 { // strings, subtrees: neither, one, the other, both
			o := PlanOptions{KeepManagedFields: keep, ShareStrings: share&1 != 0, ShareSubtrees: share&2 != 0}
			p := planFor(typ, o)
			require.NotNil(t, p, "%v has no plan", typ)
			for i := range n {
				var src E
				f.Fill(&src)
				raw, err := T(&src).Marshal()
				require.NoError(t, err)
				var want E
				require.NoError(t, T(&want).Unmarshal(raw))
				if !keep {
					any(&want).(metav1.Object).SetManagedFields(nil)
				}
				// Twice, so that the second decode finds the shared values.
				for range 2 {
					var got E
					require.NoError(t, pbDecode(raw, unsafe.Pointer(&got), p), "%v #%d", typ, i)
					if !equality.Semantic.DeepEqual(want, got) {
						t.Fatalf("%v #%d %+v: (-want +got)\n%s", typ, i, o,
							cmp.Diff(want, got, cmp.Exporter(func(reflect.Type) bool { return true })))
					}
				}
			}
		}
	}
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
