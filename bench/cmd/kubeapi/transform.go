package main

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/cache"
)

// client-go's transforms (-transform): what a client-go user does to cut
// the memory its pod cache keeps.
const (
	// transformStrip drops managedFields, as controller-runtime's
	// cache.TransformStripManagedFields does.
	transformStrip = "strip-managed-fields"
	// transformSlim replaces each pod with a new one holding only what
	// slim.Pod (source/k8s/k8stest/slim) declares, as cilium converts pods
	// to its slim Pod type: the full pod is decoded, then dropped.
	transformSlim = "slim"
)

// clientGoTransform returns the transform named name, nil for "".
func clientGoTransform(name string) (cache.TransformFunc, error) {
	switch name {
	case "":
		return nil, nil
	case transformStrip:
		return func(obj any) (any, error) {
			if p, ok := obj.(*corev1.Pod); ok {
				p.ManagedFields = nil
			}
			return obj, nil
		}, nil
	case transformSlim:
		return func(obj any) (any, error) {
			if p, ok := obj.(*corev1.Pod); ok {
				return slimPod(p), nil
			}
			return obj, nil
		}, nil
	}
	return nil, fmt.Errorf("unknown transform %q (want %s or %s)", name, transformStrip, transformSlim)
}

// slimPod returns a new pod with p's metadata (without managedFields), its
// node, its containers' names and images, and its phase: slim.Pod's fields.
func slimPod(p *corev1.Pod) *corev1.Pod {
	s := &corev1.Pod{TypeMeta: p.TypeMeta, ObjectMeta: p.ObjectMeta}
	s.ManagedFields = nil
	s.Spec.NodeName = p.Spec.NodeName
	s.Spec.Containers = make([]corev1.Container, len(p.Spec.Containers))
	for i, c := range p.Spec.Containers {
		s.Spec.Containers[i] = corev1.Container{Name: c.Name, Image: c.Image}
	}
	s.Status.Phase = p.Status.Phase
	return s
}
