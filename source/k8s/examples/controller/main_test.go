package main

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ginformer/ginformer/source/k8s/k8stest"
)

// env is the control plane shared by the tests, nil when
// KUBEBUILDER_ASSETS is unset.
var env *k8stest.Env

// TestMain shares one control plane between the tests and, once it is
// stopped, fails the run on a leaked goroutine (k8stest.Main). No
// goroutine of controller-runtime's is ignored: the example's manager
// stops every one it started.
func TestMain(m *testing.M) {
	k8stest.Main(m, k8stest.MainOptions{Started: func(e *k8stest.Env) { env = e }})
}

// TestRun runs the example's demo against a real kube-apiserver, with each
// controller, and checks the mirrors it leaves.
func TestRun(t *testing.T) {
	if env == nil {
		t.Skip(k8stest.ErrNoAssets)
	}
	for _, tc := range []struct {
		name              string
		controllerRuntime bool
	}{
		{"typed", false},
		{"controller-runtime", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ns := env.Namespace(t)
			var out strings.Builder
			require.NoError(t, run(t.Context(), runConfig{rest: env.Config, namespace: ns, seed: true, controllerRuntime: tc.controllerRuntime, out: &out}))
			require.Equal(t, tc.name+" controller: 1 ConfigMap(s) mirrored in "+ns, strings.SplitN(out.String(), ",", 2)[0])

			cms := env.Client.CoreV1().ConfigMaps(ns)
			a, err := cms.Get(t.Context(), "a"+mirrorSuffix, metav1.GetOptions{})
			require.NoError(t, err)
			require.Equal(t, map[string]string{"greeting": "hello again"}, a.Data, "updated with its source")
			require.Equal(t, "a", a.Labels[mirrorOfLabel])
			for _, gone := range []string{"b", "c", "plain"} { // unlabelled, deleted, never labelled
				_, err := cms.Get(t.Context(), gone+mirrorSuffix, metav1.GetOptions{})
				require.True(t, apierrors.IsNotFound(err), "%s%s: %v", gone, mirrorSuffix, err)
			}
		})
	}
}
