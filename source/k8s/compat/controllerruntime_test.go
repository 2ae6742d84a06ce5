package compat_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	toolscache "k8s.io/client-go/tools/cache"
	ctrl "sigs.k8s.io/controller-runtime"
	crcache "sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/ginformer/ginformer/source/k8s/compat"
	"github.com/ginformer/ginformer/source/k8s/k8stest"
)

// controllerRuns numbers the test's runs (see the controller name).
var controllerRuns atomic.Int64

// TestControllerRuntime runs a controller-runtime manager whose informers
// are compat informers (cache.Options.NewInformer) against a real
// kube-apiserver: a reconciler copies each ConfigMap's "want" key to a
// "seen" annotation, reading through the manager's cache, including a
// field index.
func TestControllerRuntime(t *testing.T) {
	env, err := k8stest.Start(k8stest.Config{})
	if errors.Is(err, k8stest.ErrNoAssets) {
		t.Skip(err)
	}
	require.NoError(t, err)
	defer env.Stop()
	ns := env.Namespace(t)

	var mu sync.Mutex
	built := 0
	mgr, err := ctrl.NewManager(env.Config, ctrl.Options{
		Metrics:                server.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		Cache: crcache.Options{
			DefaultNamespaces: map[string]crcache.Config{ns: {}},
			NewInformer: func(lw toolscache.ListerWatcher, obj runtime.Object, resync time.Duration, idx toolscache.Indexers) toolscache.SharedIndexInformer {
				mu.Lock()
				built++
				mu.Unlock()
				return compat.NewSharedIndexInformer(lw, obj, resync, idx)
			},
		},
	})
	require.NoError(t, err)
	require.NoError(t, mgr.GetFieldIndexer().IndexField(t.Context(), &corev1.ConfigMap{}, "data.want", func(o client.Object) []string {
		return []string{o.(*corev1.ConfigMap).Data["want"]}
	}))
	c := mgr.GetClient()
	// Controller names are registered process-wide: a unique one lets the
	// test run more than once (-count).
	runs := controllerRuns.Add(1)
	err = ctrl.NewControllerManagedBy(mgr).Named(fmt.Sprintf("configmap-%d", runs)).For(&corev1.ConfigMap{}).Complete(reconcileFunc(func(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
		var cm corev1.ConfigMap
		if err := c.Get(ctx, req.NamespacedName, &cm); err != nil {
			return ctrl.Result{}, client.IgnoreNotFound(err)
		}
		var same corev1.ConfigMapList
		if err := c.List(ctx, &same, client.InNamespace(req.Namespace), client.MatchingFields{"data.want": cm.Data["want"]}); err != nil {
			return ctrl.Result{}, err
		}
		if cm.Annotations["seen"] == cm.Data["want"] {
			return ctrl.Result{}, nil
		}
		if cm.Annotations == nil {
			cm.Annotations = map[string]string{}
		}
		cm.Annotations["seen"] = cm.Data["want"]
		return ctrl.Result{}, c.Update(ctx, &cm)
	}))
	require.NoError(t, err)

	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { require.NoError(t, mgr.Start(ctx)) })
	defer func() { cancel(); wg.Wait() }()

	cms := env.Client.CoreV1().ConfigMaps(ns)
	_, err = cms.Create(t.Context(), &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "a"}, Data: map[string]string{"want": "1"}}, metav1.CreateOptions{})
	require.NoError(t, err)
	seen := func(v string) func() bool {
		return func() bool {
			cm, err := cms.Get(context.Background(), "a", metav1.GetOptions{})
			return err == nil && cm.Annotations["seen"] == v
		}
	}
	require.Eventually(t, seen("1"), 30*time.Second, 10*time.Millisecond, "reconciled after create")
	cm, err := cms.Get(t.Context(), "a", metav1.GetOptions{})
	require.NoError(t, err)
	cm.Data["want"] = "2"
	_, err = cms.Update(t.Context(), cm, metav1.UpdateOptions{})
	require.NoError(t, err)
	require.Eventually(t, seen("2"), 30*time.Second, 10*time.Millisecond, "reconciled after update")
	mu.Lock()
	require.Positive(t, built, "the manager built its informers with compat")
	mu.Unlock()
}

type reconcileFunc func(context.Context, ctrl.Request) (ctrl.Result, error)

func (f reconcileFunc) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	return f(ctx, req)
}
