package k8s

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// podSlim is a projection of a pod: metadata, the node, the phase and the
// containers' names and images.
type podSlim struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty" protobuf:"bytes,1,opt,name=metadata"`
	Spec              struct {
		NodeName   string `json:"nodeName,omitempty" protobuf:"bytes,10,opt,name=nodeName"`
		Containers []struct {
			Name  string `json:"name" protobuf:"bytes,1,opt,name=name"`
			Image string `json:"image,omitempty" protobuf:"bytes,2,opt,name=image"`
		} `json:"containers" protobuf:"bytes,2,rep,name=containers"`
	} `json:"spec,omitempty" protobuf:"bytes,2,opt,name=spec"`
	Status struct {
		Phase corev1.PodPhase `json:"phase,omitempty" protobuf:"bytes,1,opt,name=phase,casttype=PodPhase"`
	} `json:"status,omitempty" protobuf:"bytes,3,opt,name=status"`
}

func (p *podSlim) DeepCopyObject() runtime.Object {
	c := *p
	p.ObjectMeta.DeepCopyInto(&c.ObjectMeta)
	c.Spec.Containers = append(c.Spec.Containers[:0:0], p.Spec.Containers...)
	return &c
}

func TestProjectionDecodesFromTheWire(t *testing.T) {
	full := testPod(3)
	raw := marshal(t, full)
	js, err := json.Marshal(full)
	require.NoError(t, err)
	for _, opts := range []Options{{}, {DisableStringSharing: true}, {KeepManagedFields: true}} {
		c := newCodec[podSlim, *podSlim](opts)
		require.True(t, c.proto)
		for _, f := range []wireFormat{formatProto, formatJSON} {
			in := raw
			if f == formatJSON {
				in = js
			}
			var got podSlim
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
