package wire

import (
	"fmt"
	"reflect"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
)

// emptyTables releases a lease of its own: with no other lease live, the
// tables are emptied.
func emptyTables(t *testing.T) {
	t.Helper()
	Acquire(0).Release()
	require.Zero(t, ReadStats().Entries)
	require.Zero(t, ReadStats().Bytes)
}

func decodePods(t *testing.T, p *Plan[corev1.Pod], from, to, perApp int) []*corev1.Pod {
	t.Helper()
	var out []*corev1.Pod
	for i := from; i < to; i++ {
		raw := marshal(t, seedPod(i, fmt.Sprintf("app-%d", i/perApp)))
		var pod corev1.Pod
		require.NoError(t, p.Decode(raw, &pod))
		out = append(out, &pod)
	}
	return out
}

// TestSharingBudget: the tables stay within the lease's budget, refusing
// what does not fit; released, they are empty.
func TestSharingBudget(t *testing.T) {
	emptyTables(t)
	const budget = 64 << 10
	l := Acquire(budget)
	p := NewPlan[corev1.Pod](PlanOptions{ShareStrings: true, ShareSubtrees: true})
	for round := range 3 { // each value seen twice becomes shared
		decodePods(t, p, 0, 3000, 2)
		s := ReadStats()
		require.LessOrEqual(t, s.Bytes, int64(budget), "round %d: %+v", round, s)
		require.Equal(t, int64(budget), s.Budget)
	}
	s := ReadStats()
	require.NotZero(t, s.Refused, "3000 pods of 1500 apps do not fit in 64 KiB: %+v", s)
	require.NotZero(t, s.Entries)

	// A second, larger lease raises the budget; the first released, the
	// tables keep the second's.
	l2 := Acquire(budget * 4)
	require.Equal(t, int64(budget*4), ReadStats().Budget)
	l.Release()
	require.Equal(t, int64(budget*4), ReadStats().Budget)
	require.NotZero(t, ReadStats().Entries, "a lease is live: the tables are kept")
	l2.Release()
	s = ReadStats()
	require.Zero(t, s.Entries, "no lease: emptied")
	require.Zero(t, s.Bytes)
	require.Equal(t, int64(DefaultBudget), s.Budget)
	l2.Release() // again: nothing
}

// TestSharingHitRate: the pods of one app share their strings and spec
// subtrees, and the lookups say so.
func TestSharingHitRate(t *testing.T) {
	emptyTables(t)
	l := Acquire(0)
	defer l.Release()
	before := ReadStats()
	p := NewPlan[corev1.Pod](PlanOptions{ShareStrings: true, ShareSubtrees: true})
	pods := decodePods(t, p, 0, 50, 50)
	s := ReadStats()
	hits, misses := s.Hits-before.Hits, s.Misses-before.Misses
	require.Greater(t, float64(hits)/float64(hits+misses), 0.8, "%+v", s)
	require.Equal(t, mapOf(pods[1].Spec.Containers[0].Resources.Limits), mapOf(pods[2].Spec.Containers[0].Resources.Limits))
}

// TestSharingSeparately: strings and subtrees are shared by two options.
func TestSharingSeparately(t *testing.T) {
	emptyTables(t)
	l := Acquire(0)
	defer l.Release()
	for _, o := range []PlanOptions{{ShareStrings: true}, {ShareSubtrees: true}, {}} {
		pods := decodePods(t, NewPlan[corev1.Pod](o), 0, 3, 3)
		a, b := pods[1], pods[2]
		sameLimits := mapOf(a.Spec.Containers[0].Resources.Limits) == mapOf(b.Spec.Containers[0].Resources.Limits)
		sameEnv := &a.Spec.Containers[0].Env[0] == &b.Spec.Containers[0].Env[0]
		require.Equal(t, o.ShareSubtrees, sameLimits, "%+v: limits", o)
		require.Equal(t, o.ShareSubtrees, sameEnv, "%+v: env", o)
		sameNamespace := unsafe.StringData(a.Namespace) == unsafe.StringData(b.Namespace)
		sameLabel := unsafe.StringData(a.Labels["tier"]) == unsafe.StringData(b.Labels["tier"])
		require.Equal(t, o.ShareStrings, sameNamespace, "%+v: namespace", o)
		require.Equal(t, o.ShareStrings, sameLabel, "%+v: label", o)
	}
}

func mapOf(m corev1.ResourceList) unsafe.Pointer { return reflect.ValueOf(m).UnsafePointer() }
