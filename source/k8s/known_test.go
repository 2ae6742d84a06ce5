package k8s

import (
	"encoding/json"
	"fmt"
	"reflect"
	"runtime"
	"testing"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ginformer/ginformer/source/k8s/internal/wire"
)

// TestRelistDecodesOnlyWhatChanged: a second list of the same objects
// hands on the objects already delivered, without decoding them; a changed
// object is decoded; a list that no longer has an object forgets it.
func TestRelistDecodesOnlyWhatChanged(t *testing.T) {
	t.Run("protobuf", func(t *testing.T) { testRelistDecodesOnlyWhatChanged(t, formatProto) })
	t.Run("json", func(t *testing.T) { testRelistDecodesOnlyWhatChanged(t, formatJSON) })
}

func testRelistDecodesOnlyWhatChanged(t *testing.T, f wireFormat) {
	enc := func(p *corev1.Pod) []byte {
		if f == formatProto {
			return marshal(t, p)
		}
		b, err := json.Marshal(p)
		require.NoError(t, err)
		return b
	}
	var items [][]byte
	for i := range 100 {
		items = append(items, enc(testPod(i)))
	}
	c := newCodec[corev1.Pod, *corev1.Pod](Options{})
	list := func(items [][]byte) []*corev1.Pod {
		c.known.Begin()
		defer c.known.Sweep()
		return c.decodeList(f, items, func(int, error) { t.Fatal("bad item") })
	}
	first := list(items)
	changed := testPod(7)
	changed.ResourceVersion = "9999"
	changed.Labels["app"] = "new"
	items[7] = enc(changed)
	second := list(items)
	require.Len(t, second, 100)
	for i := range second {
		if i == 7 {
			require.NotSame(t, first[i], second[i])
			require.Equal(t, "new", second[i].Labels["app"])
			continue
		}
		require.Same(t, first[i], second[i], "item %d decoded again", i)
	}
	// A list without items 50..99 forgets them: listed again, they are
	// decoded again.
	list(items[:50])
	third := list(items)
	require.Same(t, second[10], third[10])
	require.NotSame(t, second[60], third[60])
	require.Equal(t, fmt.Sprint(160), third[60].ResourceVersion)
	require.Equal(t, 100, c.known.Len())
}

// TestKnownDoesNotPinTransformedObjects: when an informer's Transform
// stores a new, smaller object, the decoded objects are garbage: the
// source's known objects keep their versions, not the objects, so a
// Transform saves the memory it should, and a relist decodes those objects
// again. Logs the bytes retained per pod (the transformed object and the
// known entry).
func TestKnownDoesNotPinTransformedObjects(t *testing.T) {
	const n = 2000
	items := make([][]byte, n)
	for i := range n {
		items[i] = marshal(t, benchPod(i))
	}
	// The sharing tables are the process's: filled first (a subtree is
	// shared the second time it is seen), so that what is measured is what
	// the list itself retains.
	for range 2 {
		newCodec[corev1.Pod, *corev1.Pod](Options{}).decodeList(formatProto, items, nil)
	}
	c := newCodec[corev1.Pod, *corev1.Pod](Options{})
	var cache []*corev1.Pod
	per := retainedPerItem(n, func() {
		c.known.Begin()
		objs := c.decodeList(formatProto, items, nil)
		c.known.Sweep()
		cache = make([]*corev1.Pod, len(objs))
		for i, o := range objs {
			cache[i] = slimPod(o)
		}
	})
	podSize := float64(reflect.TypeFor[corev1.Pod]().Size())
	t.Logf("%.0f bytes retained per pod with a Transform to metadata, of which %.0f the new Pod struct (%d known)", per, podSize, c.known.Len())
	require.Less(t, per, podSize+512, "the decoded pods (about 5 KB each) are not retained: the new pod, its strings and the known entry")
	runtime.GC()
	for _, it := range items[:10] {
		key, version, ok := wire.Identity(it, nil)
		require.True(t, ok)
		_, ok = c.known.Lookup(key, version)
		require.False(t, ok, "a pod nothing holds is not handed on")
	}
	c.known.Begin()
	again := c.decodeList(formatProto, items, nil)
	c.known.Sweep()
	require.Len(t, again, n, "decoded again")
	require.Equal(t, n, c.known.Len())
	runtime.KeepAlive(cache)
}

// slimPod is what a Transform that keeps only the metadata an index needs
// returns: a new object.
func slimPod(p *corev1.Pod) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: p.Namespace, Name: p.Name, ResourceVersion: p.ResourceVersion},
		Spec: corev1.PodSpec{NodeName: p.Spec.NodeName}}
}

// retainedPerItem returns the heap bytes that stay live after fill, per
// item (of n).
func retainedPerItem(n int, fill func()) float64 {
	var m0, m1 runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&m0)
	fill()
	runtime.GC()
	runtime.ReadMemStats(&m1)
	return float64(int64(m1.HeapAlloc)-int64(m0.HeapAlloc)) / float64(n)
}
