package k8s_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/tools/cache"

	"github.com/ginformer/ginformer/informer"
	"github.com/ginformer/ginformer/source/k8s"
)

// Every source over a client-go REST client declares client-go's HTTP/2
// health check (ReadIdleTimeout 30 s + PingTimeout 15 s) as its liveness
// bound; one over a ListerWatcher it cannot see declares none.
func TestLivenessBound(t *testing.T) {
	e := needEnv(t)
	const want = 45 * time.Second
	cs, err := kubernetes.NewForConfig(e.Config)
	require.NoError(t, err)
	dyn, err := dynamic.NewForConfig(e.Config)
	require.NoError(t, err)
	meta, err := metadata.NewForConfig(e.Config)
	require.NoError(t, err)
	pods := schema.GroupVersionResource{Version: "v1", Resource: "pods"}

	typed, err := k8s.New(cs.CoreV1().Pods(""), func(l *corev1.PodList) []corev1.Pod { return l.Items }, k8s.Options{})
	require.NoError(t, err)
	undecoded, err := k8s.New(cs.CoreV1().Pods(""), func(l *corev1.PodList) []corev1.Pod { return l.Items }, k8s.Options{DisableDecoding: true})
	require.NoError(t, err)
	byConfig, err := k8s.NewForConfig[corev1.Pod](e.Config, pods, "", k8s.Options{})
	require.NoError(t, err)
	dsrc, err := k8s.NewDynamic(dyn.Resource(pods), k8s.Options{})
	require.NoError(t, err)
	msrc, err := k8s.NewMetadata(meta.Resource(pods), k8s.Options{})
	require.NoError(t, err)
	for name, b := range map[string]informer.LivenessBounder{
		"typed": typed, "typed, DisableDecoding": undecoded, "NewForConfig": byConfig, "dynamic": dsrc, "metadata": msrc,
	} {
		require.Equal(t, want, b.LivenessBound(), name)
	}
	lw, err := k8s.NewFromListerWatcher(&cache.ListWatch{}, k8s.Options{})
	require.NoError(t, err)
	require.Zero(t, lw.LivenessBound(), "a ListerWatcher's transport is not visible")
}
