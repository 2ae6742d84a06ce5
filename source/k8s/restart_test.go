package k8s_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ginformer/ginformer/informer"
	"github.com/ginformer/ginformer/source/k8s"
	"github.com/ginformer/ginformer/source/k8s/k8stest"
)

// TestAPIServerRestart: kube-apiserver stops mid-watch and comes back on
// the same address (etcd keeps running). Requests fail as transient
// meanwhile; the informer reconnects and catches up with the writes made
// after the restart. It has its own control plane so the other tests are not
// disturbed.
func TestAPIServerRestart(t *testing.T) {
	needEnv(t)
	own, err := k8stest.Start(k8stest.Config{APIServerArgs: map[string][]string{
		"request-timeout":                         {"5s"},
		"shutdown-watch-termination-grace-period": {"1s"},
	}})
	require.NoError(t, err)
	defer own.Stop()
	ns := own.Namespace(t)
	c := own.Client.CoreV1().ConfigMaps(ns)
	create := func(name string) {
		_, err := c.Create(t.Context(), &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
		require.NoError(t, err)
	}
	create("before")
	src, err := k8s.New(c, cmItems, k8s.Options{})
	require.NoError(t, err)
	inf, _ := startInformer[*corev1.ConfigMap](t, src, informer.ListWatchOptions{})
	require.Equal(t, 1, inf.Lister().Len())

	require.NoError(t, own.StopAPIServer())
	// The server is gone: requests (and the informer's re-watch) are
	// refused, which the source classifies as transient.
	_, err = src.List(t.Context(), informer.ListOptions{})
	require.ErrorIs(t, err, informer.ErrTransient)
	require.NoError(t, own.StartAPIServer())
	ctx, cancel := context.WithTimeout(t.Context(), waitFor)
	defer cancel()
	for { // the restarted server may take a moment to serve writes
		_, err = c.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "after"}}, metav1.CreateOptions{})
		if err == nil || ctx.Err() != nil {
			break
		}
	}
	require.NoError(t, err)
	eventually(t, inf.Lister(), hasLen[*corev1.ConfigMap](2), "a write after the restart")
}
