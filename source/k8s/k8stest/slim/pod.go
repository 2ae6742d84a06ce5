// Package slim declares the slim pod that the tests and benchmarks of
// projections decode into ([github.com/ginformer/ginformer/source/k8s.NewProjection]).
// It imports only k8s.io/api and k8s.io/apimachinery, so the decoder's own
// tests (and their fuzzing builds) can use it without building the test
// control plane of package k8stest.
package slim

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// Pod is what a typical pod controller reads of a pod: the metadata
// (labels, owners), the node, the phase and the containers' names and
// images. The tags are those of k8s.io/api's Pod, so a Pod decodes from a
// Pod's protobuf or JSON. Its zero value is an empty pod.
type Pod struct {
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

// DeepCopyObject makes *Pod a runtime.Object: it returns a copy that
// shares nothing mutable with p.
func (p *Pod) DeepCopyObject() runtime.Object {
	c := *p
	p.ObjectMeta.DeepCopyInto(&c.ObjectMeta)
	c.Spec.Containers = append(c.Spec.Containers[:0:0], p.Spec.Containers...)
	return &c
}
