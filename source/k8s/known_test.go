package k8s

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
)

// TestRelistDecodesOnlyWhatChanged: a second list of the same objects
// hands on the objects already delivered, without decoding them; a changed
// object is decoded; a list that no longer has an object forgets it.
func TestRelistDecodesOnlyWhatChanged(t *testing.T) {
	var items [][]byte
	for i := range 100 {
		items = append(items, marshal(t, testPod(i)))
	}
	c := newCodec[corev1.Pod, *corev1.Pod](Options{})
	list := func(items [][]byte) []*corev1.Pod {
		c.known.Begin()
		defer c.known.Sweep()
		return c.decodeList(formatProto, items, func(int, error) { t.Fatal("bad item") })
	}
	first := list(items)
	changed := testPod(7)
	changed.ResourceVersion = "9999"
	changed.Labels["app"] = "new"
	items[7] = marshal(t, changed)
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
