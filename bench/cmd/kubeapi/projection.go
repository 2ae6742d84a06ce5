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
	return runGinformer(ctx, src, func(p *podSlim) podFields {
		return podFields{node: p.Spec.NodeName, labels: p.Labels, rv: p.ResourceVersion}
	}, c)
}

// podFields are what the handler and the node index read of a pod.
type podFields struct {
	node   string
	labels map[string]string
	rv     string
}

// runGinformer builds ginformer's informer of newInformer over src, with
// the namespace and node indexes and c as its handler.
func runGinformer[T k8s.Object](ctx context.Context, src informer.Source[T], fields func(T) podFields, c *counter) (start func(), wait func(context.Context) error, keep any, err error) {
	inf, err := informer.NewSharedInformer(informer.Options[informer.NamespacedKey, T]{
		Source:  src,
		KeyFunc: k8s.Key[T],
		Logger:  c.log, // zero: the default (errors only)
		Indexes: []informer.Index[T]{
			k8s.NamespaceIndex[T](),
			k8s.FieldIndex("node", func(p T) string { return fields(p).node }),
		},
	})
	if err != nil {
		return nil, nil, nil, err
	}
	reg, err := inf.AddHandler(informer.HandlerFuncs[informer.NamespacedKey, T]{
		AddFunc: func(p T, _ bool) {
			f := fields(p)
			c.addFields(f.node, f.labels)
		},
		UpdateFunc: func(_, p T) {
			f := fields(p)
			c.updateFields(f.node, f.labels, f.rv)
		},
	}, informer.HandlerOptions{})
	if err != nil {
		return nil, nil, nil, err
	}
	if sh, ok := src.(interface{ Sharing() k8s.SharingStats }); ok {
		c.lookups = func() uint64 { st := sh.Sharing(); return st.Hits + st.Misses }
	}
	start = func() { go func() { _ = inf.Run(ctx) }() }
	wait = func(ctx context.Context) error { return informer.WaitForSync(ctx, inf, reg) }
	return start, wait, inf, nil
}
