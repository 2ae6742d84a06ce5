package main

import (
	"context"
	"log/slog"
	"os"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	crcache "sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/ginformer/ginformer/source/k8s/compat"
)

// runControllerRuntime runs the same reconcile function as a
// controller-runtime controller whose manager builds its informers with
// compat.NewSharedIndexInformer: the cache, restricted to the labelled
// ConfigMaps of ns, runs on ginformer. It blocks until ctx is done and the
// manager has stopped.
func runControllerRuntime(ctx context.Context, rc *rest.Config, ns string, rec reconcileFunc) error {
	logger := logr.FromSlogHandler(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	ctrl.SetLogger(logger)     // controller-runtime complains when its global logger is never set
	skipNameValidation := true // controller names are process-wide; the test runs this more than once
	mgr, err := ctrl.NewManager(rc, ctrl.Options{
		Logger:                 logger,
		Metrics:                server.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		Controller:             config.Controller{SkipNameValidation: &skipNameValidation},
		Cache: crcache.Options{
			DefaultNamespaces: map[string]crcache.Config{ns: {}},
			ByObject: map[client.Object]crcache.ByObject{
				&corev1.ConfigMap{}: {Label: labels.SelectorFromSet(labels.Set{sourceLabel: "true"})},
			},
			NewInformer: compat.NewSharedIndexInformer,
		},
	})
	if err != nil {
		return err
	}
	c := mgr.GetClient() // reads from the compat-backed cache
	err = ctrl.NewControllerManagedBy(mgr).Named("configmap-mirror").For(&corev1.ConfigMap{}).
		Complete(reconcile.Func(func(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
			var cm corev1.ConfigMap
			switch err := c.Get(ctx, req.NamespacedName, &cm); {
			case apierrors.IsNotFound(err): // deleted or unlabelled
				return reconcile.Result{}, rec(ctx, req.Name, nil)
			case err != nil:
				return reconcile.Result{}, err
			}
			return reconcile.Result{}, rec(ctx, req.Name, &cm)
		}))
	if err != nil {
		return err
	}
	return mgr.Start(ctx)
}
