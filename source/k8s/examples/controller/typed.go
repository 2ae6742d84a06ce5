package main

import (
	"context"
	"errors"
	"sync"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/ginformer/ginformer/informer"
	"github.com/ginformer/ginformer/source/k8s"
	"github.com/ginformer/ginformer/workqueue"
)

// runTyped runs the mirror controller on ginformer's own pieces: a
// Kubernetes source restricted to the labelled ConfigMaps of ns, a typed
// informer, and a workqueue.Controller fed by it, whose reconcile reads the
// source from the informer's Lister. It blocks until ctx is done and
// everything it started has returned.
func runTyped(ctx context.Context, client kubernetes.Interface, ns string, rec reconcileFunc) error {
	src, err := k8s.New(client.CoreV1().ConfigMaps(ns), func(l *corev1.ConfigMapList) []corev1.ConfigMap { return l.Items },
		k8s.Options{LabelSelector: sourceLabel + "=true"})
	if err != nil {
		return err
	}
	inf, err := informer.NewSharedInformer(informer.Options[informer.NamespacedKey, *corev1.ConfigMap]{
		Source:    src,
		KeyFunc:   k8s.Key[*corev1.ConfigMap],
		Transform: k8s.StripManagedFields[*corev1.ConfigMap],
	})
	if err != nil {
		return err
	}
	c, err := workqueue.NewController(func(ctx context.Context, key informer.NamespacedKey) error {
		cm, _ := inf.Lister().Get(key) // nil once deleted or unlabelled
		return rec(ctx, key.Name, cm)
	}, workqueue.ControllerOptions{Queue: workqueue.Options{Name: "configmap-mirror"}, Workers: 2})
	if err != nil {
		return err
	}
	reg, err := inf.AddHandler(workqueue.Handler(c.Queue(), k8s.Key[*corev1.ConfigMap]), informer.HandlerOptions{Name: "configmap-mirror"})
	if err != nil {
		return err
	}

	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	var infErr error
	wg.Go(func() { infErr = inf.Run(ctx) })
	if err = informer.WaitForSync(ctx, inf, reg); err == nil {
		err = c.Run(ctx) // until ctx is done
	}
	cancel()
	wg.Wait()
	if errors.Is(err, context.Canceled) {
		err = nil
	}
	return errors.Join(err, infErr)
}
