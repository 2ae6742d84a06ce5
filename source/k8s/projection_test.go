package k8s

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ginformer/ginformer/source/k8s/k8stest/slim"
)

func TestProjectionDecodesFromTheWire(t *testing.T) {
	full := testPod(3)
	raw := marshal(t, full)
	js, err := json.Marshal(full)
	require.NoError(t, err)
	for _, opts := range []Options{{}, {DisableStringSharing: true}, {KeepManagedFields: true}} {
		c := newCodec[slim.Pod, *slim.Pod](opts)
		require.True(t, c.proto)
		for _, f := range []wireFormat{formatProto, formatJSON} {
			in := raw
			if f == formatJSON {
				in = js
			}
			var got slim.Pod
			var scratch []byte
			require.NoError(t, c.decode(f, in, &got, &scratch))
			require.Equal(t, full.Name, got.Name, f)
			require.Equal(t, full.Namespace, got.Namespace)
			require.Equal(t, full.ResourceVersion, got.ResourceVersion)
			require.Equal(t, full.Labels, got.Labels)
			require.Equal(t, full.OwnerReferences, got.OwnerReferences)
			require.Equal(t, full.Spec.NodeName, got.Spec.NodeName)
			require.Len(t, got.Spec.Containers, 1)
			require.Equal(t, full.Spec.Containers[0].Image, got.Spec.Containers[0].Image)
			require.Equal(t, full.Status.Phase, got.Status.Phase)
			require.Equal(t, opts.KeepManagedFields, got.ManagedFields != nil, "managedFields %v", f)
		}
	}
}
