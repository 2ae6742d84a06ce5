package main

import (
	"errors"
	"fmt"
	"os"
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

func TestMain(m *testing.M) {
	var err error
	env, err = k8stest.Start(k8stest.Config{})
	if err != nil && !errors.Is(err, k8stest.ErrNoAssets) {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	code := m.Run()
	if env != nil {
		env.Stop()
	}
	os.Exit(code)
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
