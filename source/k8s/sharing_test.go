package k8s_test

import (
	"runtime"
	"testing"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/ginformer/ginformer/informer"
	"github.com/ginformer/ginformer/source/k8s"
)

// TestSourceHoldsTheSharingTables: a source that decodes itself holds the
// sharing tables with its budget while it lives, and lets them go when it
// is garbage collected; a negative budget is refused.
func TestSourceHoldsTheSharingTables(t *testing.T) {
	cs, err := kubernetes.NewForConfig(&rest.Config{Host: "http://127.0.0.1:1"}) // never contacted
	require.NoError(t, err)
	newSource := func(opts k8s.Options) (*k8s.Source[*corev1.ConfigMap], error) {
		return k8s.New(cs.CoreV1().ConfigMaps("default"), cmItems, opts)
	}
	const defaultBudget = 64 << 20
	src, err := newSource(k8s.Options{SharingBudget: 1 << 40})
	require.NoError(t, err)
	require.True(t, src.Decoding())
	require.Equal(t, int64(1<<40), src.Sharing().Budget, "the largest budget of the live sources")

	// A source that shares nothing holds no lease, and still reads the
	// tables' figures.
	probe, err := newSource(k8s.Options{DisableStringSharing: true, DisableSubtreeSharing: true})
	require.NoError(t, err)
	src = nil // dropped: collected below
	for i := 0; i < 50 && probe.Sharing().Budget != defaultBudget; i++ {
		runtime.GC() // the lease's cleanup runs after a collection
		runtime.Gosched()
	}
	require.Equal(t, int64(defaultBudget), probe.Sharing().Budget, "released with its source")
	_ = src

	_, err = newSource(k8s.Options{SharingBudget: -1})
	require.ErrorIs(t, err, informer.ErrInvalidOptions)
}
