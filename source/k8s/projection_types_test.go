package k8s_test

import (
	"testing"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/ginformer/ginformer/informer"
	"github.com/ginformer/ginformer/source/k8s"
)

// Projections with a field of a Go type protobuf does not decode.
type (
	podIntDeadline struct {
		metav1.TypeMeta   `json:",inline"`
		metav1.ObjectMeta `json:"metadata,omitempty" protobuf:"bytes,1,opt,name=metadata"`
		Spec              struct {
			NodeName              string `json:"nodeName,omitempty" protobuf:"bytes,10,opt,name=nodeName"`
			ActiveDeadlineSeconds *int   `json:"activeDeadlineSeconds,omitempty" protobuf:"varint,5,opt,name=activeDeadlineSeconds"`
		} `json:"spec,omitempty" protobuf:"bytes,2,opt,name=spec"`
	}
	podIntPriority struct {
		metav1.TypeMeta   `json:",inline"`
		metav1.ObjectMeta `json:"metadata,omitempty" protobuf:"bytes,1,opt,name=metadata"`
		Spec              struct {
			Priority int `json:"priority,omitempty" protobuf:"varint,25,opt,name=priority"`
		} `json:"spec,omitempty" protobuf:"bytes,2,opt,name=spec"`
	}
	podFloat32 struct {
		metav1.TypeMeta   `json:",inline"`
		metav1.ObjectMeta `json:"metadata,omitempty" protobuf:"bytes,1,opt,name=metadata"`
		Weight            float32 `json:"weight,omitempty" protobuf:"fixed64,9,opt,name=weight"`
	}
	podNoTags struct {
		metav1.TypeMeta   `json:",inline"`
		metav1.ObjectMeta `json:"metadata,omitempty"`
	}
)

func (p *podIntDeadline) DeepCopyObject() runtime.Object { c := *p; return &c }
func (p *podIntPriority) DeepCopyObject() runtime.Object { c := *p; return &c }
func (p *podFloat32) DeepCopyObject() runtime.Object     { c := *p; return &c }
func (p *podNoTags) DeepCopyObject() runtime.Object      { c := *p; return &c }

// NewProjection refuses a type with a field of a Go type protobuf does not
// decode, naming the field, its type and what to use instead.
func TestProjectionFieldTypes(t *testing.T) {
	cs, err := kubernetes.NewForConfig(&rest.Config{Host: "http://127.0.0.1:1"}) // never contacted
	require.NoError(t, err)
	pods := cs.CoreV1().Pods("")
	for _, tc := range []struct {
		name string
		new  func() error
		want []string
	}{
		{"pointer to int", func() error { _, err := k8s.NewProjection[podIntDeadline](pods, k8s.Options{}); return err },
			[]string{"Spec.ActiveDeadlineSeconds", "*int", "int32 or int64"}},
		{"int", func() error { _, err := k8s.NewProjection[podIntPriority](pods, k8s.Options{}); return err },
			[]string{"Spec.Priority", "Go type int,", "int32 or int64"}},
		{"float32", func() error { _, err := k8s.NewProjection[podFloat32](pods, k8s.Options{}); return err },
			[]string{"field Weight", "float32", "use float64"}},
		{"no tags", func() error { _, err := k8s.NewProjection[podNoTags](pods, k8s.Options{}); return err },
			[]string{"podNoTags", "declares no field with a protobuf tag"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.new()
			require.ErrorIs(t, err, informer.ErrInvalidOptions)
			t.Log(err)
			for _, w := range tc.want {
				require.ErrorContains(t, err, w)
			}
		})
	}
	// A projection of the Go types docs/k8s.md lists is accepted.
	_, err = k8s.NewProjection[podSlimAll](pods, k8s.Options{})
	require.NoError(t, err)
}

// podSlimAll uses each kind of Go type a projection may use.
type podSlimAll struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty" protobuf:"bytes,1,opt,name=metadata"`
	Spec              struct {
		NodeName                      string                     `json:"nodeName,omitempty" protobuf:"bytes,10,opt,name=nodeName"`
		ActiveDeadlineSeconds         *int64                     `json:"activeDeadlineSeconds,omitempty" protobuf:"varint,5,opt,name=activeDeadlineSeconds"`
		TerminationGracePeriodSeconds *int64                     `json:"terminationGracePeriodSeconds,omitempty" protobuf:"varint,4,opt,name=terminationGracePeriodSeconds"`
		Priority                      *int32                     `json:"priority,omitempty" protobuf:"bytes,25,opt,name=priority"`
		HostNetwork                   bool                       `json:"hostNetwork,omitempty" protobuf:"varint,11,opt,name=hostNetwork"`
		NodeSelector                  map[string]string          `json:"nodeSelector,omitempty" protobuf:"bytes,7,rep,name=nodeSelector"`
		Overhead                      corev1.ResourceList        `json:"overhead,omitempty" protobuf:"bytes,32,opt,name=overhead"`
		Tolerations                   []corev1.Toleration        `json:"tolerations,omitempty" protobuf:"bytes,22,opt,name=tolerations"`
		SecurityContext               *corev1.PodSecurityContext `json:"securityContext,omitempty" protobuf:"bytes,14,opt,name=securityContext"`
	} `json:"spec,omitempty" protobuf:"bytes,2,opt,name=spec"`
	Status struct {
		Phase     corev1.PodPhase `json:"phase,omitempty" protobuf:"bytes,1,opt,name=phase,casttype=PodPhase"`
		StartTime *metav1.Time    `json:"startTime,omitempty" protobuf:"bytes,7,opt,name=startTime"`
		PodIPs    []struct {
			IP string `json:"ip" protobuf:"bytes,1,opt,name=ip"`
		} `json:"podIPs,omitempty" protobuf:"bytes,12,rep,name=podIPs"`
	} `json:"status,omitempty" protobuf:"bytes,3,opt,name=status"`
}

func (p *podSlimAll) DeepCopyObject() runtime.Object { c := *p; return &c }
