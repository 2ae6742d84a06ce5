package main

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"

	"github.com/ginformer/ginformer/informer"
	"github.com/ginformer/ginformer/source/k8s"
)

// podSlim is what a typical pod controller reads: the metadata (labels,
// owners), the node, the phase and the containers' names and images. The
// tags are those of k8s.io/api's Pod.
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

// DeepCopyObject makes podSlim a runtime.Object.
func (p *podSlim) DeepCopyObject() runtime.Object {
	c := *p
	p.ObjectMeta.DeepCopyInto(&c.ObjectMeta)
	c.Spec.Containers = append(c.Spec.Containers[:0:0], p.Spec.Containers...)
	return &c
}

// newProjectionInformer is the ginformer informer of newInformer over
// podSlim (k8s.NewProjection) instead of *corev1.Pod.
func newProjectionInformer(ctx context.Context, cs *kubernetes.Clientset, c *counter) (start func(), wait func(context.Context) error, keep any, err error) {
	src, err := k8s.NewProjection[podSlim](cs.CoreV1().Pods(""), k8s.Options{})
	if err != nil {
		return nil, nil, nil, err
	}
	inf, err := informer.NewSharedInformer(informer.Options[informer.NamespacedKey, *podSlim]{
		Source:  src,
		KeyFunc: k8s.Key[*podSlim],
		Indexes: []informer.Index[*podSlim]{
			k8s.NamespaceIndex[*podSlim](),
			k8s.FieldIndex("node", func(p *podSlim) string { return p.Spec.NodeName }),
		},
	})
	if err != nil {
		return nil, nil, nil, err
	}
	reg, err := inf.AddHandler(informer.HandlerFuncs[informer.NamespacedKey, *podSlim]{
		AddFunc:    func(p *podSlim, _ bool) { c.addFields(p.Spec.NodeName, p.Labels) },
		UpdateFunc: func(_, p *podSlim) { c.updateFields(p.Spec.NodeName, p.Labels, p.ResourceVersion) },
	}, informer.HandlerOptions{})
	if err != nil {
		return nil, nil, nil, err
	}
	start = func() { go func() { _ = inf.Run(ctx) }() }
	wait = func(ctx context.Context) error { return informer.WaitForSync(ctx, inf, reg) }
	return start, wait, inf, nil
}
