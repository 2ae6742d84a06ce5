package main

import (
	"context"

	"k8s.io/client-go/kubernetes"

	"github.com/ginformer/ginformer/informer"
	"github.com/ginformer/ginformer/source/k8s"
	"github.com/ginformer/ginformer/source/k8s/k8stest/slim"
)

// newProjectionInformer is the ginformer informer of newInformer over
// slim.Pod (k8s.NewProjection) instead of *corev1.Pod.
func newProjectionInformer(ctx context.Context, cs *kubernetes.Clientset, c *counter) (start func(), wait func(context.Context) error, keep any, err error) {
	src, err := k8s.NewProjection[slim.Pod](cs.CoreV1().Pods(""), k8s.Options{})
	if err != nil {
		return nil, nil, nil, err
	}
	return runGinformer(ctx, src, func(p *slim.Pod) podFields {
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
