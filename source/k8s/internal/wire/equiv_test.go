package wire

import (
	"math/rand"
	"reflect"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/api/apitesting/fuzzer"
	"k8s.io/apimachinery/pkg/api/equality"
	metafuzzer "k8s.io/apimachinery/pkg/apis/meta/fuzzer"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/randfill"
)

// randomFiller fills API objects at random from seed, for the equivalence
// tests: apimachinery's fuzzer with the metadata functions, a nil
// pointer, slice or map one time in five, and up to 3 elements each.
func randomFiller(seed int64) *randfill.Filler {
	f := fuzzer.FuzzerFor(metafuzzer.Funcs, rand.NewSource(seed), scheme.Codecs)
	return f.NilChance(0.2).NumElements(0, 3)
}

// equivalence is what [checkEquivalent] compares: objects of type E filled
// by fill and encoded by encode must decode with the plan for every
// PlanOptions as they do with reference.
type equivalence[E any] struct {
	fill      *randfill.Filler
	encode    func(src *E) ([]byte, error)
	reference func(raw []byte, want *E) error
	// plan returns the decoder under test for o; it is called once per
	// combination of options, before any object is decoded.
	plan func(o PlanOptions) func(raw []byte, got *E) error
}

// checkEquivalent fills n objects of type E at random for each
// combination of options (managed fields kept or dropped; strings and
// subtrees shared or not), encodes each, and checks that the plan decodes
// it as the reference does, the reference's managed fields dropped when
// the options drop them. Each object is decoded twice, so that the second
// decode finds the shared values.
func checkEquivalent[E any](t *testing.T, n int, eq equivalence[E]) {
	t.Helper()
	typ := reflect.TypeFor[E]()
	for _, keep := range []bool{true, false} {
		for share := range 4 { // strings, subtrees: neither, one, the other, both
			o := PlanOptions{KeepManagedFields: keep, ShareStrings: share&1 != 0, ShareSubtrees: share&2 != 0}
			decode := eq.plan(o)
			for i := range n {
				var src E
				eq.fill.Fill(&src)
				raw, err := eq.encode(&src)
				require.NoError(t, err)
				var want E
				require.NoError(t, eq.reference(raw, &want), "%v #%d", typ, i)
				if m, ok := any(&want).(metav1.Object); ok && !keep {
					m.SetManagedFields(nil)
				}
				for range 2 {
					var got E
					require.NoError(t, decode(raw, &got), "%v #%d %+v", typ, i, o)
					if !reflect.DeepEqual(want, got) && !equality.Semantic.DeepEqual(want, got) {
						t.Fatalf("%v #%d %+v: (-want +got)\n%s", typ, i, o,
							cmp.Diff(want, got, cmp.Exporter(func(reflect.Type) bool { return true })))
					}
				}
			}
		}
	}
}
